"""PyTorch 2.13: dim tensors, zero-dim tensors and wrapped numbers (Python scalars).

Each category promotes within itself by ``promoteTypes``; a lower category counts only when its
kind is higher (bool < int < float < complex), and then only by kind: int32 [n] + int64 [] is
int32, int32 [n] + 5.5 is the default float (c10 ``combine_categories``, see the seed document
001). CPU scalars are folded into GPU kernels by value, kept in the opmath type (float for half).
"""
from dataclasses import replace

from ...core import dtypes as D
from ..lattice import PairTable, parse_grid
from ...core.kinds import PromotionKind
from ..refusals import EITHER, FIRST, ScalarRefusals
from ..rules.pytorch import TorchRules
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
    # unary: no bool kernels for abs and rounding; complex refused where torch says "use sgn", ...
    "absolute": "b", "floor": "b", "ceil": "b", "trunc": "b", "round": "c", "erf": "c",
    "clip": "c", "_clip_min": "c", "_clip_max": "c",   # "clamp is not supported for complex types"
    "max": "c", "min": "c", "argmax": "bc", "argmin": "bc",
}
# Unary ops whose kernels take more kinds than NumPy's loops: torch.sign(bool) is bool, conj of any
# dtype is itself, expit takes complex; imag is only for complex tensors.
_ACCEPTS = {"logaddexp": "fc", "sign": "buif", "conj": "buifc", "sigmoid": "buifc", "reciprocal": "buifc",
            "imag": "c", "mean": "fc", "var": "fc", "std": "fc"}

# The Python scalars PyTorch's *functions* refuse ("TypeError: maximum(): argument 'other' (position 2)
# must be Tensor, not float"; torch.eq(2, t): "eq() received an invalid combination of arguments"),
# where its operators take them (2 == t runs). Facts, found by tools/probe_scalar_refusals.py: it calls
# torch 2.13.0+cpu's function for every gp binary op with a Python bool, int, float and complex first
# and second, beside bool, int32, int64, float32, float64 and complex64 tensors. Each op refuses every
# kind alike, in the positions below (0: first); every op not listed (add, pow, bitwise_and, ...,
# torch.where's x and y) takes them all. A 0-d tensor is never refused.
# Note: torch refuses numpy scalars (np.float64(2.0)) in the same places; gpupromote takes a numpy
# scalar as the 0-d array it stands for (torch.as_tensor makes one of it), so it refuses Python scalars only.
SCALAR_REFUSALS = ScalarRefusals(to_tensor="torch.tensor", table={
    # (form, op)                        (called as,           refused: position -> Python scalar kinds)
    ("function", "fmod"):               ("torch.fmod",        FIRST),
    ("function", "maximum"):            ("torch.maximum",     EITHER),
    ("function", "minimum"):            ("torch.minimum",     EITHER),
    ("function", "fmax"):               ("torch.fmax",        EITHER),
    ("function", "fmin"):               ("torch.fmin",        EITHER),
    ("function", "equal"):              ("torch.eq",          FIRST),
    ("function", "not_equal"):          ("torch.ne",          FIRST),
    ("function", "less"):               ("torch.lt",          FIRST),
    ("function", "less_equal"):         ("torch.le",          FIRST),
    ("function", "greater"):            ("torch.gt",          FIRST),
    ("function", "greater_equal"):      ("torch.ge",          FIRST),
    ("function", "logical_and"):        ("torch.logical_and", EITHER),
    ("function", "logical_or"):         ("torch.logical_or",  EITHER),
    ("function", "logical_xor"):        ("torch.logical_xor", EITHER),
    ("function", "arctan2"):            ("torch.atan2",       EITHER),
    ("function", "hypot"):              ("torch.hypot",       EITHER),
    ("function", "copysign"):           ("torch.copysign",    FIRST),
    ("function", "logaddexp"):          ("torch.logaddexp",   EITHER),
    ("function", "nextafter"):          ("torch.nextafter",   EITHER),
})

TORCH = Policy(
    name="torch",
    framework="PyTorch",
    emulates="PyTorch 2.13, torch.get_default_dtype() == float32",
    source="https://github.com/pytorch/pytorch/blob/main/c10/core/ScalarType.cpp (promoteTypes); "
           "aten/src/ATen/native/TypeProperties.cpp (ResultTypeState)",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(d.name for d in D.ALL),
    default_float="float32",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float32", "c": "complex64"},  # wrapped numbers
    # logaddexp, hypot and nextafter do not promote integer inputs to float (unlike atan2)
    kinds={"logaddexp": PromotionKind.DEFAULT, "hypot": PromotionKind.DEFAULT, "nextafter": PromotionKind.DEFAULT,
           "reciprocal": PromotionKind.INT_TO_FLOAT,   # torch.reciprocal of an integer tensor is the default float
           # torch.mean / var / std take float and complex tensors only ("use a float dtype")
           "mean": PromotionKind.DEFAULT, "var": PromotionKind.COMPLEX_TO_FLOAT, "std": PromotionKind.COMPLEX_TO_FLOAT},
    accepts=_ACCEPTS,
    refuses=_REFUSES,
    scalar_refusals=SCALAR_REFUSALS,
    rules=TorchRules(),
)

TORCH_F64 = replace(
    TORCH,
    name="torch-f64",
    emulates="PyTorch 2.13, torch.set_default_dtype(torch.float64)",
    default_float="float64",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
)
