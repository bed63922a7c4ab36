"""The Numba rendering: the library's own Python functions, compiled with ``numba.njit``.

The only module of the library that imports numba. Each function's code object is compiled as
it is, with its globals rebound: the primitives become one LLVM instruction or intrinsic each,
the Tables numpy arrays (Numba freezes them as constants), the other library functions their
jitted twins.

    fns = numba_functions()          # {"gpm_exp_f32": <njit>, ...}, compiled lazily
    gpm_exp_f32 = fns["gpm_exp_f32"] # call it from njit code with a float32 (not a Python float)

Mapping: fma -> llvm.fma, sqrt -> llvm.sqrt, floor/ceil/trunc/rint -> llvm.floor/ceil/trunc/rint,
fabs -> llvm.fabs, copysign -> llvm.copysign, select -> LLVM ``select``, as_u64... -> ``bitcast``;
f64(...)/i64(...) are numpy's scalar types (fpext/fptrunc/sitofp/fptosi...); + - * / are Numba's
own, which LLVM never contracts without fastmath. ``error_model="numpy"``: no exception on /0.
Complex entry points return (re, im) tuples.
"""
from __future__ import annotations

import functools
import platform
import types as pytypes

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic

from . import _dsl
from ._dsl import REGISTRY, Table
from ._flatten import flat_source, is_straight

__all__ = ["numba_functions", "PRIMITIVES", "JIT_OPTIONS", "intrinsic_of_arity", "HARDWARE_HALF", "round_f16"]

JIT_OPTIONS = {"error_model": "numpy", "fastmath": False}


def _hardware_half():
    """Whether LLVM lowers fpext/fptrunc between half and float to one instruction here.

    x86 needs F16C (vcvtph2ps / vcvtps2ph); AArch64 always has it. Elsewhere LLVM emits a
    libcall (__extendhfsf2) that Numba does not link, so the bit-manipulation paths are used.
    Mirrors how Numba picks its target features (NUMBA_CPU_FEATURES, else the host's).
    """
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    if config.CPU_FEATURES is not None:
        return "+f16c" in config.CPU_FEATURES.split(",")
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("f16c", False))


HARDWARE_HALF = _hardware_half()


def round_f16(builder, y):
    """float32 ``y`` (not NaN) rounded to binary16's grid, ties to even, held in a float32: the
    conversion there and back (vcvtps2ph and vcvtph2ps), what narrow32.gpm_carrier_f16 computes
    in arithmetic; only where HARDWARE_HALF (flat_source's ``native``). A NaN y keeps its sign and
    top 10 payload bits, quieted (what narrow32.gpm_narrow_f16_carried's native rendering relies on)."""
    return builder.fpext(builder.fptrunc(y, ir.HalfType()), ir.FloatType())


def _llvm_name(base, ty):
    return f"{base}.{'f64' if ty.bitwidth == 64 else 'f32'}"


def _float_op(base, args):
    """(signature, codegen) of an LLVM float intrinsic on arguments of one float type."""
    args = [types.unliteral(a) for a in args]
    if not isinstance(args[0], types.Float) or any(a != args[0] for a in args):
        return None
    t, n = args[0], len(args)

    def codegen(context, builder, sig, llargs):
        lty = context.get_value_type(t)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(lty, [lty] * n), _llvm_name(base, t))
        return builder.call(fn, llargs)
    return t(*([t] * n)), codegen


# numba's @intrinsic reads the arity from the Python signature: one template per arity
def _arity1(typer):
    @intrinsic
    def op(typingctx, a0):
        return typer((a0,))
    return op


def _arity2(typer):
    @intrinsic
    def op(typingctx, a0, a1):
        return typer((a0, a1))
    return op


def _arity3(typer):
    @intrinsic
    def op(typingctx, a0, a1, a2):
        return typer((a0, a1, a2))
    return op


def _arity4(typer):
    @intrinsic
    def op(typingctx, a0, a1, a2, a3):
        return typer((a0, a1, a2, a3))
    return op


_BY_ARITY = {1: _arity1, 2: _arity2, 3: _arity3, 4: _arity4}


def intrinsic_of_arity(n: int, typer):
    """A Numba intrinsic of ``n`` arguments whose typing is ``typer(argument types)``: None (not
    this signature) or (signature, codegen), as an @intrinsic's body returns them."""
    return _BY_ARITY[n](typer)


def _float_intrinsic(base, n):
    return intrinsic_of_arity(n, lambda args: _float_op(base, args))


@intrinsic
def _select(typingctx, c, a, b):
    a, b = types.unliteral(a), types.unliteral(b)
    if types.unliteral(c) != types.boolean or a != b:
        return None

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])
    return a(types.boolean, a, a), codegen


