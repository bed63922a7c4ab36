"""Which owned math function computes each math helper the op table names (core/ops.py:
``gp_exp(in0)``, ``gp_atan2(in0, in1)`` ...), per kind of operand: the one table both engines build
their glue from (engines/cpu/math.py: Numba overloads; engines/cuda/math.py: C++ overloads).

For a helper ``gp_F`` with library function ``F`` (kernel/math, ``gpm_F_f32`` / ``gpm_F_f64`` /
``gpm_F_wide``):
  float  -> gpm_F_f32          double -> gpm_F_f64
  gp_F_<r>(float x), r a narrow dtype's code (f2 bf e4 e5): the float holding the narrow result,
      rounded once from gpm_F_wide((double)x) by gpm_round_<format> (core/ops.py's "narrow"
      override), so that a float16 result is correctly rounded, not rounded twice through float32;
      or, where the library has one (``narrow_entry``), its float32 path for the format
      (gpm_F_f16 / gpm_F_bf16: the same correctly rounded results in 16 lanes instead of 8)
  complex<float> / complex<double> -> the complex function ``C`` (gpm_C_c64 / gpm_C_c128), or a
      recipe of the engines' glue (``RECIPES``) where the library has none
"""
from __future__ import annotations

import functools

__all__ = ["UNARY", "BINARY", "RECIPES", "NARROW_ROUNDING", "NARROW_FORMATS", "library_names", "narrow_entry"]

# helper          real function   complex function (None: real operands only)
UNARY = {
    "gp_rsqrt":    ("rsqrt",       "recipe"),    # 1 / csqrt(z)
    "gp_cbrt":     ("cbrt",        None),
    "gp_exp":      ("exp",         "cexp"),
    "gp_exp2":     ("exp2",        "recipe"),    # cexp(z * ln 2)
    "gp_expm1":    ("expm1",       "recipe"),    # cexp(z) - 1
    "gp_log":      ("log",         "clog"),
    "gp_log2":     ("log2",        "recipe"),    # clog(z) / ln 2
    "gp_log10":    ("log10",       "recipe"),    # clog(z) / ln 10
    "gp_log1p":    ("log1p",       "recipe"),    # clog(1 + z)
    "gp_sin":      ("sin",         "csin"),
    "gp_cos":      ("cos",         "ccos"),
    "gp_tan":      ("tan",         "ctan"),
    "gp_asin":     ("arcsin",      "casin"),
    "gp_acos":     ("arccos",      "cacos"),
    "gp_atan":     ("arctan",      "catan"),
    "gp_sinh":     ("sinh",        "csinh"),
    "gp_cosh":     ("cosh",        "ccosh"),
    "gp_tanh":     ("tanh",        "ctanh"),
    "gp_asinh":    ("arcsinh",     "casinh"),
    "gp_acosh":    ("arccosh",     "cacosh"),
    "gp_atanh":    ("arctanh",     "catanh"),
    "gp_sigmoid":  ("sigmoid",     "recipe"),    # 1 / (1 + cexp(-z))
    "gp_erf":      ("erf",         None),
}

# binary helpers (both operands of the one compute dtype)
BINARY = {
    "gp_powerf":    "power",       # real power (core/ops.py's power on float compute dtypes)
    "gp_atan2":     "arctan2",
    "gp_hypot":     "hypot",
    "gp_logaddexp": "logaddexp",
}

# The complex recipes, by helper: what the glue computes from the library's complex functions.
# Each is computed in double (complex64: rounded once per part at the end), with NumPy's formulas.
RECIPES = {
    "gp_rsqrt": "1 / csqrt(z) by complex division",
    "gp_exp2": "cexp(x ln 2, y ln 2)",
    "gp_expm1": "expm1(x) cos(y) - 2 sin(y / 2)^2 + i exp(x) sin(y)",
    "gp_log2": "each part of clog(z) times log2(e)",
    "gp_log10": "each part of clog(z) times log10(e)",
    "gp_log1p": "log(hypot(x + 1, y)) + i atan2(y, x + 1)",
    "gp_sigmoid": "1 / (1 + cexp(-z)) by complex division",
}

# narrow dtype code -> the library's rounding from double
NARROW_ROUNDING = {"f2": "gpm_round_f16", "bf": "gpm_round_bf16", "e4": "gpm_round_e4m3fn", "e5": "gpm_round_e5m2"}
# narrow dtype code -> the suffix of the library's float32 paths for that format (kernel/math/narrow32.py)
NARROW_FORMATS = {"f2": "f16", "bf": "bf16"}


@functools.lru_cache(maxsize=None)
def narrow_entry(real: str, code: str) -> str | None:
    """The library's float32 path of function ``real`` for narrow dtype ``code`` (``gpm_exp_f16``),
    where it has one: every engine's gp_F_<code> calls it instead of the double path's rounding."""
    from .math import entry_points
    name = f"gpm_{real}_{NARROW_FORMATS[code]}" if code in NARROW_FORMATS else None
    return name if name in entry_points() else None


def library_names(helper: str, kind: str) -> list[str]:
    """The library's public functions helper ``helper`` calls on compute kind ``kind`` ('f' for
    float32/float64 and the narrow roundings, 'c' for complex): what a kernel's source must carry."""
    if helper in UNARY:
        real, cplx = UNARY[helper]
        if kind == "c":
            if cplx is None:
                return []
            uses = {"gp_rsqrt": ["gpm_csqrt_c128"], "gp_exp2": ["gpm_cexp_c128"], "gp_sigmoid": ["gpm_cexp_c128"],
                    "gp_expm1": ["gpm_expm1_f64", "gpm_exp_f64", "gpm_sin_f64", "gpm_cos_f64"],
                    "gp_log2": ["gpm_clog_c128"], "gp_log10": ["gpm_clog_c128"],
                    "gp_log1p": ["gpm_log_f64", "gpm_hypot_f64", "gpm_arctan2_f64"]}
            return uses.get(helper, [f"gpm_{cplx}_c64", f"gpm_{cplx}_c128"])
        narrow = [n for n in (narrow_entry(real, c) for c in NARROW_FORMATS) if n is not None]
        return [f"gpm_{real}_f32", f"gpm_{real}_f64", f"gpm_{real}_wide", *NARROW_ROUNDING.values(), *narrow]
    if helper in BINARY:
        name = BINARY[helper]
        return [f"gpm_{name}_f32", f"gpm_{name}_f64", f"gpm_{name}_wide", *NARROW_ROUNDING.values()]
    return []
