"""The C++ rendering of one library function: its Python source read with ``ast``, type-checked
on the way (the rules are in ``_dsl.py``) and written as C++ (``FnRenderer``); the library's tables
(``Tables``); literals in C99 hex. ``_cpp.py`` assembles the header from these."""
from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap

import numpy as np

from . import _dsl
from ._dsl import C_TYPES, FLOAT_TYPES, INT_BITS, REGISTRY, Table

__all__ = ["DslError", "signature", "C_TYPES", "FnRenderer", "Tables", "ctype", "function_ast"]


class DslError(TypeError):
    """A library function breaks a rule of the description language."""


_CPP_WORDS = set("""auto bool break case char class const continue default delete do double else enum extern
float for goto if inline int long new operator private protected public register return short signed sizeof
static struct switch template this throw try typedef union unsigned using virtual void volatile while
and or not xor bitand bitor compl true false nullptr""".split())
_CONV = {"f64", "f32", "i64", "u64", "i32", "u32", "u16", "u8"}
_COMPUTE_INTS = ("i64", "u64")
_SUFFIX = {"f64": "d", "f32": "f"}


def ctype(t):
    if isinstance(t, tuple):
        return "gpm_t_" + "_".join(t)
    return C_TYPES[t]


def _parse_type(node, where):
    if isinstance(node, ast.Name) and node.id in C_TYPES:
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _parse_type(ast.parse(node.value, mode="eval").body, where)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "tuple":
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return tuple(_parse_type(e, where) for e in elts)
    raise DslError(f"{where}: unknown type annotation {ast.unparse(node)}")


@functools.lru_cache(maxsize=None)
def function_ast(name):
    fn = REGISTRY[name].fn
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src)
    fdef = tree.body[0]
    assert isinstance(fdef, ast.FunctionDef)
    return fdef


@functools.lru_cache(maxsize=None)
def signature(name):
    """(parameter names, parameter types, return type) of a library function."""
    fdef = function_ast(name)
    if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs or fdef.args.defaults:
        raise DslError(f"{name}: plain positional parameters only")
    names = [a.arg for a in fdef.args.args]
    types_ = []
    for a in fdef.args.args:
        if a.annotation is None:
            raise DslError(f"{name}: parameter {a.arg} needs a type")
        types_.append(_parse_type(a.annotation, name))
    if fdef.returns is None:
        raise DslError(f"{name}: needs a return type")
    return tuple(names), tuple(types_), _parse_type(fdef.returns, name)


# --------------------------------------------------------------------------------------------
# Literals

def _f64_literal(v: float) -> str:
    if math.isnan(v):
        return "gpm_as_f64(0x7ff8000000000000ULL)"
    if math.isinf(v):
        return "gpm_as_f64(0x7ff0000000000000ULL)" if v > 0 else "gpm_as_f64(0xfff0000000000000ULL)"
    return float.hex(v) if not (v < 0 or (v == 0 and math.copysign(1, v) < 0)) else f"(-{float.hex(-v)})"


def _f32_literal(v: float, where) -> str:
    if math.isnan(v):
        return "gpm_as_f32(0x7fc00000U)"
    if math.isinf(v):
        return "gpm_as_f32(0x7f800000U)" if v > 0 else "gpm_as_f32(0xff800000U)"
    if float(np.float32(v)) != v:
        raise DslError(f"{where}: f32 literal {v!r} is not exact in binary32")
    neg = v < 0 or (v == 0 and math.copysign(1, v) < 0)
    return f"(-{float.hex(-v)}f)" if neg else f"{float.hex(v)}f"


def _int_literal(v: int, t: str, where) -> str:
    bits = INT_BITS[t]
    signed = _dsl.SIGNED[t]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= v <= hi:
        raise DslError(f"{where}: {v} does not fit {t}")
    if t == "i64":
        if v == lo:
            return "(-0x7fffffffffffffffLL - 1)"
        return f"{v}LL" if v >= 0 else f"(-{-v}LL)"
    if t == "u64":
        return f"{v:#x}ULL"
    if t == "i32":
        if v == lo:
            return "(-0x7fffffff - 1)"
        return f"{v}" if v >= 0 else f"(-{-v})"
    return f"(({C_TYPES[t]}){v:#x}U)"


