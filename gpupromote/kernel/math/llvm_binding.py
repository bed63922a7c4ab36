"""The straight-line functions as LLVM instructions written into the caller: the CPU kernels' fast compile.

A kernel calling ``gpm_exp_f32`` used to get the flattened function's statements (``_flatten.py``)
written into its loop, which Numba then typed and lowered one statement at a time: about 35 ms of a
cold gp.exp(float32) kernel's 100. ``intrinsic_for(name)`` is a Numba ``@intrinsic`` instead: the
kernel's source holds one call, Numba types one call, and its codegen walks the flattened
function's AST and emits each operation with llvmlite, in the caller's block.

The instructions are the ones Numba's lowering gives the flattened text (the test is
tests/kernel/math/test_llvm_binding.py, bit for bit on every straight-line function):
``+ - * /`` fadd fsub fmul fdiv (no fast-math flags); unary minus ``fsub -0.0, x`` (Numba's
``negate_real``); ``< <= > >= ==`` ordered comparisons and ``!=`` unordered; ``nsw`` on i64
``+ - *``; ``>>`` ashr on i64, lshr on u64; the primitives as numba_binding maps them (llvm.fma,
llvm.rint, select, bitcast ...); conversions as Numba casts numpy scalars (fpext, fptrunc, sitofp
or uitofp by the source's sign, fptosi or fptoui by the target's, trunc, sext or zext by the
source's sign); Tables as internal constant arrays.
"""
from __future__ import annotations

import ast
import functools

from llvmlite import ir
from numba import types
from numba.core import cgutils

from ._cpp_render import signature
from ._dsl import SIGNED, Table
from ._flatten import INTRINSIC_PREFIX, flat_source, is_straight
from .numba_binding import HARDWARE_HALF, intrinsic_of_arity, round_f16

__all__ = ["intrinsic_for", "kernel_intrinsics", "INTRINSIC_PREFIX"]

_LL = {"f64": ir.DoubleType(), "f32": ir.FloatType(), "i64": ir.IntType(64), "u64": ir.IntType(64),
       "i32": ir.IntType(32), "u32": ir.IntType(32), "u16": ir.IntType(16), "u8": ir.IntType(8),
       "bool": ir.IntType(1)}
_NB = {"f64": types.float64, "f32": types.float32, "i64": types.int64, "u64": types.uint64, "i32": types.int32,
       "u32": types.uint32, "u16": types.uint16, "u8": types.uint8, "bool": types.boolean}
_FLOATS = ("f64", "f32")
_BITS = {"f64": 64, "f32": 32, "i64": 64, "u64": 64, "i32": 32, "u32": 32, "u16": 16, "u8": 8}
_FLOAT_OP = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv"}
_INT_OP = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.BitAnd: "and_", ast.BitOr: "or_",
           ast.BitXor: "xor", ast.LShift: "shl"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_INTRINSICS = {"fma": "llvm.fma", "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor",
               "ceil": "llvm.ceil", "trunc": "llvm.trunc", "rint": "llvm.rint", "copysign": "llvm.copysign"}
_BITCASTS = {"as_u64": "u64", "as_i64": "i64", "as_f64": "f64", "as_u32": "u32", "as_i32": "i32", "as_f32": "f32"}


@functools.lru_cache(maxsize=None)
def _flat_function(name):
    """(parameter names, statements, return expression, module-level values) of the flattened text."""
    text, values = flat_source(name, native=HARDWARE_HALF)
    fdef = ast.parse(text).body[0]
    return [a.arg for a in fdef.args.args], fdef.body[:-1], fdef.body[-1].value, values


