"""The Python Array API standard (2025.12), as array-api-strict 2.6 enforces it.

Only same-kind promotion: bool with bool, ints with ints (uint64 with no signed int), floats with
floats, and real floats with complex. A Python scalar joins an array of its kind or of a higher
one (an int with float arrays, a float with complex ones), never a bool array unless it is a
bool; an out-of-range int raises OverflowError. Each function accepts only the dtype
categories the standard lists for it (true division: floating only).
"""
from .. import dtypes as D
from ..lattice import PairTable, parse_grid
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

_REAL_FLOAT = {op: "f" for op in ("arctan2", "hypot", "copysign", "logaddexp", "nextafter")}

ARRAY_API = Policy(
    name="array-api",
    framework="the Array API standard",
    emulates="Python Array API standard 2025.12, as array-api-strict 2.6.1 enforces it",
    operands="array-api",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                      "float32", "float64", "complex64", "complex128"]),
    default_float="float64",
    weak_default={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
    int_check="target",
    # NumPy underneath raises for negative powers; array-api-strict itself for negative shifts
    negative_int_refused=frozenset({"power", "left_shift", "right_shift"}),
    negative_power_arrays_refused=True,
    check_array_kinds=True,  # array-api-strict checks the arrays' dtypes before a Python scalar joins,
    refuses={"floor_divide": "c", "remainder": "c", "fmod": "c"},  # then NumPy's kernels decide
    scalar_kinds={"b": "b", "i": "uifc", "f": "fc", "c": "fc"},
    negative_shift_arrays_refused=True,  # bitwise_left_shift: "only defined for x2 >= 0", arrays too
    nary=True,  # xp.result_type(*arrays_and_dtypes)
    inplace_rule="same_dtype",  # "x1 += x2" must not change x1's dtype (array-api-strict: TypeError)
    op_rules={"true_divide": "DEFAULT", **{op: "DEFAULT" for op in _REAL_FLOAT}},
    # The standard's dtype categories per function (numeric = no bool).
    accepts={"add": "uifc", "subtract": "uifc", "multiply": "uifc", "true_divide": "fc", "power": "uifc",
             "floor_divide": "uif", "remainder": "uif", "fmod": "uif",
             "maximum": "uif", "minimum": "uif", "fmax": "uif", "fmin": "uif",
             "less": "uif", "less_equal": "uif", "greater": "uif", "greater_equal": "uif",
             "logical_and": "b", "logical_or": "b", "logical_xor": "b",
             "bitwise_and": "bui", "bitwise_or": "bui", "bitwise_xor": "bui", **_REAL_FLOAT},
    source="https://data-apis.org/array-api/latest/API_specification/type_promotion.html",
)