def _const_value(node, glb):
    """The Python number a literal expression (a number, a global constant, -const) stands for."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in glb:
        v = glb[node.id]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const_value(node.operand, glb)
        if v is not None:
            return -v
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
        # an element of a module-level tuple of numbers (a coefficient list), by a constant index
        t = glb.get(node.value.id)
        if type(t) is tuple and isinstance(node.slice.value, int) and not isinstance(node.slice.value, bool):
            v = t[node.slice.value]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return v
    return None


# --------------------------------------------------------------------------------------------
# One function

_BINOP = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitAnd: "&", ast.BitOr: "|",
          ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_FLOAT_FN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_UNARY_PRIMS = ("sqrt", "fabs", "floor", "ceil", "trunc", "rint")
_BITCASTS = {"as_u64": (("f64",), "u64"), "as_i64": (("f64",), "i64"), "as_f64": (("u64", "i64"), "f64"),
             "as_u32": (("f32",), "u32"), "as_i32": (("f32",), "i32"), "as_f32": (("u32", "i32"), "f32")}


class FnRenderer:
    def __init__(self, name, tables):
        self.name = name
        self.fdef = function_ast(name)
        self.glb = REGISTRY[name].fn.__globals__
        self.params, self.ptypes, self.rtype = signature(name)
        self.vars = dict(zip(self.params, self.ptypes))
        self.temps = {}
        self.tables = tables
        self.callees = set()

    def err(self, node, msg):
        line = getattr(node, "lineno", 0)
        first = REGISTRY[self.name].fn.__code__.co_firstlineno
        raise DslError(f"{self.name} (line {first + line - 1}): {msg}: {ast.unparse(node)}")

    # ---- expressions: (code, type)
    def expr(self, node, want=None):
        v = _const_value(node, self.glb)
        if v is not None:
            if isinstance(v, float):
                if want not in (None, "f64"):
                    self.err(node, f"a bare float literal is f64, here {want} is needed: write {want}(...)")
                return _f64_literal(v), "f64"
            if want not in (None, "i64"):
                self.err(node, f"a bare int literal is i64, here {want} is needed: write {want}(...)")
            return _int_literal(v, "i64", self.name), "i64"
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return ("true" if node.value else "false"), "bool"
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                return node.id, self.vars[node.id]
            g = self.glb.get(node.id)
            if isinstance(g, bool):
                return ("true" if g else "false"), "bool"
            self.err(node, "unknown name (locals, constants and tables only)")
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                c, t = self.expr(node.operand)
                if t != "bool":
                    self.err(node, "not on a non-bool")
                return f"(!{c})", "bool"
            c, t = self.expr(node.operand, want)
            if isinstance(node.op, ast.USub):
                if t == "bool" or isinstance(t, tuple):
                    self.err(node, "unary minus")
                if t in INT_BITS and t not in _COMPUTE_INTS:
                    self.err(node, f"no arithmetic on {t}")
                return f"(-{c})", t
            if isinstance(node.op, ast.Invert):
                if t not in _COMPUTE_INTS:
                    self.err(node, "~ on i64/u64 only")
                return f"(~{c})", t
            self.err(node, "operator")
        if isinstance(node, ast.BinOp):
            op = type(node.op)
            if op not in _BINOP:
                self.err(node, "operator not in the language")
            (lc, lt), (rc, rt) = self._operand_pair(node, node.left, node.right, want)
            if lt != rt:
                self.err(node, f"operands of different types {lt} and {rt}")
            t = lt
            if t in FLOAT_TYPES:
                if op not in _FLOAT_FN:
                    self.err(node, "bit operation on a float")
                return f"gpm_{_FLOAT_FN[op]}_{_SUFFIX[t]}({lc}, {rc})", t
            if t == "bool":
                if op not in (ast.BitAnd, ast.BitOr, ast.BitXor):
                    self.err(node, "arithmetic on bool")
                return f"(({lc}) {_BINOP[op]} ({rc}))", "bool"
            if t not in _COMPUTE_INTS:
                self.err(node, f"no arithmetic on {t} (convert to i64/u64 first)")
            if op is ast.Div:
                self.err(node, "integer division is not in the language")
            return f"({lc} {_BINOP[op]} {rc})", t
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                self.err(node, "one comparison per expression")
            (lc, lt), (rc, rt) = self._operand_pair(node, node.left, node.comparators[0], None)
            if lt != rt:
                self.err(node, f"comparison of {lt} with {rt}")
            if lt == "bool" or isinstance(lt, tuple):
                self.err(node, "comparison of bools")
            # comparisons keep their meaning under Numba's widening of narrow integers: all allowed
            return f"({lc} {_CMP[type(node.ops[0])]} {rc})", "bool"
        if isinstance(node, ast.BoolOp):
            parts = []
            for v in node.values:
                c, t = self.expr(v)
                if t != "bool":
                    self.err(node, "and/or on a non-bool")
                parts.append(c)
            j = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + j.join(parts) + ")", "bool"
        if isinstance(node, ast.Call):
            return self.call(node, want)
        if isinstance(node, ast.Subscript):
            if not isinstance(node.value, ast.Name) or not isinstance(self.glb.get(node.value.id), Table):
                self.err(node, "only module-level Tables can be indexed")
            tbl = self.glb[node.value.id]
            ic, it = self.expr(node.slice, "i64")
            if it != "i64":
                self.err(node, "a Table index is an i64")
            cname = self.tables.add(self.glb["__name__"], node.value.id, tbl)
            return f"GPM_TBL({cname})[{ic}]", tbl.type_name
        self.err(node, "expression not in the language")

    def _operand_pair(self, node, a, b, want):
        """Render two operands; a bare literal is checked against the other operand's type."""
        ka, kb = _const_value(a, self.glb), _const_value(b, self.glb)
        if ka is not None and kb is None:
            rb = self.expr(b, want)
            ra = self.expr(a, rb[1] if isinstance(rb[1], str) else None)
            return ra, rb
        ra = self.expr(a, want)
        rb = self.expr(b, ra[1] if isinstance(ra[1], str) else None)
        return ra, rb

    def call(self, node, want):
        if not isinstance(node.func, ast.Name) or node.keywords:
            self.err(node, "calls are to named functions with positional arguments")
        f = node.func.id
        args = node.args
        if f in _CONV:
            if len(args) != 1:
                self.err(node, "one argument")
            v = _const_value(args[0], self.glb)
            if v is not None:
                if f == "f64":
                    return _f64_literal(float(v)), "f64"
                if f == "f32":
                    return _f32_literal(float(v), self.name), "f32"
                if isinstance(v, float):
                    self.err(node, "an int type from a float literal")
                return _int_literal(v, f, self.name), f
            c, t = self.expr(args[0])
            if t == "bool" or isinstance(t, tuple):
                self.err(node, f"conversion from {t}")
            if t == f:
                return c, t
            return f"(({C_TYPES[f]})({c}))", f
        if f in _UNARY_PRIMS:
            if len(args) != 1:
                self.err(node, "one argument")
            c, t = self.expr(args[0], want)
            if t not in FLOAT_TYPES:
                self.err(node, f"{f} of a non-float")
            return f"gpm_{f}_{_SUFFIX[t]}({c})", t
        if f == "copysign":
            (ac, at), (bc, bt) = self._operand_pair(node, args[0], args[1], want)
            if at != bt or at not in FLOAT_TYPES:
                self.err(node, "copysign of two floats of one type")
            return f"gpm_copysign_{_SUFFIX[at]}({ac}, {bc})", at
        if f == "fma":
            if len(args) != 3:
                self.err(node, "three arguments")
            rs = [self.expr(a, want) for a in args]
            ts = {t for _, t in rs}
            if len(ts) != 1 or next(iter(ts)) not in FLOAT_TYPES:
                self.err(node, "fma of three floats of one type")
            t = rs[0][1]
            return f"gpm_fma_{_SUFFIX[t]}({rs[0][0]}, {rs[1][0]}, {rs[2][0]})", t
        if f == "select":
            if len(args) != 3:
                self.err(node, "three arguments")
            cc, ct = self.expr(args[0])
            if ct != "bool":
                self.err(node, "select's condition is a bool")
            (ac, at), (bc, bt) = self._operand_pair(node, args[1], args[2], want)
            if at != bt or isinstance(at, tuple):
                self.err(node, f"select of {at} and {bt}")
            return f"({cc} ? {ac} : {bc})", at
        if f in _BITCASTS:
            srcs, dst = _BITCASTS[f]
            c, t = self.expr(args[0])
            if t not in srcs:
                self.err(node, f"{f} of {t}")
            return f"gpm_{f}({c})", dst
        if f in REGISTRY:
            names, ptypes, rtype = signature(f)
            if len(args) != len(ptypes):
                self.err(node, f"{f} takes {len(ptypes)} arguments")
            cs = []
            for a, pt in zip(args, ptypes):
                c, t = self.expr(a, pt)
                if t != pt:
                    self.err(node, f"argument of type {t} where {f} takes {pt}")
                cs.append(c)
            self.callees.add(f)
            return f"{f}({', '.join(cs)})", rtype
        self.err(node, "call to a function outside the library")

    # ---- statements
    def assign(self, name, t, node):
        if name in self.vars:
            if self.vars[name] != t:
                self.err(node, f"{name} was {self.vars[name]}, now {t}")
        else:
            if not name.isidentifier() or name.startswith("gpm_") or name in _CPP_WORDS:
                self.err(node, "variable name")
            self.vars[name] = t

    def stmts(self, body, ind):
        out = []
        for s in body:
            out.extend(self.stmt(s, ind))
        return out

    def stmt(self, s, ind):
        pad = "    " * ind
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return []
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            if isinstance(s, ast.Assign):
                if len(s.targets) != 1:
                    self.err(s, "one target")
                target = s.targets[0]
                want = self.vars.get(target.id) if isinstance(target, ast.Name) else None
            else:
                target = s.target
                want = _parse_type(s.annotation, self.name)
                if s.value is None:
                    self.err(s, "annotated without a value")
            if isinstance(target, ast.Tuple):
                c, t = self.expr(s.value)
                if not isinstance(t, tuple) or len(t) != len(target.elts):
                    self.err(s, "tuple assignment from a call returning as many values")
                tmp = f"gpm__t{len(self.temps)}"
                self.temps[tmp] = t
                lines = [f"{pad}{tmp} = {c};"]
                for k, (e, et) in enumerate(zip(target.elts, t)):
                    if not isinstance(e, ast.Name):
                        self.err(s, "assign to names")
                    self.assign(e.id, et, s)
                    lines.append(f"{pad}{e.id} = {tmp}.v{k};")
                return lines
            if not isinstance(target, ast.Name):
                self.err(s, "assign to a name")
            c, t = self.expr(s.value, want)
            if isinstance(t, tuple):
                self.err(s, "a tuple is unpacked into names")
            if want is not None and t != want:
                self.err(s, f"value of type {t} where {want} is needed")
            self.assign(target.id, t, s)
            return [f"{pad}{target.id} = {c};"]
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name) or s.target.id not in self.vars:
                self.err(s, "augmented assignment to a known name")
            fake = ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()), op=s.op, right=s.value)
            ast.copy_location(fake, s)
            c, t = self.expr(fake)
            if t != self.vars[s.target.id]:
                self.err(s, "type change")
            return [f"{pad}{s.target.id} = {c};"]
        if isinstance(s, ast.Return):
            if s.value is None:
                self.err(s, "return a value")
            if isinstance(s.value, ast.Tuple):
                if not isinstance(self.rtype, tuple) or len(self.rtype) != len(s.value.elts):
                    self.err(s, "returns a tuple")
                cs = []
                for e, et in zip(s.value.elts, self.rtype):
                    c, t = self.expr(e, et)
                    if t != et:
                        self.err(s, f"returns {t} where {et} is declared")
                    cs.append(c)
                return [f"{pad}return {ctype(self.rtype)}{{{', '.join(cs)}}};"]
            c, t = self.expr(s.value, self.rtype if not isinstance(self.rtype, tuple) else None)
            if t != self.rtype:
                self.err(s, f"returns {t} where {self.rtype} is declared")
            return [f"{pad}return {c};"]
        if isinstance(s, ast.If):
            c, t = self.expr(s.test)
            if t != "bool":
                self.err(s, "if on a non-bool")
            lines = [f"{pad}if ({c}) {{"] + self.stmts(s.body, ind + 1)
            if s.orelse:
                lines.append(f"{pad}}} else {{")
                lines += self.stmts(s.orelse, ind + 1)
            lines.append(f"{pad}}}")
            return lines
        if isinstance(s, ast.For):
            it = s.iter
            if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                    and it.func.id == "range" and 1 <= len(it.args) <= 2) or s.orelse:
                self.err(s, "for NAME in range(a, b) only")
            bounds = [self.expr(a, "i64") for a in it.args]
            if any(t != "i64" for _, t in bounds):
                self.err(s, "range bounds are i64")
            lo, hi = (("0LL", bounds[0][0]) if len(bounds) == 1 else (bounds[0][0], bounds[1][0]))
            self.assign(s.target.id, "i64", s)
            v = s.target.id
            return [f"{pad}for ({v} = {lo}; {v} < {hi}; {v} = {v} + 1LL) {{"] + self.stmts(s.body, ind + 1) + \
                [f"{pad}}}"]
        self.err(s, "statement not in the language")

    def render(self):
        body = self.stmts(self.fdef.body, 1)
        decl = []
        for v, t in list(self.vars.items()):
            if v not in self.params:
                decl.append(f"    {ctype(t)} {v};")
        for v, t in self.temps.items():
            decl.append(f"    {ctype(t)} {v};")
        head = self.prototype()
        return head + " {\n" + "\n".join(decl + body) + "\n}\n"

    def prototype(self):
        ps = ", ".join(f"{ctype(t)} {n}" for n, t in zip(self.params, self.ptypes))
        return f"GPM_HD {ctype(self.rtype)} {self.name}({ps})"


class Tables:
    def __init__(self):
        self.items = {}

    def add(self, module, name, tbl):
        cname = "gpm_tbl_" + module.rsplit(".", 1)[-1].strip("_") + "_" + name
        self.items[cname] = tbl
        return cname

    def render(self):
        out = []
        for cname, tbl in self.items.items():
            ct = C_TYPES[tbl.type_name]
            if tbl.type_name == "f64":
                vals = [_f64_literal(float(v)) for v in tbl]
            elif tbl.type_name == "f32":
                vals = [_f32_literal(float(v), cname) for v in tbl]
            else:
                vals = [_int_literal(int(v), tbl.type_name, cname) for v in tbl]
            body = ",\n    ".join(", ".join(vals[i:i + 4]) for i in range(0, len(vals), 4))
            out.append("#if defined(__CUDACC__) || defined(__CUDACC_RTC__)\n"
                       f"static __device__ const {ct} {cname}_d[{len(vals)}] = {{\n    {body}}};\n#endif\n"
                       "#if !defined(__CUDACC_RTC__)\n"
                       f"static const {ct} {cname}_h[{len(vals)}] = {{\n    {body}}};\n#endif\n")
        return "\n".join(out)
