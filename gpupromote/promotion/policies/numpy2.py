"""NumPy 2 (NEP 50) with ml_dtypes for bfloat16 and float8.

Arrays and 0-d arrays are strong; Python scalars are weak: they take the array's dtype when their
kind is not higher, and an out-of-range Python int raises OverflowError. NumPy's promotion is not
a lattice (int8, uint8, float16 -> float16 in any order), so it is written as a pair table and
n-ary promotion takes the least dtype every operand promotes into.
"""
from ...core import dtypes as D
from ..lattice import PairTable, parse_grid
from ...core.kinds import PromotionKind
from ..rules.numpy2 import NumPyRules
from . import Policy

# np.promote_types over the dtypes NumPy and ml_dtypes have (observed, NumPy 2.4.6 / ml_dtypes 0.6.0).
PROMOTE = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  f4  f4  f4  f4  f4  f8  c8 c16
  u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  f8  f8  f8  f8  f8  f8 c16 c16
  u8  u8  u8  u8  u8  u8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8 c16 c16
  i1  i1  i2  i4  i8  f8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i4  i8  f8  i2  i2  i4  i8  f4  f4  f4  f4  f4  f8  c8 c16
  i4  i4  i4  i4  i8  f8  i4  i4  i4  i8  f8  f8  f8  f8  f8  f8 c16 c16
  i8  i8  i8  i8  i8  f8  i8  i8  i8  i8  f8  f8  f8  f8  f8  f8 c16 c16
  e4  e4  e4  f4  f8  f8  e4  f4  f8  f8  e4  f4  f4  f4  f4  f8  c8 c16
  e5  e5  e5  f4  f8  f8  e5  f4  f8  f8  f4  e5  f4  f4  f4  f8  c8 c16
  f2  f2  f2  f4  f8  f8  f2  f4  f8  f8  f4  f4  f2  f4  f4  f8  c8 c16
  bf  bf  bf  f4  f8  f8  bf  f4  f8  f8  f4  f4  f4  bf  f4  f8  c8 c16
  f4  f4  f4  f4  f8  f8  f4  f4  f8  f8  f4  f4  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8 c16 c16  c8  c8 c16 c16  c8  c8  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""

# np.result_type, which np.where uses: ml_dtypes registers fewer common dtypes than it has
# ufunc casts, so bfloat16 and float8_e4m3fn meet wider ints and other narrow floats with a
# DTypePromotionError here while add() finds a float32 loop (observed).
RESULT_TYPE = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  --  f4  f4  --  f4  f8  c8 c16
  u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  --  f8  f8  --  f8  f8 c16 c16
  u8  u8  u8  u8  u8  u8  f8  f8  f8  f8  --  f8  f8  --  f8  f8 c16 c16
  i1  i1  i2  i4  i8  f8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i4  i8  f8  i2  i2  i4  i8  --  f4  f4  --  f4  f8  c8 c16
  i4  i4  i4  i4  i8  f8  i4  i4  i4  i8  --  f8  f8  --  f8  f8 c16 c16
  i8  i8  i8  i8  i8  f8  i8  i8  i8  i8  --  f8  f8  --  f8  f8 c16 c16
  e4  e4  e4  --  --  --  e4  --  --  --  e4  --  --  --  f4  f8  c8 c16
  e5  e5  e5  f4  f8  f8  e5  f4  f8  f8  --  e5  f4  --  f4  f8  c8 c16
  f2  f2  f2  f4  f8  f8  f2  f4  f8  f8  --  f4  f2  --  f4  f8  c8 c16
  bf  bf  bf  --  --  --  bf  --  --  --  --  --  --  bf  f4  f8  c8 c16
  f4  f4  f4  f4  f8  f8  f4  f4  f8  f8  f4  f4  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8 c16 c16  c8  c8 c16 c16  c8  c8  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""

_code = lambda c: D.BY_CODE[c].name  # noqa: E731

NUMPY = Policy(
    name="numpy",
    framework="NumPy",
    emulates="NumPy 2.4 (NEP 50) with ml_dtypes 0.6 for bfloat16 and float8",
    source="https://numpy.org/neps/nep-0050-scalar-promotion.html",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(d.name for d in D.ALL if d.name != "complex32"),
    default_float="float64",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
    kinds={"true_divide": PromotionKind.INT_TO_DEFAULT_FLOAT},
    refuses={"floor_divide": "c", "remainder": "c", "fmod": "c"},
    rules=NumPyRules(
        result_type=PairTable(parse_grid(RESULT_TYPE, _code)),
        # ml_dtypes' bfloat16 and float8_e4m3fn meet a Python float as float64 in np.result_type
        result_type_upcast={("bfloat16", "f"): "float64", ("float8_e4m3fn", "f"): "float64",
                            ("float8_e5m2", "f"): "float32"},
        # Note: ml_dtypes' types do not take part in NEP 50's weak-float rule: a Python float meets
        # them as a float32-like abstract float (bfloat16 [256] + 1.0001 gives float32 257.0001).
        weak_upcast={("bfloat16", "f"): "float32", ("float8_e4m3fn", "f"): "float32",
                     ("float8_e5m2", "f"): "float32"},
        # ufunc loop selection: the first loop every input casts to safely. Float-only ufuncs start
        # at float16 (int8 -> float16, int16 -> float32), so int8 with uint8 reads as float16 there,
        # not as float(int16); true_divide has its own resolver (float64).
        to_float={"bool": "float16", "uint8": "float16", "int8": "float16", "uint16": "float32",
                  "int16": "float32"},
        # ml_dtypes converts a Python int through a C long: "TypeError: expected number, got int".
        int_via_long=frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"}),
    ),
)
