"""The description language of the owned math functions: restricted, typed Python.

Every function of the library is written once, as a Python function that uses only the names
below, and is rendered twice: to CUDA/C++ (``_cpp.py``, read from the function's source with
``ast``) and to Numba (``numba_binding.py``, the same code object compiled with the primitives
bound to LLVM instructions). The rules keep the two renderings bit-identical:

Types (spelled as the numpy scalar types, which both Numba and the C++ renderer understand)
    f64 f32 (IEEE binary64/binary32), i64 u64 (64-bit integers), i32 u32 u16 u8 (storage only:
    converted to, compared, never computed with; Numba widens them and C does not), bool.
    Parameters and returns are annotated; ``tuple[f64, f64]`` returns several values, unpacked
    at the call (``hi, lo = gpm_two_sum(a, b)``). Locals take the type of their first value and
    keep it.

Literals
    A bare float literal is f64, a bare int literal is i64; every other type is spelled out:
    ``f32(0.5)`` (must be exact in binary32), ``u64(0x7ff)``. Both operands of an operator have
    the same type: there is no implicit conversion at all (Numba and C promote differently).

Operations
    + - * / on f64 and f32, each rounded once (never contracted into an FMA); unary -; comparisons
    (one per expression); and/or/not and & | on bool; + - * & | ^ ~ << >> on i64/u64 (>> on i64 is
    arithmetic; callers keep shifts below 64 and signed arithmetic free of overflow).
    Conversions ``f64(x)`` ``f32(x)`` ``i64(x)``...: float->float rounds to nearest, int->float
    rounds to nearest, float->int truncates (the caller keeps the value in range: no NaN).

Primitives (all exact, i.e. correctly rounded IEEE operations, on both engines)
    fma(a, b, c)  sqrt(x)  fabs(x)  copysign(x, y)  floor(x)  ceil(x)  trunc(x)  rint(x) (to
    nearest, ties to even)  select(c, a, b) (a branch-free ``c ? a : b``)  bit casts
    as_u64/as_i64 (f64 -> int), as_f64 (u64/i64 -> f64), as_u32/as_i32 (f32 -> int),
    as_f32 (u32/i32 -> f32).

Statements
    assignment (also to a tuple of names from a tuple-returning call, and ``x += ...``), ``if``/
    ``elif``/``else``, ``for i in range(a, b)`` (i is i64), ``return``. A docstring is allowed.
    Calls go to primitives, conversions and other functions of the library (registered with
    ``@helper`` or ``@public``); module-level numbers are constants, module-level ``Table`` s are
    read-only arrays indexed with an i64.

Functions are pure; NaN results are explicit (a NaN input is returned unchanged by a select,
a NaN made from numbers is the constant ``NAN``), so the engines' different default NaNs never show.

The Python definitions here make the modules importable and runnable as plain (slow) Python for
experiments; only the two renderings are the library.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["f64", "f32", "i64", "u64", "i32", "u32", "u16", "u8",
           "fma", "sqrt", "fabs", "copysign", "floor", "ceil", "trunc", "rint", "select",
           "as_u64", "as_i64", "as_f64", "as_u32", "as_i32", "as_f32",
           "Table", "helper", "public", "REGISTRY", "Entry", "INF", "NAN", "NINF"]

f64 = np.float64
f32 = np.float32
i64 = np.int64
u64 = np.uint64
i32 = np.int32
u32 = np.uint32
u16 = np.uint16
u8 = np.uint8

INF = float("inf")
NINF = float("-inf")
NAN = float("nan")

# The type names the renderers know, with their C spelling.
C_TYPES = {"f64": "double", "f32": "float", "i64": "gpm_i64", "u64": "gpm_u64", "i32": "gpm_i32",
           "u32": "gpm_u32", "u16": "gpm_u16", "u8": "gpm_u8", "bool": "bool"}
FLOAT_TYPES = ("f64", "f32")
INT_TYPES = ("i64", "u64", "i32", "u32", "u16", "u8")
INT_BITS = {"i64": 64, "u64": 64, "i32": 32, "u32": 32, "u16": 16, "u8": 8}
SIGNED = {"i64": True, "u64": False, "i32": True, "u32": False, "u16": False, "u8": False}


# --------------------------------------------------------------------------------------------
# Plain-Python meaning of the primitives (numpy scalars; for experiments only)

def _exact(v):
    return Fraction(float(v))


def fma(a, b, c):
    t = type(a)
    return t(float(_exact(a) * _exact(b) + _exact(c))) if t is np.float64 else \
        t(np.float64(float(_exact(a) * _exact(b) + _exact(c))))


def sqrt(x):
    return np.sqrt(x)


def fabs(x):
    return np.abs(x)


def copysign(x, y):
    return np.copysign(x, y)


def floor(x):
    return np.floor(x)


def ceil(x):
    return np.ceil(x)


def trunc(x):
    return np.trunc(x)


def rint(x):
    return np.rint(x)


def select(c, a, b):
    return a if c else b


def as_u64(x):
    return np.uint64(struct.unpack("<Q", struct.pack("<d", float(x)))[0])


def as_i64(x):
    return np.int64(struct.unpack("<q", struct.pack("<d", float(x)))[0])


def as_f64(n):
    return np.float64(struct.unpack("<d", struct.pack("<Q", int(n) & (2**64 - 1)))[0])


def as_u32(x):
    return np.uint32(struct.unpack("<I", struct.pack("<f", x))[0])


def as_i32(x):
    return np.int32(struct.unpack("<i", struct.pack("<f", x))[0])


def as_f32(n):
    return np.float32(struct.unpack("<f", struct.pack("<I", int(n) & 0xFFFFFFFF))[0])


class Table(tuple):
    """A read-only module-level array of one type, indexed with an i64: ``T[k]``."""

    def __new__(cls, type_name: str, values):
        if type_name not in C_TYPES or type_name == "bool":
            raise TypeError(f"Table of {type_name!r}")
        self = super().__new__(cls, [getattr(np, _NP[type_name])(v) for v in values])
        self.type_name = type_name
        return self


_NP = {"f64": "float64", "f32": "float32", "i64": "int64", "u64": "uint64", "i32": "int32",
       "u32": "uint32", "u16": "uint16", "u8": "uint8"}


# --------------------------------------------------------------------------------------------
# The registry both renderers read: every function of the library, in definition order.

@dataclass
class Entry:
    name: str
    fn: object
    public: bool

    @property
    def module(self):
        return self.fn.__module__


REGISTRY: dict[str, Entry] = {}


def _register(fn, public_: bool):
    name = fn.__name__
    if not name.startswith("gpm_"):
        raise NameError(f"library function names start with gpm_: {name}")
    if name in REGISTRY and REGISTRY[name].fn is not fn:
        raise NameError(f"{name} defined twice")
    REGISTRY[name] = Entry(name, fn, public_)
    return fn


def helper(fn):
    """A function other library functions call; rendered, not an entry point."""
    return _register(fn, False)


def public(fn):
    """An entry point of the library (engines call it)."""
    return _register(fn, True)
