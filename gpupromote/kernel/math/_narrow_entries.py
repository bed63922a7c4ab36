"""The float16 and bfloat16 entry points of the unary functions: the float32 path's value rounded
to the format (narrow32.py), with the inputs where that is not the correctly rounded result replaced
(found over all 65,536 inputs of each format by tests/kernel/math/find_narrow_exceptions.py; generated,
do not edit; lean paths and the NaN-in roundings: see that script). A function absent here for a
format keeps the double path (too many such inputs)."""
from __future__ import annotations

from ._dsl import as_f32, as_u32, f32, public, select, u32  # noqa: F401
from .narrow32 import (gpm_narrow_bf16, gpm_narrow_bf16_nan_in, gpm_narrow_f16, gpm_narrow_f16_carried,  # noqa: F401
                       gpm_narrow_f16_nan_in)
from .float32 import (gpm_arccos_f32_raw, gpm_arccosh_f32_raw, gpm_arcsin_f32_raw, gpm_arcsinh_f32_raw,
                      gpm_arctan_f32_raw, gpm_arctanh_f32_raw, gpm_cbrt_f32_raw, gpm_cos_f32_raw,
                      gpm_cosh_f32_raw, gpm_erf_f32_raw, gpm_exp2_f32_raw, gpm_exp_f32_raw,
                      gpm_expm1_f32_raw, gpm_log10_f32_raw, gpm_log1p_f32_raw, gpm_log2_f32_raw,
                      gpm_log_f32_raw, gpm_rsqrt_f32_raw, gpm_sigmoid_f32_raw, gpm_sin_f32_raw,
                      gpm_sinh_f32_raw, gpm_tan_f32_raw)
from .lean32 import (gpm_exp_f32_lean, gpm_tanh_f32_lean)


@public
def gpm_rsqrt_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_rsqrt_f32_raw(x))
    return r


@public
def gpm_rsqrt_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_rsqrt_f32_raw(x))
    return r


@public
def gpm_cbrt_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_cbrt_f32_raw(x))
    return r


@public
def gpm_exp_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_exp_f32_lean(x))
    b = as_u32(x)
    r = select(b == u32(0x3bef2000), as_f32(u32(0x3f80e000)), r)
    r = select(b == u32(0x3cb9e000), as_f32(u32(0x3f82e000)), r)
    return r


@public
def gpm_exp_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_exp_f32_raw(x))
    return r


@public
def gpm_exp2_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_exp2_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3a38a000), as_f32(u32(0x3f802000)), r)
    return r


@public
def gpm_exp2_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_exp2_f32_raw(x))
    return r


@public
def gpm_expm1_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_expm1_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3a350000), as_f32(u32(0x3a352000)), r)
    return r


@public
def gpm_expm1_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_expm1_f32_raw(x))
    return r


@public
def gpm_log_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_log_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3baf0000), as_f32(u32(0xc0a76000)), r)
    return r


@public
def gpm_log_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_log_f32_raw(x))
    return r


@public
def gpm_log2_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_log2_f32_raw(x))
    return r


@public
def gpm_log2_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_log2_f32_raw(x))
    return r


@public
def gpm_log10_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_log10_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3e71e000), as_f32(u32(0xbf206000)), r)
    r = select(b == u32(0x3e7f0000), as_f32(u32(0xbf1aa000)), r)
    r = select(b == u32(0x42fc2000), as_f32(u32(0x40066000)), r)
    r = select(b == u32(0x453a0000), as_f32(u32(0x405e6000)), r)
    r = select(b == u32(0x4633a000), as_f32(u32(0x4081e000)), r)
    return r


@public
def gpm_log10_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_log10_f32_raw(x))
    return r


@public
def gpm_log1p_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_log1p_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3bc06000), as_f32(u32(0x3bbfe000)), r)
    r = select(b == u32(0xbbbfa000), as_f32(u32(0xbbc02000)), r)
    return r


@public
def gpm_log1p_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_log1p_f32_raw(x))
    return r


@public
def gpm_sin_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_sin_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3e566000), as_f32(u32(0x3e54e000)), r)
    r = select(b == u32(0x43960000), as_f32(u32(0xbf7fe000)), r)
    r = select(b == u32(0xbe566000), as_f32(u32(0xbe54e000)), r)
    r = select(b == u32(0xc3960000), as_f32(u32(0x3f7fe000)), r)
    return r


@public
def gpm_sin_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_sin_f32_raw(x))
    return r


@public
def gpm_cos_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_cos_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3d6f8000), as_f32(u32(0x3f7fa000)), r)
    r = select(b == u32(0xbd6f8000), as_f32(u32(0x3f7fa000)), r)
    return r


@public
def gpm_cos_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_cos_f32_raw(x))
    return r


