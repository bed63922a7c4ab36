"""The CPU engine's glue to the owned math library (kernel/math): the helpers core/ops.py names
(``gp_exp``, ``gp_atan2``, ...) as Numba overloads that call the library's functions, built from
the table in kernel/unary.py, as engines/cuda/math.py builds the C++ twins from the same table.

Per helper ``gp_F`` and library function ``F``: float32 and float64 call ``gpm_F_f32`` /
``gpm_F_f64``; ``gp_F_<r>`` (r: f2 bf e4 e5) gives the float32 holding the narrow result, one
rounding of ``gpm_F_wide``; complex operands call the library's complex function or the recipe
kernel/unary.py names.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from ...kernel.math import numba_functions
from ...kernel.unary import BINARY, NARROW_ROUNDING, UNARY, narrow_entry
from .elementwise import gp_cdiv
from .intrinsics import declare_helper
from .narrow import bf16_to_f32, e4m3_to_f32, e5m2_to_f32, f16_to_f32

__all__ = sorted({*UNARY, *BINARY, *(f"{h}_{r}" for h in (*UNARY, *BINARY) for r in NARROW_ROUNDING),
                  "gp_csqrt", "gp_power_real", "gp_power_complex"})

# the straight-line functions (the float32 and narrow paths) flattened: one compile each for a
# kernel, not one per helper (kernel/math/_flatten.py)
_F = numba_functions(flat=True)
_WIDEN = {"f2": f16_to_f32, "bf": bf16_to_f32, "e4": e4m3_to_f32, "e5": e5m2_to_f32}
_LN2 = 0.6931471805599453      # RN(ln 2)
_LOG2E = 1.4426950408889634     # RN(1 / ln 2)
_LOG10E = 0.4342944819032518    # RN(1 / ln 10)


def _complex_of(c64, c128):
    """An implementation calling the library's complex function pair on a complex operand."""
    def typer(x):
        if x == types.complex64:
            return lambda x: np.complex64(complex(*c64(x.real, x.imag)))
        if x == types.complex128:
            return lambda x: complex(*c128(x.real, x.imag))
        return None
    return typer


def _recipe(helper):
    """kernel/unary.py's RECIPES: the complex forms the library has no function for, computed in
    complex128 from its functions (and rounded once to complex64 by the caller), as the CUDA
    twin computes them."""
    cexp, clog, csqrt = _F["gpm_cexp_c128"], _F["gpm_clog_c128"], _F["gpm_csqrt_c128"]
    one = complex(1.0)
    if helper == "gp_rsqrt":
        return lambda z: gp_cdiv(one, complex(*csqrt(z.real, z.imag)))
    if helper == "gp_exp2":
        return lambda z: complex(*cexp(z.real * _LN2, z.imag * _LN2))
    if helper == "gp_expm1":   # NumPy's: expm1(x) cos(y) - 2 sin(y/2)^2 + i exp(x) sin(y)
        expm1, exp, sin, cos = _F["gpm_expm1_f64"], _F["gpm_exp_f64"], _F["gpm_sin_f64"], _F["gpm_cos_f64"]

        def complex_expm1(z):
            a = sin(z.imag / 2.0)
            return complex(expm1(z.real) * cos(z.imag) - 2.0 * a * a, exp(z.real) * sin(z.imag))
        return complex_expm1
    if helper in ("gp_log2", "gp_log10"):   # NumPy's: each part of log(z) times log2(e) or log10(e)
        scale = _LOG2E if helper == "gp_log2" else _LOG10E

        def log_base(z):
            re, im = clog(z.real, z.imag)
            return complex(re * scale, im * scale)
        return log_base
    if helper == "gp_log1p":   # NumPy's: log(hypot(x + 1, y)) + i atan2(y, x + 1)
        log, hypot, atan2 = _F["gpm_log_f64"], _F["gpm_hypot_f64"], _F["gpm_arctan2_f64"]
        return lambda z: complex(log(hypot(z.real + 1.0, z.imag)), atan2(z.imag, z.real + 1.0))
    if helper == "gp_sigmoid":
        return lambda z: gp_cdiv(one, 1.0 + complex(*cexp(-z.real, -z.imag)))
    raise ValueError(f"{helper}: no complex recipe (kernel/unary.py RECIPES)")


