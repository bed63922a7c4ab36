"""Folding a CPU scalar into a kernel: Python scalars and 0-d host arrays become by-value kernel
parameters, converted first to the dtype the policy keeps them in (``plan.inputs[i]``: NumPy
rounds 1e-8 to float16, PyTorch keeps it in float32, int8 + 300 wraps 300 to 44 in PyTorch) and
then to the compute dtype. The eager call, gp.fuse, the fast runners and the compiled dispatcher
all fold through here, on the CPU and the GPU alike, so that they give one value.
"""
from __future__ import annotations

import numpy as np

from ..core import caches
from ..core import dtypes as D
from ..core.errors import warn_at_caller
from ..promotion.limits import INT_RANGES
from ..promotion.policies import get_policy
from ..promotion.rules import CLIPS

__all__ = ["FOLD_CODES", "converter", "fold_scalar", "fold_target", "fold_operand", "cast_array"]

# Kernel parameter types the C side converts a folded scalar into (the F_ enum in fastpath/fastpath.h).
FOLD_CODES = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6, "uint32": 7,
              "uint64": 8, "float32": 9, "float64": 10, "complex64": 11, "complex128": 12, "float16": 13,
              "bfloat16": 14}
_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _wrap_int(v: int, bits: int, signed: bool) -> int:
    """A Python int reduced modulo 2**bits into the signed or unsigned range (two's complement)."""
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def _cast_value(x, src: D.DType):
    """Any scalar or 0-d array -> a numpy scalar of ``src`` (C-style cast where it narrows)."""
    with np.errstate(all="ignore"):  # why: a deliberate narrowing cast, as the framework's own
        return np.asarray(x).astype(src.numpy)[()]


def _largest(d: D.DType) -> float:
    """The largest finite magnitude a NumPy scalar of ``d`` holds, where a Python float can exceed it
    (float16, float32, complex64); infinity for the others (ml_dtypes' casts report no overflow)."""
    if d.numpy.type in (np.float16, np.float32, np.complex64):
        return float(np.finfo(d.numpy).max)
    return float("inf")


def _overflow_reported(make, largest: float):
    """``make`` (a NumPy scalar type), with NumPy's "overflow encountered in cast" warning reported
    from the user's line rather than this module's (per np.errstate, as NumPy's own cast does)."""
    def cast(v):
        if not float(abs(v)) > largest or np.geterr()["over"] != "warn":   # float(): no NumPy compare
            return make(v)   # in range (or NaN), or a mode NumPy's own cast already honours
        try:
            with np.errstate(over="raise"):
                return make(v)
        except FloatingPointError:
            with np.errstate(over="ignore"):
                x = make(v)
            warn_at_caller("overflow encountered in cast", RuntimeWarning)
            return x
    return cast if largest != float("inf") else make


_converters: dict = {}
caches.register(_converters.clear)


def converter(src: D.DType, to: D.DType):
    """value -> ``src`` (the policy's scalar precision) -> ``to`` (a numpy scalar)."""
    key = (src.name, to.name)
    conv = _converters.get(key)
    if conv is not None:
        return conv
    if src.numpy is None or to.numpy is None:
        missing = src if src.numpy is None else to
        raise TypeError(f"{missing.name} has no numpy storage: it cannot be folded into a CPU kernel")
    src_t, to_t = src.numpy.type, to.numpy.type
    bits, signed, kind = src.bits, src.kind == "i", src.kind
    largest = _largest(src) if kind in "fc" else float("inf")
    src_f = _overflow_reported(src_t, largest)                      # a Python float or int -> src
    to_f = _overflow_reported(to_t, _largest(to) if to.kind in "fc" else float("inf"))

    def conv(v):
        t = type(v)
        if kind in "ui" and (t is int or t is bool):
            x = src_t(_wrap_int(int(v), bits, signed))   # PyTorch / np.where wrap out-of-range ints
        elif kind == "b":
            x = np.bool_(bool(v))
        elif kind in "fc" and (t is float or (kind == "c" and t is complex)):
            x = src_f(v)                                  # rounds (numpy: 1e-8 -> float16 0.0)
        elif kind in "fc" and (t is int or t is bool):
            x = src_f(float(v))   # why: ml_dtypes' constructors refuse ints beyond int64 (2**63)
        elif t is src_t:
            x = v                                         # a numpy scalar of src itself (x - x.max())
        else:
            x = _cast_value(v, src)                       # 0-d arrays, numpy scalars, float -> int
        if to is src:
            return x
        if to.kind == "b":
            return np.bool_(x)
        if to.kind in "fc" and src.kind != "c":
            return to_f(x)
        return _cast_value(x, to)

    if src is to and kind in "fc" and src.numpy.kind in "fc":
        general = conv

        def conv(v):  # the common case (a Python float kept in the compute dtype), fewest steps
            return src_t(v) if type(v) is float and -largest <= v <= largest else general(v)

    _converters[key] = conv
    return conv