class _Emitter:
    """Writes one flattened function's operations with ``builder``; ``env``: name -> (value, type)."""

    def __init__(self, builder, values, env):
        self.b = builder
        self.values = values
        self.env = env

    # ---- literals and names
    def _number(self, node):
        """The number a literal expression stands for (as _cpp_render._const_value reads it), or None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id not in self.env:
            v = self.values.get(node.id)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self._number(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            t = self.values.get(node.value.id)
            if type(t) is tuple:
                v = t[node.slice.value]
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return v
        return None

    @staticmethod
    def _constant(v, t):
        if t in _FLOATS:
            return ir.Constant(_LL[t], float(v))
        return ir.Constant(_LL[t], int(v) & ((1 << _BITS[t]) - 1))

    # ---- expressions: (llvm value, dsl type)
    def expr(self, node):
        v = self._number(node)
        if v is not None:   # a bare literal: float -> f64, int -> i64 (the language's rule)
            t = "f64" if isinstance(v, float) else "i64"
            return self._constant(v, t), t
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return ir.Constant(_LL["bool"], int(node.value)), "bool"
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            g = self.values.get(node.id)
            if isinstance(g, bool):
                return ir.Constant(_LL["bool"], int(g)), "bool"
            raise KeyError(node.id)
        if isinstance(node, ast.UnaryOp):
            x, t = self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return self.b.not_(x), t
            if isinstance(node.op, ast.USub):
                return (self.b.fsub(ir.Constant(x.type, -0.0), x) if t in _FLOATS else self.b.neg(x)), t
            return self.b.not_(x), t                            # ~ on i64 / u64: xor with all ones
        if isinstance(node, ast.BinOp):
            (x, t), (y, _) = self.expr(node.left), self.expr(node.right)
            op = type(node.op)
            if t in _FLOATS:
                return getattr(self.b, _FLOAT_OP[op])(x, y), t
            if op is ast.RShift:
                return (self.b.ashr(x, y) if SIGNED.get(t) else self.b.lshr(x, y)), t
            flags = ["nsw"] if t == "i64" and op in (ast.Add, ast.Sub, ast.Mult) else []
            fn = getattr(self.b, _INT_OP[op])
            return (fn(x, y, flags=flags) if flags else fn(x, y)), t
        if isinstance(node, ast.Compare):
            (x, t), (y, _) = self.expr(node.left), self.expr(node.comparators[0])
            op = _CMP[type(node.ops[0])]
            if t in _FLOATS:
                cmp = self.b.fcmp_unordered if op == "!=" else self.b.fcmp_ordered
            else:
                cmp = self.b.icmp_signed if SIGNED.get(t) else self.b.icmp_unsigned
            return cmp(op, x, y), "bool"
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v)[0] for v in node.values]
            acc = vals[0]
            for v in vals[1:]:
                acc = self.b.and_(acc, v) if isinstance(node.op, ast.And) else self.b.or_(acc, v)
            return acc, "bool"
        if isinstance(node, ast.Subscript):
            return self._table_read(node)
        if isinstance(node, ast.Tuple):
            return tuple(self.expr(e) for e in node.elts), "tuple"
        if isinstance(node, ast.Call):
            return self._call(node)
        raise TypeError(f"not in the language: {ast.unparse(node)}")

    def _table_read(self, node):
        tbl = self.values[node.value.id]
        assert isinstance(tbl, Table), node.value.id
        t = tbl.type_name
        module = self.b.module
        gname = f"_gpm_tbl{node.value.id}"
        gv = module.globals.get(gname)
        if gv is None:
            arr = ir.ArrayType(_LL[t], len(tbl))
            gv = ir.GlobalVariable(module, arr, gname)
            gv.linkage = "internal"
            gv.global_constant = True
            gv.initializer = ir.Constant(arr, [self._constant(v, t) for v in tbl])
        index, _ = self.expr(node.slice)
        ptr = self.b.gep(gv, [ir.Constant(ir.IntType(64), 0), index], inbounds=True)
        return self.b.load(ptr), t

    def _call(self, node):
        f = node.func.id
        if f in _BITS:                                         # a conversion, as Numba casts numpy scalars
            v = self._number(node.args[0])
            if v is not None:
                return self._constant(v, f), f
            x, t = self.expr(node.args[0])
            return self._convert(x, t, f), f
        args = [self.expr(a) for a in node.args]
        if f == "select":
            (c, _), (a, t), (b, _) = args
            return self.b.select(c, a, b), t
        if f == "round_f16":
            return round_f16(self.b, args[0][0]), "f32"
        if f == "round_f16_carried":
            return round_f16(self.b, args[1][0]), "f32"
        if f in _BITCASTS:
            dst = _BITCASTS[f]
            return self.b.bitcast(args[0][0], _LL[dst]), dst
        t = args[0][1]
        name = f"{_INTRINSICS[f]}.{'f64' if t == 'f64' else 'f32'}"
        fnty = ir.FunctionType(_LL[t], [_LL[t]] * len(args))
        return self.b.call(cgutils.get_or_insert_function(self.b.module, fnty, name), [a for a, _ in args]), t

    def _convert(self, x, src, dst):
        if src == dst:
            return x
        if src in _FLOATS and dst in _FLOATS:
            return self.b.fpext(x, _LL[dst]) if _BITS[dst] > _BITS[src] else self.b.fptrunc(x, _LL[dst])
        if dst in _FLOATS:
            return (self.b.sitofp if SIGNED[src] else self.b.uitofp)(x, _LL[dst])
        if src in _FLOATS:
            return (self.b.fptosi if SIGNED[dst] else self.b.fptoui)(x, _LL[dst])
        if _BITS[dst] == _BITS[src]:
            return x
        if _BITS[dst] < _BITS[src]:
            return self.b.trunc(x, _LL[dst])
        return (self.b.sext if SIGNED[src] else self.b.zext)(x, _LL[dst])

    # ---- statements
    def run(self, statements, result):
        for s in statements:
            target = s.targets[0]
            value = self.expr(s.value)
            if isinstance(target, ast.Tuple):
                for e, v in zip(target.elts, value[0]):
                    self.env[e.id] = v
            else:
                self.env[target.id] = value
        return self.expr(result)


def _numba_type(t):
    return types.Tuple([_NB[e] for e in t]) if isinstance(t, tuple) else _NB[t]


def _codegen(name):
    params, statements, result, values = _flat_function(name)
    _, ptypes, rtype = signature(name)

    def codegen(context, builder, sig, args):
        env = {p: (a, t) for p, a, t in zip(params, args, ptypes)}
        value, _ = _Emitter(builder, values, env).run(statements, result)
        if isinstance(rtype, tuple):
            return context.make_tuple(builder, sig.return_type, [v for v, _ in value])
        return value
    return codegen


def _typer(name, args):
    _, ptypes, rtype = signature(name)
    if tuple(types.unliteral(a) for a in args) != tuple(_NB[t] for t in ptypes):
        return None
    return _numba_type(rtype)(*[_NB[t] for t in ptypes]), _codegen(name)


@functools.lru_cache(maxsize=None)
def intrinsic_for(name):
    """The Numba intrinsic writing straight-line ``name``'s operations into its caller; its
    arguments must have the function's types exactly (float32 for f32: no implicit conversion)."""
    if not is_straight(name):
        raise ValueError(f"{name} has branches or loops: only straight-line functions are written as instructions")
    return intrinsic_of_arity(len(signature(name)[0]), lambda args: _typer(name, args))


def kernel_intrinsics() -> dict:
    """``{INTRINSIC_PREFIX + name: intrinsic}`` for every straight-line float32 and narrow path (the
    double ones, ``_wide``, and the float32-based ones of _narrow_entries.py, ``_f16`` / ``_bf16``), the
    straight-line float64 entry points, the fast twins and their predicates (twins.py) and the narrow
    roundings, the names the CPU engine's generated kernels call (engines/cpu/source.py)."""
    from . import _library  # noqa: F401 - registers every function
    from ._dsl import REGISTRY
    from .twins import TWIN_FUNCTIONS
    return {INTRINSIC_PREFIX + n: intrinsic_for(n) for n in REGISTRY
            if (n.endswith(("_f32", "_f64", "_wide", "_f16", "_bf16")) or n.startswith("gpm_round_") or n in TWIN_FUNCTIONS)
            and is_straight(n)}
