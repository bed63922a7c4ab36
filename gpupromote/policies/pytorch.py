"""PyTorch 2.13: dim tensors, zero-dim tensors and wrapped numbers (Python scalars).

Each category promotes within itself by ``promoteTypes``; a lower category counts only when its
kind is higher (bool < int < float < complex), and then only by kind: int32 [n] + int64 [] is
int32, int32 [n] + 5.5 is the default float (c10 ``combine_categories``, see the seed document
001). CPU scalars are folded into GPU kernels by value, kept in the opmath type (float for half).
"""
from dataclasses import replace

from .. import dtypes as D
from ..lattice import PairTable, parse_grid
from . import Policy

# c10::promoteTypes (observed, PyTorch 2.13): uint16/32/64 promote only with floats, float8 only
# with itself.
PROMOTE = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c4  c8 c16
  b1  b1  u1  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  u1  u1  u1  --  --  --  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  u2  --  --  u2  --  --  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  u4  --  --  --  u4  --  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  u8  --  --  --  --  u8  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  i1  i1  i2  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i2  i2  i2  --  --  --  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i4  i4  i4  --  --  --  i4  i4  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i8  i8  i8  --  --  --  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  e4  --  --  --  --  --  --  --  --  --  e4  --  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  --  --  --  e5  --  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f4  f4  f8  c4  c8 c16
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  f4  bf  f4  f8  c8  c8 c16
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f8  c8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  f8 c16 c16 c16
  c4  c4  c4  --  --  --  c4  c4  c4  c4  --  --  c4  c8  c8 c16  c4  c8 c16
  c8  c8  c8  --  --  --  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8  c8 c16
 c16 c16 c16  --  --  -- c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16 c16
"""

_code = lambda c: D.BY_CODE[c].name  # noqa: E731

# Kinds each op's kernels refuse (the promoted dtype's kind), as PyTorch raises for them.
_REFUSES = {
    "floor_divide": "bc", "remainder": "bc", "fmod": "bc",
    # logaddexp, hypot and nextafter have float kernels only, and (unlike atan2) do not promote
    # integer inputs to float: int tensors are refused.
    "logaddexp": "bui", "hypot": "buic", "nextafter": "buic",
    "maximum": "c", "minimum": "c", "fmax": "c", "fmin": "c",
    "less": "c", "less_equal": "c", "greater": "c", "greater_equal": "c",
    "bitwise_and": "fc", "bitwise_or": "fc", "bitwise_xor": "fc", "left_shift": "fc", "right_shift": "fc",
    "arctan2": "c", "copysign": "c",
}

TORCH = Policy(
    name="torch",
    framework="PyTorch",
    emulates="PyTorch 2.13, torch.get_default_dtype() == float32",
    operands="torch",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(d.name for d in D.ALL),
    default_float="float32",
    weak_default={"b": "bool", "i": "int64", "f": "float32", "c": "complex64"},  # wrapped numbers
    int_check="int64 or uint64",  # a Python int must fit a c10::Scalar; then it wraps into the dtype
    to_complex={"float16": "complex32", "bfloat16": "complex64", "float32": "complex64", "float64": "complex128"},
    opmath={"float16": "float32", "bfloat16": "float32", "complex32": "complex64"},
    # Note: on the CPU only mul, div and floor_divide keep a CPU scalar in float32 for half
    # tensors; add, sub, comparisons, ... cast it to the tensor's dtype first (f16 [inf] - 70000
    # is nan). PyTorch's CUDA kernels keep it in float32 for add/sub too; one plan serves both
    # devices here, and it follows the CPU, where the records come from.
    opmath_ops=frozenset({"multiply", "true_divide", "floor_divide"}),
    refuses=_REFUSES,
    int_division="raise",
    # torch.where converts a Python scalar to the result dtype with a range check ("value cannot be
    # converted to type int8_t without overflow"); arithmetic wraps it instead.
    # torch.where and pow's Scalar exponent convert the Python scalar with c10::checked_convert.
    # Which targets c10 checks a Python float against differs by op (observed).
    op_overrides={"where": {"int_check": "c10", "float_check": frozenset({"float32", "complex64", "complex32"})},
                  "power": {"int_check": "c10-exponent", "checked_operands": (1,),
                            "float_check": frozenset({"float16", "bfloat16"})}},
    op_rules={"logaddexp": "DEFAULT", "hypot": "DEFAULT", "nextafter": "DEFAULT"},
    accepts={"logaddexp": "fc"},
    operand_refuses={"subtract": "b"},  # "Subtraction, the `-` operator, with a bool tensor is not supported"
    scalar_only_kernels={"power": "b"},  # bool ** bool tensor: "pow" not implemented for 'Bool'; ** True runs
    # torch.copysign(2, t) and the other function-only ops take no Python scalar first
    # (TypeError: received an invalid combination of arguments); operators do (reflected).
    scalar_first_refused=frozenset({"copysign", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot",
                                    "logaddexp", "nextafter", "logical_and", "logical_or", "logical_xor"}),
    negative_int_refused=frozenset({"power"}),
    # at::native::result_type over a list (torch.cat, TensorIterator's common dtype) folds each
    # category left to right: uint16, int8, float32 raises where uint16, float32, int8 does not
    nary=True,
    out_rule="can_cast", inplace_rule="can_cast",  # out= and x.add_(y): the result must pass c10::canCast
    source="https://github.com/pytorch/pytorch/blob/main/c10/core/ScalarType.cpp (promoteTypes); "
           "aten/src/ATen/native/TypeProperties.cpp (ResultTypeState)",
)

TORCH_F64 = replace(
    TORCH,
    name="torch-f64",
    emulates="PyTorch 2.13, torch.set_default_dtype(torch.float64)",
    default_float="float64",
    weak_default={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
)
