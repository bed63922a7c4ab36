"""Straight-line library functions as one Python function each: what the CPU kernels compile.

A float32 entry point such as ``gpm_exp_f32`` is a chain of small straight-line helpers
(``gpm_fix_exp_f32(x, gpm_exp_f32_raw(x))`` -> ``gpm_exp_wide`` -> ``gpm_exp_wide_core``,
``gpm_pow2i``, ``gpm_to_f32``). Compiled as written, Numba runs its whole pipeline once per helper
(typing, lowering, an LLVM module each) before LLVM inlines them into the kernel's loop: most of a
cold kernel's compile time. ``flat_source`` writes the same computation as one function, each
call to a straight-line helper replaced by the helper's statements (its locals renamed apart, its
parameters bound to the argument expressions) and its return expression, so Numba types and
lowers one function.

Only the text moves: every operation, its operands and its order of evaluation within an
expression stay as the library wrote them (the functions are pure, so hoisting a call's
statements before the statement that uses it changes nothing), and the C++ rendering still reads
the original functions. tests/kernel/math/test_flatten.py checks flattened against called
functions bit for bit.

A function is straight-line when its body is assignments and one final ``return``, and every
library function it calls is straight-line too; the others (branches, loops) are not flattened
and stay calls (their callees may be flat).
"""
from __future__ import annotations

import ast
import copy
import functools

from ._cpp_render import function_ast
from ._dsl import REGISTRY

__all__ = ["is_straight", "flat_source", "INTRINSIC_PREFIX", "NATIVE_HELPERS"]

# helpers a Numba rendering may replace by one instruction of the target, which computes exactly
# what the helper's arithmetic does: ``flat_source(name, native=True)`` writes a call to the
# primitive named here instead of the helper's statements (numba_binding.HARDWARE_HALF decides)
NATIVE_HELPERS = {"gpm_carrier_f16": "round_f16",              # IEEE rounding to binary16's grid: vcvtps2ph
                  "gpm_narrow_f16_carried": "round_f16_carried"}  # the same, x86 carrying a NaN input

# names the renderings bind themselves (types, primitives): never renamed
_BUILTIN = frozenset(("f64", "f32", "i64", "u64", "i32", "u32", "u16", "u8", "bool", "fma", "sqrt", "fabs",
                      "copysign", "floor", "ceil", "trunc", "rint", "select", "as_u64", "as_i64", "as_f64",
                      "as_u32", "as_i32", "as_f32", *NATIVE_HELPERS.values()))


def _body(name):
    """The function's statements without its docstring."""
    body = function_ast(name).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _library_calls(node):
    return [n.func.id for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in REGISTRY]


@functools.lru_cache(maxsize=None)
def is_straight(name) -> bool:
    """Assignments and one final return, calling only straight-line library functions."""
    body = _body(name)
    if not body or not isinstance(body[-1], ast.Return):
        return False
    if not all(isinstance(s, (ast.Assign, ast.AugAssign)) for s in body[:-1]):
        return False
    return all(is_straight(c) for s in body for c in _library_calls(s))


# what a kernel's source calls the intrinsic writing a straight-line function's instructions
# (llvm_binding.py); kept here, away from Numba, for the source generator
INTRINSIC_PREFIX = "_gpmi_"


class _Flattener:
    """Builds one flat function; ``values`` collects the module-level values it reads, each under
    a name unique to its module (two modules may use one name for different constants)."""

    def __init__(self, native: bool = False):
        self.values: dict = {}
        self.native = native
        self._count = 0

    def _global(self, fn, name):
        if name in _BUILTIN:
            return name
        unique = f"_g_{fn.__module__.rsplit('.', 1)[-1]}_{name}"
        self.values[unique] = fn.__globals__[name]
        return unique

    def inline(self, name, args, out, top=False):
        """Append the statements of ``name`` called with the expressions ``args`` to ``out``;
        return its result expression."""
        fn = REGISTRY[name].fn
        params = [a.arg for a in function_ast(name).args.args]
        body = copy.deepcopy(_body(name))    # the rewrite works in place; function_ast is cached
        prefix = "" if top else f"_i{self._count}_"
        self._count += 1
        assigned = {t.id for s in body[:-1] for t in ast.walk(s)
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        local_names = set(params) | assigned
        bound = {}   # parameter -> the expression it stands for (a name or constant: substituted)
        for p, a in zip(params, args):
            if top or isinstance(a, (ast.Name, ast.Constant)):
                bound[p] = a
            else:
                out.append(ast.Assign([ast.Name(prefix + p, ast.Store())], a, lineno=0))
                bound[p] = ast.Name(prefix + p, ast.Load())

        flattener = self

        class _Rewrite(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in local_names:
                    if isinstance(node.ctx, ast.Load) and node.id in bound and node.id not in assigned:
                        return bound[node.id]
                    return ast.Name(prefix + node.id, node.ctx)
                return ast.Name(flattener._global(fn, node.id), node.ctx)

            def visit_Call(self, node):
                node.args = [self.visit(a) for a in node.args]
                if flattener.native and isinstance(node.func, ast.Name) and node.func.id in NATIVE_HELPERS:
                    return ast.Call(ast.Name(NATIVE_HELPERS[node.func.id], ast.Load()), node.args, [])
                if isinstance(node.func, ast.Name) and node.func.id in REGISTRY and is_straight(node.func.id):
                    return flattener.inline(node.func.id, node.args, out)
                node.func = self.visit(node.func)
                return node

        # a parameter the body assigns to is a variable: bind it once, then use the name
        for p in params:
            if p in assigned and not top:
                out.append(ast.Assign([ast.Name(prefix + p, ast.Store())], bound[p], lineno=0))
        rewrite = _Rewrite()
        for stmt in body[:-1]:
            out.append(rewrite.visit(stmt))
        return rewrite.visit(body[-1].value)


@functools.lru_cache(maxsize=None)
def flat_source(name, native: bool = False) -> tuple[str, dict]:
    """(source of ``def <name>(...)`` with every callee inlined (a straight-line function calls
    only straight-line ones), the module-level values it reads by their unique names). ``native``:
    the calls to NATIVE_HELPERS become their primitives."""
    fdef = function_ast(name)
    params = [a.arg for a in fdef.args.args]
    flattener = _Flattener(native)
    out: list = []
    result = flattener.inline(name, [ast.Name(p, ast.Load()) for p in params], out, top=True)
    fn = ast.FunctionDef(name=name, args=copy.deepcopy(fdef.args), body=[*out, ast.Return(result)],
                         decorator_list=[], returns=None, type_params=[])
    for a in fn.args.args:
        a.annotation = None
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    return ast.unparse(module), dict(flattener.values)
