"""Value ranges, read from NumPy's iinfo and ml_dtypes' finfo (never retyped), and the Bound: the
one form in which a framework's check of a Python scalar's value is stated.

A rule module states each check once, as ``Bound(position, lo, hi, outside)``: inside
``[lo, hi]`` the value changes nothing; outside it, ``outside(plan, operand, trace)`` decides,
by raising as the framework raises or by returning the plan the value leads to. Every path reads
the same bounds: the resolver calls ``outside`` for values beyond them, the plan cache
(dispatch/api.py, and dispatch/fastpath/result_type.c, which reads its entries) keeps a plan for values within them, and the
dispatcher's fast runners take only calls within them.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np

from ..core import dtypes as D

__all__ = ["INT_RANGES", "INT64_END", "C10_SCALAR", "FLOAT_MAX", "IntRange", "Bound", "float_max",
           "within", "wrap", "cache_bounds"]

# dtype name -> (lowest, highest) of every integer dtype
INT_RANGES = {d.name: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in D.ALL if d.kind in "ui"}
# 2**63: a Python int from here on no longer fits int64. PyTorch makes such an int a uint64
# c10::Scalar, so it keys plans apart (Operand.signature, api._operand_key, and fastpath/result_type.c,
# where PyLong_AsLongLongAndOverflow draws the same line).
INT64_END = INT_RANGES["int64"][1] + 1
# What a c10::Scalar holds: an int64 or a uint64.
C10_SCALAR = (INT_RANGES["int64"][0], INT_RANGES["uint64"][1])

# float dtype name -> its largest finite value
FLOAT_MAX = {d.name: float(ml_dtypes.finfo(d.numpy).max) for d in D.ALL if d.kind == "f"}
_REAL_PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def float_max(dtype: D.DType) -> float:
    """The largest finite value of a float dtype, or of a complex dtype's parts."""
    return FLOAT_MAX[_REAL_PART.get(dtype.name, dtype.name)]


class IntRange(NamedTuple):
    """Where a Python int must lie: ``[lo, hi]``; ``name`` is the dtype an error names and
    ``error`` the exception class the framework raises beyond it."""
    lo: int | float
    hi: int | float
    name: str
    error: type = OverflowError


class Bound(NamedTuple):
    """A value check on operand ``position``: nothing happens inside ``[lo, hi]`` (a complex
    value: both parts); outside, ``outside(plan, operand, trace)`` raises or returns the plan."""
    position: int
    lo: int | float
    hi: int | float
    outside: Callable


def within(value, lo, hi) -> bool:
    if type(value) is complex:
        return lo <= value.real <= hi and lo <= value.imag <= hi
    return lo <= value <= hi


def wrap(value: int, dtype: D.DType) -> int:
    """A Python int as the two's-complement integer dtype holds it."""
    value &= (1 << dtype.bits) - 1
    return value - (1 << dtype.bits) if dtype.kind == "i" and value >> (dtype.bits - 1) else value


def cache_bounds(bounds, operands) -> tuple | None:
    """((position, lo, hi), ...) as the plan caches store them: plain triples, which fastpath/result_type.c
    compares with ``lo <= x <= hi``, one per position (the intersection of its bounds); None
    where a bound is on a complex scalar, which has no order: such a plan cannot be cached by
    its dtypes."""
    if any(operands[b.position].pykind == "c" for b in bounds):
        return None
    merged = {}
    for b in bounds:
        lo, hi = merged.get(b.position, (b.lo, b.hi))
        merged[b.position] = (max(lo, b.lo), min(hi, b.hi))
    return tuple((i, lo, hi) for i, (lo, hi) in merged.items())