def _unary(helper, real, cplx):
    f32, f64 = _F[f"gpm_{real}_f32"], _F[f"gpm_{real}_f64"]
    complex_typer = None
    if cplx == "recipe":
        wide_jit = njit(error_model="numpy")(_recipe(helper))

        def complex_typer(x):
            if x == types.complex64:
                return lambda x: np.complex64(wide_jit(complex(x)))
            if x == types.complex128:
                return lambda x: wide_jit(x)
            return None
    elif cplx is not None:
        complex_typer = _complex_of(_F[f"gpm_{cplx}_c64"], _F[f"gpm_{cplx}_c128"])

    def typer(x):
        if x == types.float32:
            return lambda x: f32(x)
        if x == types.float64:
            return lambda x: f64(x)
        return complex_typer(x) if complex_typer is not None else None
    typer.__doc__ = f"{helper}: the owned {real} (kernel/math gpm_{real}_*)"
    return declare_helper(helper, typer)


def _narrow(helper, real, code, arity):
    """gp_F_<code>: the float32 holding F's result rounded once to the narrow format."""
    wide, rounding, widen = _F[f"gpm_{real}_wide"], _F[NARROW_ROUNDING[code]], _WIDEN[code]
    fast = narrow_entry(real, code) if arity == 1 else None
    if fast is not None:      # the format's float32 path (kernel/math/narrow32.py): the carrier itself
        fn = _F[fast]

        def typer(x):
            if x == types.float32:
                return lambda x: fn(x)
            return None
    elif arity == 1:
        def typer(x):
            if x == types.float32:
                return lambda x: widen(rounding(wide(np.float64(x))))
            return None
    else:
        def typer(a, b):
            if a == types.float32 and b == types.float32:
                return lambda a, b: widen(rounding(wide(np.float64(a), np.float64(b))))
            return None
    typer.__doc__ = f"{helper}_{code}: {real} rounded once to the {code} format"
    return declare_helper(f"{helper}_{code}", typer)


def _binary(helper, real):
    f32, f64 = _F[f"gpm_{real}_f32"], _F[f"gpm_{real}_f64"]

    def typer(a, b):
        if a == types.float32 and b == types.float32:
            return lambda a, b: f32(a, b)
        if a == types.float64 and b == types.float64:
            return lambda a, b: f64(a, b)
        return None
    typer.__doc__ = f"{helper}: the owned {real} (kernel/math gpm_{real}_*)"
    return declare_helper(helper, typer)


def _csqrt_typer(x):
    """sqrt of a complex operand (the real one is the IEEE operation, core/ops.py's gp_sqrt)."""
    return _complex_of(_F["gpm_csqrt_c64"], _F["gpm_csqrt_c128"])(x)


def _power_real_typer(a, b):
    """Real power through the library (C99 Annex F's special cases)."""
    if a == types.float32 and b == types.float32:
        f = _F["gpm_power_f32"]
        return lambda a, b: f(a, b)
    if a == types.float64 and b == types.float64:
        f = _F["gpm_power_f64"]
        return lambda a, b: f(a, b)
    return None


def _power_complex_typer(a, b):
    """Complex power: NumPy's npy_cpow as the library writes it (gpm_cpow)."""
    if a == types.complex64 and b == types.complex64:
        f = _F["gpm_cpow_c64"]
        return lambda a, b: np.complex64(complex(*f(a.real, a.imag, b.real, b.imag)))
    if a == types.complex128 and b == types.complex128:
        f = _F["gpm_cpow_c128"]
        return lambda a, b: complex(*f(a.real, a.imag, b.real, b.imag))
    return None


_globals = globals()
for _helper_name, (_real, _cplx) in UNARY.items():
    _globals[_helper_name] = _unary(_helper_name, _real, _cplx)
    for _code in NARROW_ROUNDING:
        _globals[f"{_helper_name}_{_code}"] = _narrow(_helper_name, _real, _code, 1)
for _helper_name, _real in BINARY.items():
    _globals[_helper_name] = _binary(_helper_name, _real)
    for _code in NARROW_ROUNDING:
        _globals[f"{_helper_name}_{_code}"] = _narrow(_helper_name, _real, _code, 2)
gp_csqrt = declare_helper("gp_csqrt", _csqrt_typer)
gp_power_real = declare_helper("gp_power_real", _power_real_typer)
gp_power_complex = declare_helper("gp_power_complex", _power_complex_typer)