def _bitcast(src_kinds, dst):
    @intrinsic
    def op(typingctx, x):
        x = types.unliteral(x)
        if x not in src_kinds:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return dst(x), codegen
    return op


@intrinsic
def _round_f16(typingctx, y):
    if types.unliteral(y) != types.float32:
        return None
    return types.float32(types.float32), lambda context, builder, sig, args: round_f16(builder, args[0])


@intrinsic
def _round_f16_carried(typingctx, x, y):
    if types.unliteral(x) != types.float32 or types.unliteral(y) != types.float32:
        return None
    return types.float32(types.float32, types.float32), lambda context, builder, sig, args: round_f16(builder, args[1])


PRIMITIVES = {
    "fma": _float_intrinsic("llvm.fma", 3),
    "sqrt": _float_intrinsic("llvm.sqrt", 1),
    "fabs": _float_intrinsic("llvm.fabs", 1),
    "floor": _float_intrinsic("llvm.floor", 1),
    "ceil": _float_intrinsic("llvm.ceil", 1),
    "trunc": _float_intrinsic("llvm.trunc", 1),
    "rint": _float_intrinsic("llvm.rint", 1),
    "copysign": _float_intrinsic("llvm.copysign", 2),
    "select": _select,
    "as_u64": _bitcast((types.float64,), types.uint64),
    "as_i64": _bitcast((types.float64,), types.int64),
    "as_f64": _bitcast((types.uint64, types.int64), types.float64),
    "as_u32": _bitcast((types.float32,), types.uint32),
    "as_i32": _bitcast((types.float32,), types.int32),
    "as_f32": _bitcast((types.uint32, types.int32), types.float32),
    "round_f16": _round_f16,
    "round_f16_carried": _round_f16_carried,   # narrow32.gpm_narrow_f16_carried: y's rounding (x86 carries x's NaN)
}


def _table_array(tbl: Table):
    return np.array(tbl, dtype={"f64": np.float64, "f32": np.float32, "i64": np.int64, "u64": np.uint64,
                                "i32": np.int32, "u32": np.uint32, "u16": np.uint16, "u8": np.uint8}[tbl.type_name])


@functools.lru_cache(maxsize=2)
def numba_functions(flat: bool = False) -> dict:
    """``{name: njit dispatcher}`` for every function of the library (entry points and helpers).

    ``flat=True``: the set the engine's kernels call. Each straight-line function (no branch, no
    loop: the float32 and narrow paths) is compiled from its flattened text (_flatten.py), one
    function with its helpers written inline, which Numba inlines into the kernel before typing: a
    cold gp.exp(float32) kernel compiled in 0.44 s through the helpers, 0.14 s flat. The other
    functions are the ones compiled as written (deep float64 and complex trees, where flat helpers
    inlined at every call site compiled slower: complex power 1.7 -> 2.4 s)."""
    if flat:
        written = numba_functions(False)
        return {name: njit(**_FLAT_OPTIONS)(_compile_flat(name)) if is_straight(name) else fn
                for name, fn in written.items()}
    from . import _library  # noqa: F401 - registers every function
    module_globals = {}
    out = {}
    for name, entry in REGISTRY.items():
        fn = entry.fn
        g = module_globals.get(fn.__module__)
        if g is None:
            g = _bind(dict(fn.__globals__))
            module_globals[fn.__module__] = g
        clone = pytypes.FunctionType(fn.__code__, g, name, fn.__defaults__, fn.__closure__)
        clone.__qualname__ = fn.__qualname__
        clone.__module__ = fn.__module__
        clone.__doc__ = fn.__doc__
        out[name] = njit(**JIT_OPTIONS)(clone)
    for g in module_globals.values():   # before anything compiles: callees resolve to the jitted twins
        g.update(out)
    return out


# A flat function is called only from kernels: no Python or C wrapper, and Numba inlines it into
# its caller before typing (one small function: cheap, unlike inlining the helper tree).
_FLAT_OPTIONS = {**JIT_OPTIONS, "inline": "always", "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def _bind(g: dict) -> dict:
    """A function's globals as Numba reads them: Tables as numpy arrays, the primitives as LLVM."""
    for k, v in list(g.items()):
        if isinstance(v, Table):
            g[k] = _table_array(v)
    g.update(PRIMITIVES)
    return g


def _compile_flat(name):
    """The Python function of ``name``'s flattened text (it calls no other library function)."""
    text, values = flat_source(name, native=HARDWARE_HALF)
    g = _bind({**{t: getattr(_dsl, t) for t in _dsl.__all__}, **values})
    g["__name__"] = f"{__name__}.flat"
    exec(compile(text, f"<gpupromote flat {name}>", "exec"), g)
    return g[name]
