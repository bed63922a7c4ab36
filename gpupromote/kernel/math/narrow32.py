"""float16 and bfloat16 results from the float32 paths: the rounding of a float32 value to a narrow
format, in float32 arithmetic, for the narrow entry points ``gpm_<f>_f16`` / ``gpm_<f>_bf16``
(_narrow_entries.py), which take the narrow input widened to float32 and return the correctly
rounded narrow result held in a float32 (the carrier the kernels cast to the narrow type, exactly).

Why: the double path (``gpm_<f>_wide``, then ``gpm_round_<fmt>`` on 64-bit integers) runs 8 lanes to
a 512-bit vector with much 64-bit integer work; the float32 path (``gpm_<f>_f32_raw``, the same double
evaluation ending in float32) then this rounding takes about half the time. Rounding a correctly
rounded float32 value again to 11 or 8 bits gives the correctly rounded narrow value except where the
float32 value lands on a narrow rounding boundary the exact value is not on: a few of the 65,536
float16 inputs of a function, no bfloat16 one. Those inputs, found by comparing with the double path
on every input (tests/kernel/math/find_narrow_exceptions.py), are replaced by their correct results,
a compare and a select each; a function that would need many keeps the double path. Where a function
has a lean path (lean32.py, float32 arithmetic only) that needs as few, the entry rounds that instead.

The float16 carrier is IEEE rounding to binary16's grid: where the target converts in hardware (F16C),
the Numba renderings write the conversion there and back instead of its arithmetic
(_flatten.NATIVE_HELPERS), and a kernel's own conversion to float16 after it folds into one
instruction (tests/kernel/math/test_narrow_native.py holds the two to the same bits).
"""
from __future__ import annotations

from ._dsl import INF, as_f32, as_u32, copysign, f32, fabs, helper, i64, select, u32
from ._core import gpm_max_f32


@helper
def gpm_carrier_f16(y: f32) -> f32:
    """y (not NaN) rounded to the nearest float16 value, ties to even, held in a float32."""
    a = fabs(y)
    # c = 2^(e + 13) for a in [2^e, 2^(e+1)): a + c rounds a to float16's grid there, 2^(e - 10),
    # ties to even (c is an even multiple of it); below 2^-14 the grid is the subnormals' 2^-24
    c = as_f32(u32((i64(as_u32(a)) & i64(0x7F800000)) + i64(0x06800000)))
    c = gpm_max_f32(c, f32(0.5))
    r = select(a >= f32(65520.0), f32(INF), (a + c) - c)
    return copysign(r, y)


@helper
def gpm_carrier_bf16(y: f32) -> f32:
    """y (not NaN) rounded to the nearest bfloat16 value, ties to even, held in a float32: the top
    16 bits rounded on the bit pattern (a carry is the next binade, and past the largest finite
    value inf; subnormals round at the same bit)."""
    b = i64(as_u32(y))
    return as_f32(u32((b + i64(0x7FFF) + ((b >> i64(16)) & i64(1))) & i64(0xFFFF0000)))


@helper
def gpm_quiet_f16(x: f32) -> f32:
    """The float16 result of a function at a NaN input x (held in a float32): x quieted, its
    payload cut to float16's 10 bits, as NumPy's float16 loops give it (they carry the NaN through
    the float32 function; np.tanh of 0x7C01 is 0x7E01)."""
    return as_f32(u32((i64(as_u32(x)) | i64(0x00400000)) & i64(0xFFFFE000)))


@helper
def gpm_narrow_nan_f16(x: f32, y: f32, r: f32) -> f32:
    """r, or for a NaN result y: x quieted if x is a NaN (gpm_quiet_f16), else the quiet NaN with
    the sign of y (keyed on the result, as gpm_narrow_nan)."""
    return select(y != y, select(x != x, gpm_quiet_f16(x), copysign(as_f32(u32(0x7FC00000)), y)), r)


@helper
def gpm_narrow_nan(x: f32, y: f32, r: f32) -> f32:
    """r, or for a NaN result y the quiet NaN with the sign of x if x is a NaN, else of y (what
    gpm_round_<fmt> gives a NaN; bfloat16's, as ml_dtypes gives it). Keyed on the result, not only
    the input: arithmetic on a NaN gives x86's payload on the CPU and the canonical 0x7FFFFFFF on a
    GPU, so no NaN may reach the carriers (bfloat16's would round 0x7FFFFFFF to -0.0)."""
    return select(y != y, copysign(as_f32(u32(0x7FC00000)), select(x != x, x, y)), r)


@helper
def gpm_narrow_f16(x: f32, y: f32) -> f32:
    """The float16 result of input x from its float32 result y: y rounded, a NaN as
    gpm_narrow_nan_f16 makes it."""
    return gpm_narrow_nan_f16(x, y, gpm_carrier_f16(y))


@helper
def gpm_narrow_bf16(x: f32, y: f32) -> f32:
    """The bfloat16 result of input x from its float32 result y: y rounded, a NaN the format's one."""
    return gpm_narrow_nan(x, y, gpm_carrier_bf16(y))


@helper
def gpm_narrow_f16_nan_in(x: f32, y: f32) -> f32:
    """gpm_narrow_f16 for a function whose value is a NaN only where its input is one (y is then
    not read): two vector operations fewer."""
    return select(x != x, gpm_quiet_f16(x), gpm_carrier_f16(y))


@helper
def gpm_narrow_f16_carried(x: f32, y: f32) -> f32:
    """gpm_narrow_f16_nan_in for a y computed from x by float arithmetic, and selects that pass a
    NaN x on, alone: on x86 a NaN x then reaches y as x quieted (each operation returns its first
    NaN operand quieted, and every NaN operand is x's), so the Numba renderings write the rounding
    of y alone (_flatten.NATIVE_HELPERS, where the target has F16C: an x86 one); a GPU's arithmetic
    gives its own canonical NaN, so the CUDA rendering keeps the select. Which lean paths qualify is
    measured on every NaN input (find_narrow_exceptions.py), and test_narrow_native.py holds the two
    renderings to the same bits on all 65,536 inputs."""
    return gpm_narrow_f16_nan_in(x, y)


@helper
def gpm_narrow_bf16_nan_in(x: f32, y: f32) -> f32:
    """gpm_narrow_bf16 for a function whose value is a NaN only where its input is one."""
    return select(x != x, copysign(as_f32(u32(0x7FC00000)), x), gpm_carrier_bf16(y))
