"""References for the owned math library's tests: exact values (mpmath), ulp errors, and a
correctly rounding double -> narrow-format conversion that shares no code with the library.

A fast reference for a function is NumPy's float64 function (glibc's, below 1 ulp); where a
decision hinges on the last bits (the library and NumPy differ, or a narrow rounding boundary
is near), mpmath decides.
"""
from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

MP_PREC = 160


def _mpf(x):
    return mp.mpf(float(x))


def _cbrt(x):
    return -mp.cbrt(-x) if x < 0 else mp.cbrt(x)


def _logaddexp(x, y):
    if x == y and mp.isinf(x):
        return x
    m = max(x, y)
    if mp.isinf(m) and m < 0:
        return m
    if mp.isinf(m):
        return m
    d = -abs(x - y)
    return m + mp.log1p(mp.exp(d))


def _pow(x, y):
    # real power, C99 Annex F; None where the real result is NaN
    if y == 0 or x == 1:
        return mp.mpf(1)
    if x < 0:
        if y != mp.floor(y):
            return None
        r = mp.power(-x, y)
        return -r if int(mp.floor(y)) % 2 else r
    if x == 0:
        return mp.mpf(0) if y > 0 else mp.inf
    return mp.power(x, y)


def _atan2(y, x):
    return mp.atan2(y, x)


def _asin(x):
    return mp.asin(x) if abs(x) <= 1 else None


def _acos(x):
    return mp.acos(x) if abs(x) <= 1 else None


def _acosh(x):
    return mp.acosh(x) if x >= 1 else None


def _atanh(x):
    return mp.atanh(x) if abs(x) < 1 else None


def _log(f):
    def g(x):
        return f(x) if x > 0 else None
    return g


def _tan(x):
    return mp.tan(x)


EXACT = {
    "exp": mp.exp, "expm1": mp.expm1, "exp2": lambda x: mp.power(2, x),
    "log": _log(mp.log), "log1p": lambda x: mp.log1p(x) if x > -1 else None,
    "log2": _log(lambda x: mp.log(x, 2)), "log10": _log(mp.log10),
    "rsqrt": lambda x: 1 / mp.sqrt(x) if x > 0 else None, "cbrt": _cbrt,
    "sin": mp.sin, "cos": mp.cos, "tan": _tan,
    "arcsin": _asin, "arccos": _acos, "arctan": mp.atan,
    "sinh": mp.sinh, "cosh": mp.cosh, "tanh": mp.tanh,
    "arcsinh": mp.asinh, "arccosh": _acosh, "arctanh": _atanh,
    "sigmoid": lambda x: 1 / (1 + mp.exp(-x)), "erf": mp.erf,
    "arctan2": _atan2, "hypot": lambda x, y: mp.sqrt(x * x + y * y), "logaddexp": _logaddexp, "power": _pow,
}

# NumPy's float64 function (the fast reference); "sigmoid"/"rsqrt" composed in float64
NUMPY = {
    "exp": np.exp, "expm1": np.expm1, "exp2": np.exp2, "log": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": None,
    "arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp, "power": np.power,
}


def exact(name, *args):
    """The exact value of a function at float arguments, as an mpf at MP_PREC bits (or None: NaN)."""
    with mp.workprec(MP_PREC):
        margs = [_mpf(a) for a in args]
        if any(mp.isnan(a) for a in margs):
            return None
        try:
            v = EXACT[name](*margs)
        except (ValueError, ZeroDivisionError):
            return None
        if v is None:
            return None
        if isinstance(v, mp.mpc) or mp.isnan(v):
            return None
        return v


# --------------------------------------------------------------------------------------------
# Formats and ulps

FORMATS = {  # precision (bits incl. the implicit one), min normal exponent, max finite
    "f64": (53, -1022, float(np.finfo(np.float64).max)),
    "f32": (24, -126, float(np.finfo(np.float32).max)),
    "f16": (11, -14, 65504.0),
    "bf16": (8, -126, float.fromhex("0x1.fep127")),
    "e4m3fn": (4, -6, 448.0),
    "e5m2": (3, -14, 57344.0),
}


def ulp_of(v, fmt):
    """The ulp of the format at magnitude |v| (subnormals included), v an mpf or float."""
    p, emin, _ = FORMATS[fmt]
    if v == 0:
        return mp.ldexp(1, emin - p + 1)
    e = int(mp.floor(mp.log(abs(mp.mpf(v)), 2)))
    # guard the floor of log2 near powers of two
    if mp.ldexp(1, e) > abs(v):
        e -= 1
    elif mp.ldexp(1, e + 1) <= abs(v):
        e += 1
    return mp.ldexp(1, max(e, emin) - p + 1)


def ulp_error(ours, exact_value, fmt):
    """|ours - exact| in ulps of the format at the exact value (inf when one is inf and not the other)."""
    if exact_value is None:
        return 0.0 if math.isnan(float(ours)) else math.inf
    o = float(ours)
    if math.isnan(o):
        return math.inf
    _, _, fmax = FORMATS[fmt]
    if mp.isinf(exact_value) or abs(exact_value) > fmax * (1 + 2.0 ** -(FORMATS[fmt][0])):
        # beyond the format: the right answer is the overflowed value
        return 0.0 if (math.isinf(o) and (o > 0) == (exact_value > 0)) else math.inf
    if math.isinf(o):
        return math.inf
    with mp.workprec(MP_PREC):
        return float(abs(mp.mpf(o) - exact_value) / ulp_of(exact_value, fmt))


