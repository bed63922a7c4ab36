"""The float32 entry points of the unary functions: the branch-free double evaluation of each
module (``gpm_<f>_f32_raw``), then the few inputs listed in _f32_fixes.py (found over all 2^32
inputs) replaced by their correctly rounded results: every float32 result is correctly rounded."""
from __future__ import annotations

from ._dsl import f32, helper, public
from .exp_log import gpm_exp2_f32_raw, gpm_exp_f32_raw, gpm_expm1_f32_raw
from .log import gpm_log10_f32_raw, gpm_log1p_f32_raw, gpm_log2_f32_raw, gpm_log_f32_raw
from .hyperbolic import (gpm_arccosh_f32_raw, gpm_arcsinh_f32_raw, gpm_arctanh_f32_raw, gpm_cosh_f32_raw, gpm_sinh_f32_raw,
                         gpm_tanh_f32_raw)
from .inverse_trig import gpm_arccos_f32_raw, gpm_arcsin_f32_raw, gpm_arctan_f32_raw
from .roots import gpm_cbrt_f32_raw, gpm_rsqrt_f32_raw
from .special import gpm_erf_f32_raw, gpm_sigmoid_f32_raw
from .trig32 import (gpm_cos_cw_f32_raw, gpm_cos_f32_raw, gpm_sin_cw_f32_raw, gpm_sin_f32_raw, gpm_tan_cw_f32_raw,
                     gpm_tan_f32_raw)
from ._f32_fixes import (gpm_fix_arccos_f32, gpm_fix_arccosh_f32, gpm_fix_arcsin_f32, gpm_fix_arcsinh_f32,
                         gpm_fix_arctan_f32, gpm_fix_arctanh_f32, gpm_fix_cbrt_f32, gpm_fix_cos_f32, gpm_fix_cosh_f32,
                         gpm_fix_erf_f32, gpm_fix_exp_f32, gpm_fix_exp2_f32, gpm_fix_expm1_f32, gpm_fix_log_f32,
                         gpm_fix_log10_f32, gpm_fix_log1p_f32, gpm_fix_log2_f32, gpm_fix_rsqrt_f32, gpm_fix_sigmoid_f32,
                         gpm_fix_sin_f32, gpm_fix_sinh_f32, gpm_fix_tan_f32, gpm_fix_tanh_f32)


@public
def gpm_exp_f32(x: f32) -> f32:
    return gpm_fix_exp_f32(x, gpm_exp_f32_raw(x))


@public
def gpm_expm1_f32(x: f32) -> f32:
    return gpm_fix_expm1_f32(x, gpm_expm1_f32_raw(x))


@public
def gpm_exp2_f32(x: f32) -> f32:
    return gpm_fix_exp2_f32(x, gpm_exp2_f32_raw(x))


@public
def gpm_log_f32(x: f32) -> f32:
    return gpm_fix_log_f32(x, gpm_log_f32_raw(x))


@public
def gpm_log1p_f32(x: f32) -> f32:
    return gpm_fix_log1p_f32(x, gpm_log1p_f32_raw(x))


@public
def gpm_log2_f32(x: f32) -> f32:
    return gpm_fix_log2_f32(x, gpm_log2_f32_raw(x))


@public
def gpm_log10_f32(x: f32) -> f32:
    return gpm_fix_log10_f32(x, gpm_log10_f32_raw(x))


@public
def gpm_rsqrt_f32(x: f32) -> f32:
    return gpm_fix_rsqrt_f32(x, gpm_rsqrt_f32_raw(x))


@public
def gpm_cbrt_f32(x: f32) -> f32:
    return gpm_fix_cbrt_f32(x, gpm_cbrt_f32_raw(x))


@public
def gpm_sin_f32(x: f32) -> f32:
    return gpm_fix_sin_f32(x, gpm_sin_f32_raw(x))


@public
def gpm_cos_f32(x: f32) -> f32:
    return gpm_fix_cos_f32(x, gpm_cos_f32_raw(x))


@public
def gpm_tan_f32(x: f32) -> f32:
    return gpm_fix_tan_f32(x, gpm_tan_f32_raw(x))


@public
def gpm_arcsin_f32(x: f32) -> f32:
    return gpm_fix_arcsin_f32(x, gpm_arcsin_f32_raw(x))


@public
def gpm_arccos_f32(x: f32) -> f32:
    return gpm_fix_arccos_f32(x, gpm_arccos_f32_raw(x))


@public
def gpm_arctan_f32(x: f32) -> f32:
    return gpm_fix_arctan_f32(x, gpm_arctan_f32_raw(x))


@public
def gpm_sinh_f32(x: f32) -> f32:
    return gpm_fix_sinh_f32(x, gpm_sinh_f32_raw(x))


@public
def gpm_cosh_f32(x: f32) -> f32:
    return gpm_fix_cosh_f32(x, gpm_cosh_f32_raw(x))


@public
def gpm_tanh_f32(x: f32) -> f32:
    return gpm_fix_tanh_f32(x, gpm_tanh_f32_raw(x))


@public
def gpm_arcsinh_f32(x: f32) -> f32:
    return gpm_fix_arcsinh_f32(x, gpm_arcsinh_f32_raw(x))


@public
def gpm_arccosh_f32(x: f32) -> f32:
    return gpm_fix_arccosh_f32(x, gpm_arccosh_f32_raw(x))


@public
def gpm_arctanh_f32(x: f32) -> f32:
    return gpm_fix_arctanh_f32(x, gpm_arctanh_f32_raw(x))


@public
def gpm_sigmoid_f32(x: f32) -> f32:
    return gpm_fix_sigmoid_f32(x, gpm_sigmoid_f32_raw(x))


@public
def gpm_erf_f32(x: f32) -> f32:
    return gpm_fix_erf_f32(x, gpm_erf_f32_raw(x))


# the fast twins of sin, cos and tan (twins.py): no table reads, equal where |x| < 2^24

@helper
def gpm_sin_cw_f32(x: f32) -> f32:
    return gpm_fix_sin_f32(x, gpm_sin_cw_f32_raw(x))


@helper
def gpm_cos_cw_f32(x: f32) -> f32:
    return gpm_fix_cos_f32(x, gpm_cos_cw_f32_raw(x))


@helper
def gpm_tan_cw_f32(x: f32) -> f32:
    return gpm_fix_tan_f32(x, gpm_tan_cw_f32_raw(x))
