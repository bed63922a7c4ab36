"""Kernels of one narrow operand, run as a table lookup on long calls.

A kernel that calls the owned math library (exp, tanh, erf, power, ...) and reads one 8- or 16-bit
array (int8, uint8, int16, uint16, float16, bfloat16, the float8 formats), with no checks and
nothing else but folded scalars, is a function of at most 65,536 bit patterns (one float16 call of
an entry point rounding a lean float32 path excepted: its loop is faster). On a call of
``min_elements(bits)`` elements or more, the CPU engine runs the kernel once over every pattern (its
own flat loop, with the call's folded scalars, so the table holds exactly the bits the loop gives)
and then gathers, ``out[i] = table[bits of x[i]]``: one load per element instead of the function.

10**7 elements, one thread (2026-11-26): float16 exp 29.6 ms through the loop, 5.1 ms through the
table; bfloat16 exp 18.6 -> 4.3 ms; int8 exp 7.2 -> 3.5 ms. Kernels without math are faster as
loops (int8 negative: 0.33 ms against 3.95), so they are never tabulated.

Only time changes: tests/engines/test_tables.py compares the two ways on every pattern. Calls
below the threshold and strided layouts keep the loop, and the compiled dispatcher's entry of a
tabulated kernel declines longer calls to the Python path, which gathers (``Entry(max_n=...)``).
A kernel keeps its tables (2**bits results each, at most 1 MiB) for the last ``_KEPT`` values of its
folded scalars.
"""
from __future__ import annotations

import numpy as np

from ...kernel import ir
from ...kernel.math import lean_entries
from ...kernel.math.numba_binding import HARDWARE_HALF
from ...kernel.unary import BINARY, NARROW_ROUNDING, UNARY, narrow_entry
from .cache import LEAN_INTERLEAVE, MATH_INTERLEAVE, WIDER_INTERLEAVE, WIDER_INTERLEAVE_FUNCTIONS, cached_njit

__all__ = ["calls_math", "calls_lean_only", "math_interleave", "table_bits", "min_elements", "Tables", "gather"]

_MATH = frozenset(UNARY) | frozenset(BINARY) | {"gp_csqrt", "gp_power_real", "gp_power_complex"}
_NARROW_SUFFIXES = tuple(f"_{code}" for code in NARROW_ROUNDING)
_KEPT = 8


def _helper(expr: str) -> str:
    name = expr.split("(", 1)[0].strip()
    return name[: -len(name.rsplit("_", 1)[1]) - 1] if name.endswith(_NARROW_SUFFIXES) else name


def calls_math(kernel) -> bool:
    """Whether ``kernel`` calls the owned math library (exp, tanh, power, ...)."""
    return bool(_math_helpers(kernel))


def _math_helpers(kernel) -> set:
    return {h for n in kernel._order if isinstance(n, ir.Apply) and n.expr and (h := _helper(n.expr)) in _MATH}


# the narrow formats whose lean loops beat the table: float16 where it converts in hardware (10**7
# float16 tanh, one thread: 1.03 ms, the table 2.05); bfloat16's conversions are integer work (its
# tanh 2.27 ms, the table 1.77)
_LOOP_FORMATS = frozenset({"f2"} if HARDWARE_HALF else ())


def calls_lean_only(kernel) -> bool:
    """Whether ``kernel`` is one call of a narrow entry point rounding a lean float32 path
    (``gp_tanh_f2`` -> gpm_tanh_f16, kernel.math.lean_entries()) of a format of _LOOP_FORMATS, with
    nothing else but casts: 16 float32 lanes a vector and the rounding one conversion, its loop is
    faster than a table. Not a chain around one (a fused float16 GELU under NumPy's rules, every step
    rounded to float16, took 5.6 ms as a loop, 2.2 through its table)."""
    applies = [n for n in kernel._order if isinstance(n, ir.Apply)]
    if len(applies) != 1 or not applies[0].expr:
        return False
    helper, _, code = applies[0].expr.split("(", 1)[0].strip().rpartition("_")
    return helper in UNARY and code in _LOOP_FORMATS and narrow_entry(UNARY[helper][0], code) in lean_entries()