def round_exact(exact_value, fmt):
    """The exact value correctly rounded to the format, as a float (NaN for None)."""
    if exact_value is None:
        return math.nan
    if mp.isinf(exact_value):
        return float(exact_value)
    p, emin, fmax = FORMATS[fmt]
    with mp.workprec(MP_PREC):
        u = ulp_of(exact_value, fmt)
        q = exact_value / u
        n = mp.floor(q)
        frac = q - n
        if frac > 0.5 or (frac == 0.5 and int(n) % 2 == 1):
            n += 1
        v = n * u
        if abs(v) > fmax:
            if fmt == "e4m3fn":
                return math.nan
            return math.copysign(math.inf, float(exact_value))
        r = float(v)
        if r == 0:
            r = math.copysign(0.0, float(exact_value))
        return r


# --------------------------------------------------------------------------------------------
# Narrow formats: every value, and a correct rounding from double (by midpoints, exactly)

def narrow_dtype(fmt):
    return {"f16": np.float16, "bf16": getattr(ml_dtypes, "bfloat16", None),
            "e4m3fn": getattr(ml_dtypes, "float8_e4m3fn", None), "e5m2": getattr(ml_dtypes, "float8_e5m2", None)}[fmt]


@functools.lru_cache(maxsize=None)
def all_values(fmt):
    """Every bit pattern of a narrow format, as (bits, float64 values)."""
    bits_t = np.uint16 if fmt in ("f16", "bf16") else np.uint8
    bits = np.arange(np.iinfo(bits_t).max + 1, dtype=np.uint64).astype(bits_t)
    with np.errstate(invalid="ignore"):
        vals = bits.view(narrow_dtype(fmt)).astype(np.float64)
    bits.setflags(write=False)
    vals.setflags(write=False)
    return bits, vals


@functools.lru_cache(maxsize=None)
def _grid(fmt):
    bits, vals = all_values(fmt)
    finite = np.isfinite(vals) & ~np.signbit(vals)
    pos_bits = bits[finite]
    pos_vals = vals[finite]
    order = np.argsort(pos_vals, kind="stable")
    return pos_vals[order], pos_bits[order]


def round_to_narrow_bits(y, fmt):
    """float64 array -> the format's bit patterns, rounded once to nearest even; overflow to inf
    (e4m3fn: NaN), NaN to the format's NaN with the sign of the input."""
    y = np.asarray(y, dtype=np.float64)
    bits, vals = all_values(fmt)
    pos_vals, pos_bits = _grid(fmt)
    p, emin, fmax = FORMATS[fmt]
    top = fmax + 2.0 ** (math.floor(math.log2(fmax)) - p + 1)   # the next value the format lacks
    grid = np.append(pos_vals, top)
    a = np.abs(y)
    idx = np.searchsorted(grid, a, side="right") - 1      # grid[idx] <= a < grid[idx+1]
    idx = np.clip(idx, 0, len(grid) - 2)
    lo, hi = grid[idx], grid[idx + 1]
    mid = (lo + hi) / 2                                    # exact: neighbours of a narrow format
    up = (a > mid) | ((a == mid) & (idx % 2 == 1))         # the grid alternates even, odd mantissas
    k = np.where(up, idx + 1, idx)
    k = np.where(a >= grid[-1], len(grid) - 1, k)
    out_pos = np.where(k < len(pos_bits), pos_bits[np.minimum(k, len(pos_bits) - 1)], 0)
    # overflow
    if fmt == "e4m3fn":
        of_bits = 0x7F
    else:
        inf_bits = bits[np.isinf(vals) & (vals > 0)]
        of_bits = int(inf_bits[0])
    out = np.where(k >= len(pos_bits), of_bits, out_pos).astype(bits.dtype)
    sign_bit = bits.dtype.type(1 << (8 * bits.dtype.itemsize - 1))
    out = np.where(np.signbit(y), out | sign_bit, out)
    nan_bits = int(bits[np.isnan(vals) & ~np.signbit(vals)][0] if fmt != "e4m3fn" else 0x7F)
    if fmt in ("f16",):
        nan_bits = 0x7E00
    elif fmt == "bf16":
        nan_bits = 0x7FC0
    elif fmt == "e5m2":
        nan_bits = 0x7E
    out = np.where(np.isnan(y), np.where(np.signbit(y), nan_bits | int(sign_bit), nan_bits), out)
    return out.astype(bits.dtype)


# --------------------------------------------------------------------------------------------
# Float ordering: distance in representable steps between two float arrays

def ordinal(a):
    a = np.asarray(a)
    if a.dtype == np.float64:
        i = a.view(np.int64)
        return np.where(i < 0, np.int64(-0x8000000000000000) - i, i)
    i = a.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, np.int64(-0x80000000) - i, i)


def steps_apart(a, b):
    """How many representable values apart two same-type float arrays are (0 for equal, both NaN)."""
    d = np.abs(ordinal(a) - ordinal(b))
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, d)