@public
def gpm_tan_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_tan_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3d128000), as_f32(u32(0x3d12a000)), r)
    r = select(b == u32(0x42bda000), as_f32(u32(0x3f222000)), r)
    r = select(b == u32(0x46e94000), as_f32(u32(0x40fd2000)), r)
    r = select(b == u32(0xbd128000), as_f32(u32(0xbd12a000)), r)
    r = select(b == u32(0xc2bda000), as_f32(u32(0xbf222000)), r)
    r = select(b == u32(0xc6e94000), as_f32(u32(0xc0fd2000)), r)
    return r


@public
def gpm_tan_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_tan_f32_raw(x))
    return r


@public
def gpm_arcsin_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_arcsin_f32_raw(x))
    return r


@public
def gpm_arcsin_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_arcsin_f32_raw(x))
    return r


@public
def gpm_arccos_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_arccos_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0xb6960000), as_f32(u32(0x3fc92000)), r)
    r = select(b == u32(0xbd95e000), as_f32(u32(0x3fd26000)), r)
    r = select(b == u32(0xbf0e8000), as_f32(u32(0x400a6000)), r)
    return r


@public
def gpm_arccos_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_arccos_f32_raw(x))
    return r


@public
def gpm_arctan_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_arctan_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3ce8a000), as_f32(u32(0x3ce8a000)), r)
    r = select(b == u32(0x3e56a000), as_f32(u32(0x3e53a000)), r)
    r = select(b == u32(0x40cdc000), as_f32(u32(0x3fb56000)), r)
    r = select(b == u32(0xbce8a000), as_f32(u32(0xbce8a000)), r)
    r = select(b == u32(0xbe56a000), as_f32(u32(0xbe53a000)), r)
    r = select(b == u32(0xc0cdc000), as_f32(u32(0xbfb56000)), r)
    return r


@public
def gpm_arctan_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_arctan_f32_raw(x))
    return r


@public
def gpm_sinh_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_sinh_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x401e4000), as_f32(u32(0x40bc6000)), r)
    r = select(b == u32(0xc01e4000), as_f32(u32(0xc0bc6000)), r)
    return r


@public
def gpm_sinh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_sinh_f32_raw(x))
    return r


@public
def gpm_cosh_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_cosh_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3d000000), as_f32(u32(0x3f802000)), r)
    r = select(b == u32(0xbd000000), as_f32(u32(0x3f802000)), r)
    return r


@public
def gpm_cosh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_cosh_f32_raw(x))
    return r


@public
def gpm_tanh_f16(x: f32) -> f32:
    r = gpm_narrow_f16_carried(x, gpm_tanh_f32_lean(x))
    return r


@public
def gpm_tanh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_tanh_f32_lean(x))
    return r


@public
def gpm_arcsinh_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_arcsinh_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3e57a000), as_f32(u32(0x3e562000)), r)
    r = select(b == u32(0x4163e000), as_f32(u32(0x40566000)), r)
    r = select(b == u32(0xbe57a000), as_f32(u32(0xbe562000)), r)
    r = select(b == u32(0xc163e000), as_f32(u32(0xc0566000)), r)
    return r


@public
def gpm_arcsinh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_arcsinh_f32_raw(x))
    return r


@public
def gpm_arccosh_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_arccosh_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3f9c8000), as_f32(u32(0x3f27e000)), r)
    return r


@public
def gpm_arccosh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_arccosh_f32_raw(x))
    return r


@public
def gpm_arctanh_f16(x: f32) -> f32:
    r = gpm_narrow_f16(x, gpm_arctanh_f32_raw(x))
    return r


@public
def gpm_arctanh_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16(x, gpm_arctanh_f32_raw(x))
    return r


@public
def gpm_sigmoid_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_sigmoid_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3b400000), as_f32(u32(0x3f002000)), r)
    r = select(b == u32(0x3be00000), as_f32(u32(0x3f006000)), r)
    r = select(b == u32(0x3c300000), as_f32(u32(0x3f00a000)), r)
    r = select(b == u32(0xbac00000), as_f32(u32(0x3effe000)), r)
    r = select(b == u32(0xbb600000), as_f32(u32(0x3effa000)), r)
    r = select(b == u32(0xbbb00000), as_f32(u32(0x3eff6000)), r)
    r = select(b == u32(0xbbf00000), as_f32(u32(0x3eff2000)), r)
    return r


@public
def gpm_sigmoid_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_sigmoid_f32_raw(x))
    return r


@public
def gpm_erf_f16(x: f32) -> f32:
    r = gpm_narrow_f16_nan_in(x, gpm_erf_f32_raw(x))
    b = as_u32(x)
    r = select(b == u32(0x3ac24000), as_f32(u32(0x3adb2000)), r)
    r = select(b == u32(0xbac24000), as_f32(u32(0xbadb2000)), r)
    return r


@public
def gpm_erf_bf16(x: f32) -> f32:
    r = gpm_narrow_bf16_nan_in(x, gpm_erf_f32_raw(x))
    return r


# the entries rounding a lean path: a float16 kernel that is one call of one of these runs its loop
# on long calls, not a table (engines/cpu/tables.py)
LEAN = frozenset({'gpm_exp_f16', 'gpm_tanh_bf16', 'gpm_tanh_f16'})