def fold_scalar(value, src: D.DType, to: D.DType):
    """The kernel parameter for a folded operand: ``value`` (a Python scalar or a 0-d host array)
    converted to ``src`` (``plan.inputs[i]``), then to ``to`` (``plan.compute``; bool for
    ``where``'s condition). Shared by the CPU and the CUDA backends."""
    return converter(src, to)(value)


def fold_target(plan, i):
    """The dtype folded operand ``i`` becomes: the compute dtype, bool for where's condition."""
    return D.bool_ if plan.op == "where" and i == 0 else plan.compute


def fold_operand(plan, i: int, operand, value, check=None):
    """The by-value kernel parameter of folded operand ``i`` of ``plan``: ``value`` (a Python
    scalar, a 0-d host array, a numpy scalar; ``operand`` describes it) as the framework turns it
    into a kernel argument: a 64-bit 0-d array canonicalized first (JAX with x64 off), an int
    beyond an integer array's range compared exactly, an exact integer exponent folded as an
    equivalent one that fits, then converted (fold_scalar). The eager call and gp.fuse use it.
    ``check(meant, folded)`` (gp.sanitize) is given the value the kernel should compute with (the
    argument, or the equivalent one the three exact rewrites made) and the parameter."""
    original, meant = value, None
    canonical = get_policy(plan.policy).rules.canonical
    if canonical and operand.dtype is not None and operand.dtype.name in canonical:
        value = cast_array(np.asarray(value), D.dtype(canonical[operand.dtype.name]), None)
    if plan.op in _COMPARISONS and plan.compute.kind == "f" and plan.promoted is not None \
            and plan.promoted.kind in "ui" and operand.category == "scalar" and operand.pykind == "i":
        value = meant = _exact_comparand(plan, value)
    if plan.exact_exponent and i == len(plan.folded) - 1:
        value = meant = _equivalent_exponent(int(value), plan.compute)
    if plan.op in CLIPS and plan.compute.kind in "ui" and operand.category == "scalar" and operand.pykind == "i" \
            and get_policy(plan.policy).rules.clip_saturates_int_bounds:
        # np.clip(int8, 0, 300) clips nothing at the top: a bound beyond the dtype is its end
        lo, hi = INT_RANGES[plan.compute.name]
        value = meant = min(max(int(value), lo), hi)
    folded = fold_scalar(value, plan.inputs[i], fold_target(plan, i))
    if check is not None:
        check(original if meant is None else meant, folded)
    return folded


def cast_array(x, to: D.DType, backend):
    with np.errstate(all="ignore"):   # wrapping int64 -> int32 is the point
        if isinstance(x, (np.ndarray, np.generic)):
            return np.asarray(x).astype(to.numpy)
        out = backend.empty(x.shape, to)
        backend.copyto(out, x)
        return out



def _exact_comparand(plan, value: int):
    """NumPy compares a Python int outside an integer array's range exactly (uint64 [2**64 - 1]
    < 2**64 is True). The plan compares in float64, where 2**64 - 1 rounds to 2**64; every value
    of the array is on the same side of such an int, so comparing with +-inf is exact."""
    info = np.iinfo(plan.promoted.numpy)
    if info.min <= value <= info.max:
        return value
    return float("inf") if value > info.max else float("-inf")


def _equivalent_exponent(exponent: int, compute: D.DType) -> int:
    """An exponent the compute dtype holds that gives x ** exponent for every x, when the plan
    keeps the exponent exactly (JAX's integer_pow) and the products wrap in k = compute.bits bits:
    an even x reaches 0 from x ** k on, and an odd x repeats with a period dividing 2**(k - 2)
    (the exponent of the unit group mod 2**k), so any exponent >= k can become
    k + (exponent - k) % 2**(k - 2), at most 2**(k - 2) + k - 1, which fits the signed k-bit type."""
    k = compute.bits
    if exponent < k:
        return exponent
    return k + (exponent - k) % (1 << (k - 2))
