"""The Python Array API standard (2025.12), as array-api-strict 2.6 enforces it.

Only same-kind promotion: bool with bool, ints with ints (uint64 with no signed int), floats with
floats, and real floats with complex. A Python scalar joins an array of its kind or of a higher
one (an int with float arrays, a float with complex ones), never a bool array unless it is a
bool; an out-of-range int raises OverflowError. Each function accepts only the dtype
categories the standard lists for it (true division: floating only).
"""
from ...core import dtypes as D
from ..lattice import PairTable, parse_grid
from ...core.kinds import (BOOLEAN, COMPLEX_FLOATING, FLOATING, INTEGER_OR_BOOLEAN, NUMERIC, REAL_FLOATING,
                           REAL_NUMERIC, PromotionKind)
from ..rules.array_api import ArrayAPIRules
from . import Policy

# The standard's type promotion table (mixed-kind pairs are absent: refused).
PROMOTE = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  f4  f8  c8 c16
  b1  b1  --  --  --  --  --  --  --  --  --  --  --  --
  u1  --  u1  u2  u4  u8  i2  i2  i4  i8  --  --  --  --
  u2  --  u2  u2  u4  u8  i4  i4  i4  i8  --  --  --  --
  u4  --  u4  u4  u4  u8  i8  i8  i8  i8  --  --  --  --
  u8  --  u8  u8  u8  u8  --  --  --  --  --  --  --  --
  i1  --  i2  i4  i8  --  i1  i2  i4  i8  --  --  --  --
  i2  --  i2  i4  i8  --  i2  i2  i4  i8  --  --  --  --
  i4  --  i4  i4  i8  --  i4  i4  i4  i8  --  --  --  --
  i8  --  i8  i8  i8  --  i8  i8  i8  i8  --  --  --  --
  f4  --  --  --  --  --  --  --  --  --  f4  f8  c8 c16
  f8  --  --  --  --  --  --  --  --  --  f8  f8 c16 c16
  c8  --  --  --  --  --  --  --  --  --  c8 c16  c8 c16
 c16  --  --  --  --  --  --  --  --  -- c16 c16 c16 c16
"""

_code = lambda c: D.BY_CODE[c].name  # noqa: E731

_REAL_FLOAT = {op: REAL_FLOATING for op in ("arctan2", "hypot", "copysign", "logaddexp", "nextafter")}

# The standard's elementwise functions of one array, by category (array-api-strict has no rsqrt,
# exp2, sigmoid, erf, rint, cbrt or angle: those follow their nearest kin).
_UNARY = {
    **{op: FLOATING for op in ("sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
                               "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                               "arctanh", "sigmoid", "erf", "rint", "reciprocal")},
    **{op: REAL_FLOATING for op in ("cbrt", "signbit")},
    **{op: REAL_NUMERIC for op in ("floor", "ceil", "trunc")},
    **{op: NUMERIC for op in ("absolute", "negative", "positive", "round", "sign", "square", "conj", "real",
                              "isnan", "isinf", "isfinite")},
    "imag": COMPLEX_FLOATING, "angle": COMPLEX_FLOATING, "logical_not": BOOLEAN, "invert": INTEGER_OR_BOOLEAN,
    "clip": REAL_NUMERIC, "_clip_min": REAL_NUMERIC, "_clip_max": REAL_NUMERIC,
    # statistical functions
    **{op: NUMERIC for op in ("sum", "prod", "cumsum", "cumprod")}, "mean": FLOATING,
    **{op: REAL_FLOATING for op in ("var", "std")}, **{op: REAL_NUMERIC for op in ("max", "min", "argmax", "argmin")},
}

ARRAY_API = Policy(
    name="array-api",
    framework="the Array API standard",
    emulates="Python Array API standard 2025.12, as array-api-strict 2.6.1 enforces it",
    source="https://data-apis.org/array-api/latest/API_specification/type_promotion.html",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                      "float32", "float64", "complex64", "complex128"]),
    default_float="float64",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
    kinds={"true_divide": PromotionKind.DEFAULT, **{op: PromotionKind.DEFAULT for op in _REAL_FLOAT}},
    refuses={"floor_divide": "c", "remainder": "c", "fmod": "c"},  # NumPy's kernels underneath
    rules=ArrayAPIRules(
        # a Python scalar kind -> the array kinds it may join
        scalar_kinds={"b": BOOLEAN, "i": NUMERIC, "f": FLOATING, "c": FLOATING},
        # The standard's dtype categories per function, by their names.
        categories={"add": NUMERIC, "subtract": NUMERIC, "multiply": NUMERIC, "true_divide": FLOATING,
                    "power": NUMERIC, "floor_divide": REAL_NUMERIC, "remainder": REAL_NUMERIC, "fmod": REAL_NUMERIC,
                    "maximum": REAL_NUMERIC, "minimum": REAL_NUMERIC, "fmax": REAL_NUMERIC, "fmin": REAL_NUMERIC,
                    "less": REAL_NUMERIC, "less_equal": REAL_NUMERIC, "greater": REAL_NUMERIC,
                    "greater_equal": REAL_NUMERIC, "logical_and": BOOLEAN, "logical_or": BOOLEAN,
                    "logical_xor": BOOLEAN, "bitwise_and": INTEGER_OR_BOOLEAN, "bitwise_or": INTEGER_OR_BOOLEAN,
                    "bitwise_xor": INTEGER_OR_BOOLEAN, **_REAL_FLOAT, **_UNARY},
    ),
)