def math_interleave(kernel) -> int | None:
    """The vectors an elementwise loop of ``kernel`` keeps in flight (cache.MATH_INTERLEAVE; more
    for a kernel calling only the functions of cache.WIDER_INTERLEAVE_FUNCTIONS, more still for one
    lean narrow entry); None where it calls no math (LLVM's cost model decides)."""
    helpers = _math_helpers(kernel)
    if not helpers:
        return None
    if calls_lean_only(kernel):
        return LEAN_INTERLEAVE
    return WIDER_INTERLEAVE if helpers <= WIDER_INTERLEAVE_FUNCTIONS else MATH_INTERLEAVE


def table_bits(kernel, storage) -> int | None:
    """8 or 16 where ``kernel`` can be tabulated (its one array parameter stored as ``storage``)."""
    if len(kernel.arrays) != 1 or kernel.checks or storage is None:
        return None
    if storage.kind not in "iuf" or storage.itemsize > 2:
        return None   # bool: two values, nothing to gain
    if storage.itemsize == 2 and calls_lean_only(kernel):
        return None   # why 16-bit only: an int8 operand's tanh in float16 takes 1.63 ms by table, 1.80 by loop
    return 8 * storage.itemsize if calls_math(kernel) else None


def min_elements(bits: int) -> int:
    """The call size from which the table pays: building it costs 2**bits kernel evaluations."""
    return 4 << bits


class Tables:
    """One kernel's tables, by the values of its folded scalars."""

    def __init__(self, flat, bits, position, storage, out_storage):
        self.flat, self.bits, self.position = flat, bits, position
        self.storage, self.out_storage = storage, out_storage
        self._by_scalars = {}

    def get(self, args) -> np.ndarray:
        """The table for the call's arguments ``args`` (the array's place is ignored)."""
        key = tuple((a.dtype.str, a.tobytes()) if isinstance(a, np.generic) else (type(a), repr(a))
                    for i, a in enumerate(args) if i != self.position)
        table = self._by_scalars.get(key)
        if table is None:
            patterns = np.arange(1 << self.bits, dtype=np.uint8 if self.bits == 8 else np.uint16).view(self.storage)
            table = np.empty(1 << self.bits, self.out_storage)
            call = list(args)
            call[self.position] = patterns
            self.flat(*call, table)
            table.flags.writeable = False
            if len(self._by_scalars) >= _KEPT:
                self._by_scalars.pop(next(iter(self._by_scalars)))
            self._by_scalars[key] = table
        return table


def gather(table, index, out):
    """out[i] = table[index[i]] (index: contiguous 8- or 16-bit patterns)."""
    (_gather16 if index.itemsize == 2 else _gather8)(table, index, out)


# The indices read 64 bits at a time, four 16-bit or eight 8-bit patterns a load, each result stored
# as it is looked up: two memory operations per element instead of three, which is what a lookup loop
# is bound by (10**7 float16, one thread: 5.4 -> 3.7 ms; x86 loads 64 bits at any alignment).

@cached_njit(nogil=True, boundscheck=False)
def _gather16(table, index, out):
    n = out.shape[0] - out.shape[0] % 4
    words = index[:n].view(np.uint64)
    for j in range(n // 4):
        w = words[j]
        out[4 * j] = table[w & 0xFFFF]
        out[4 * j + 1] = table[(w >> 16) & 0xFFFF]
        out[4 * j + 2] = table[(w >> 32) & 0xFFFF]
        out[4 * j + 3] = table[w >> 48]
    for i in range(n, out.shape[0]):
        out[i] = table[index[i]]


@cached_njit(nogil=True, boundscheck=False)
def _gather8(table, index, out):
    n = out.shape[0] - out.shape[0] % 8
    words = index[:n].view(np.uint64)
    for j in range(n // 8):
        w = words[j]
        for k in range(8):
            out[8 * j + k] = table[(w >> (8 * k)) & 0xFF]
    for i in range(n, out.shape[0]):
        out[i] = table[index[i]]
