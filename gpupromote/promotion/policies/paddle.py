"""PaddlePaddle 3.3.1 (dynamic mode), as its type promotion document describes it (seed 000) and
as its source decides it (paddle/phi/common/type_promotion.h, the eager type-promotion white
list, paddle/fluid/pybind/eager_math_op_patch.cc, python/paddle/tensor/*.py).

Paddle has one promotion table, ``promoteTypes``, and several code paths that decide whether to
use it. Which path an op takes depends on the op and on the kind of each operand:

* two tensors (NeedTypePromotion): equal dtypes stay; otherwise an op in the type-promotion
  white list promotes only float with float, or complex with anything ("Type promotion only
  support calculations between floating-point numbers and between complex and real numbers"),
  by ``promoteTypes``; an op outside the list (bitwise, shifts) does not promote at all.
* a 0-d tensor: for the ops in ``support_promotion_ops`` it acts as a scalar. Of the other
  tensor's kind (int, float, complex) it takes that tensor's dtype, else (and when both are
  0-d) ``promoteTypes`` decides, even between ints. For every other op it is a tensor.
* a Python scalar: the Tensor operators cast the tensor first (float scalar: an int or bool
  tensor becomes float32; int scalar: a bool tensor becomes int64; complex: a real tensor
  becomes complex) and then run on one dtype: the seed's tensor-to-scalar table. Functions
  differ: ``paddle.where`` makes a tensor of the scalar's default dtype, ``paddle.copysign`` and
  the reflected bitwise operators convert it to the tensor's dtype, most others refuse it.

The divide rule (an int quotient is float32, bool / bool stays bool) and the logic rule (bool
results) are promotion kinds; ops that Paddle composes from others (hypot, logaddexp) follow
the op whose rule decides their dtype.
"""
from ...core import dtypes as D
from ..lattice import PairTable, parse_grid
from ...core.kinds import PromotionKind
from ..refusals import EITHER, FIRST, ScalarRefusals
from ..rules.paddle import TO_TENSOR, PaddleRules
from ..rules.paddle import TensorRoute as T
from ..rules.paddle import ZeroDimRoute as Z
from . import Policy

# phi::promoteTypes (paddle/phi/common/type_promotion.h), the table every promoting path looks
# up; rows = first operand. Float8 is not in it: DataTypeToNum raises "Invalid enum data type
# for type promote", so float8 promotes with nothing.
PROMOTE_TYPES = """
      b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c8 c16
  b1  b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c8 c16
  u1  u1  u1  i2  i2  i4  i8  f2  bf  f4  f8  c8 c16
  i1  i1  i2  i1  i2  i4  i8  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i2  i2  i4  i8  f2  bf  f4  f8  c8 c16
  i4  i4  i4  i4  i4  i4  i8  f2  bf  f4  f8  c8 c16
  i8  i8  i8  i8  i8  i8  i8  f2  bf  f4  f8  c8 c16
  f2  f2  f2  f2  f2  f2  f2  f2  f4  f4  f8  c8 c16
  bf  bf  bf  bf  bf  bf  bf  f4  bf  f4  f8  c8 c16
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""

# Tensor-to-scalar through the Tensor operators (+ - * / // % ** == != < <= > >=): the seed's
# second table, tensor dtype x Python scalar kind (b i f c). Float8 takes no Python scalar: the
# functions that accept one (floor_divide, equal, where) raise in promoteTypes, which knows no
# float8, and the operators find no float8 kernel.
# zc: a complex scalar against a 0-d tensor, where the operator builds the scalar as a shape-[1]
# complex64 tensor (/ // % ** and the comparisons; + - * build it in the tensor's shape): the
# 0-d tensor is then the "scalar" of support_promotion_ops and takes complex64.
SCALARS = """
       b   i   f   c  zc
  b1  b1  i8  f4  c8  c8
  u1  u1  u1  f4  c8  c8
  i1  i1  i1  f4  c8  c8
  i2  i2  i2  f4  c8  c8
  i4  i4  i4  f4  c8  c8
  i8  i8  i8  f4  c8  c8
  e4  --  --  --  --  --
  e5  --  --  --  --  --
  f2  f2  f2  f2  c8  c8
  bf  bf  bf  bf  c8  c8
  f4  f4  f4  f4  c8  c8
  f8  f8  f8  f8 c16  c8
  c8  c8  c8  c8  c8  c8
 c16 c16 c16 c16 c16  c8
"""

# Tensor-to-scalar by conversion, paddle.to_tensor(value, dtype=x.dtype) (paddle.copysign, the
# reflected bitwise operators): the scalar takes the tensor's dtype. NumPy cannot build float8
# from a Python number, and a complex value is not converted (copysign has no complex kernel).
CONVERTS = """
       b   i   f   c
  b1  b1  b1  b1  --
  u1  u1  u1  u1  --
  i1  i1  i1  i1  --
  i2  i2  i2  i2  --
  i4  i4  i4  i4  --
  i8  i8  i8  i8  --
  e4  --  --  --  --
  e5  --  --  --  --
  f2  f2  f2  f2  --
  bf  bf  bf  bf  --
  f4  f4  f4  f4  --
  f8  f8  f8  f8  --
  c8  c8  c8  c8  --
 c16 c16 c16 c16  --
"""

_code = lambda c: D.BY_CODE[c].name  # noqa: E731


def _scalar_cells(text, kinds=("b", "i", "f", "c", "zc")):
    lines = [ln.split() for ln in text.strip().splitlines()]
    return {(_code(row[0]), kind): _code(cell) for row in lines[1:] for kind, cell in zip(lines[0], row[1:])
            if cell != "--" and kind in kinds}


_OPERATORS = _scalar_cells(SCALARS)
_SAME_SHAPE_OPERATORS = _scalar_cells(SCALARS, kinds=("b", "i", "f", "c"))  # + - *
_CONVERT = _scalar_cells(CONVERTS)
_CONVERT_INT = _scalar_cells(CONVERTS, kinds=("b", "i"))  # why: __rand__ & co. take only int and bool

# How each op reaches its kernel, by operand kind (the columns are read by promotion/rules/paddle.py,
# which defines the routes):
#   tensors    T.PROMOTE: the op is in the eager type-promotion white list (NeedTypePromotion);
#              T.EXACT: it is not, so two tensors must have one dtype
#   zero-dim   how a 0-d tensor meets a tensor: Z.TENSOR like any tensor; Z.SCALAR: the op is in
#              support_promotion_ops, a 0-d tensor of the other's kind takes the other's dtype,
#              else promoteTypes; Z.PROMOTE: promoteTypes always (floor_divide: GetPromoteDtype
#              looks up its fluid name, elementwise_floordiv, which is not in that list)
#   scalars    a Python scalar: a (tensor dtype, scalar kind) -> dtype table (missing cells are
#              refused; a 0-d tensor looks up "z" + kind first); TO_TENSOR: paddle.to_tensor
#              makes a tensor of its default dtype, which then meets the other operand as a
#              tensor; None: the function takes no Python scalars
#
# Note: where an op has both an operator and a function, and the function converts a Python
# scalar its own way, the operator's rule is held (it is the seed's tensor-to-scalar rule):
#   paddle.floor_divide(x, 1)    to_tensor(1) is an int64 0-d tensor: uint8 x gives int64 (x // 1: uint8)
#   paddle.remainder(x, 1.5)     full([], 1.5, x.dtype): int32 x stays int32 (x % 1.5: float32)
#   paddle.pow(x, 1.5)           a pow kernel attribute: int32 x stays int32 (x ** 1.5: float32);
#                                a complex exponent is refused (x ** 1j: complex64), and so is 2**63
#
#   op                (tensors,   zero-dim, scalars)
ROUTES = {
    "add":            (T.PROMOTE, Z.SCALAR,  _SAME_SHAPE_OPERATORS),
    "subtract":       (T.PROMOTE, Z.SCALAR,  _SAME_SHAPE_OPERATORS),
    "multiply":       (T.PROMOTE, Z.SCALAR,  _SAME_SHAPE_OPERATORS),
    "true_divide":    (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "floor_divide":   (T.PROMOTE, Z.PROMOTE, _OPERATORS),
    "remainder":      (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "fmod":           (T.PROMOTE, Z.SCALAR,  _OPERATORS),  # Note: Paddle has no fmod; remainder's path
    "power":          (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "equal":          (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "not_equal":      (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "less":           (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "less_equal":     (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "greater":        (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "greater_equal":  (T.PROMOTE, Z.SCALAR,  _OPERATORS),
    "copysign":       (T.PROMOTE, Z.SCALAR,  _CONVERT),
    "hypot":          (T.PROMOTE, Z.SCALAR,  None),        # why: sqrt(x**2 + y**2): add decides
    "maximum":        (T.PROMOTE, Z.TENSOR,  None),
    "minimum":        (T.PROMOTE, Z.TENSOR,  None),
    "fmax":           (T.PROMOTE, Z.TENSOR,  None),
    "fmin":           (T.PROMOTE, Z.TENSOR,  None),
    "logical_and":    (T.PROMOTE, Z.TENSOR,  None),
    "logical_or":     (T.PROMOTE, Z.TENSOR,  None),
    "logical_xor":    (T.PROMOTE, Z.TENSOR,  None),
    "arctan2":        (T.PROMOTE, Z.TENSOR,  None),        # why: atan2 broadcasts a 0-d tensor first
    "logaddexp":      (T.PROMOTE, Z.TENSOR,  None),        # why: log1p(exp(-|x-y|)) + maximum(x, y)
    "nextafter":      (T.PROMOTE, Z.TENSOR,  None),
    "where":          (T.PROMOTE, Z.TENSOR,  TO_TENSOR),    # why: where broadcasts x and y first
    "bitwise_and":    (T.EXACT,   Z.TENSOR,  _CONVERT_INT),
    "bitwise_or":     (T.EXACT,   Z.TENSOR,  _CONVERT_INT),
    "bitwise_xor":    (T.EXACT,   Z.TENSOR,  _CONVERT_INT),
    "left_shift":     (T.EXACT,   Z.TENSOR,  _CONVERT_INT),
    "right_shift":    (T.EXACT,   Z.TENSOR,  _CONVERT_INT),
}

# The Python scalars Paddle's functions refuse where its operators take them ("ValueError: (InvalidArgument)
# add(): argument 'y' (position 1) must be Tensor, but got int"), and the one operator that refuses
# one (x & 1; 1 & x runs). Only what the records show (tests/observed/paddle-default.jsonl.gz,
# records whose error says "must be Tensor"): every kind alike, but paddle.remainder, which takes a
# bool, int or float second and refuses a complex one. Ops without such records are not listed,
# though Paddle may refuse them too (paddle.greater_equal(x, 1), x | 1); where Paddle refuses a
# scalar with another error (paddle.atan2, paddle.hypot: AttributeError / "must be tensor type"),
# ROUTES says so (their scalars column is None).
SCALAR_REFUSALS = ScalarRefusals(to_tensor="paddle.to_tensor", table={
    # (form, op)                        (called as,                    refused: position -> Python scalar kinds)
    ("function", "add"):                ("paddle.add",                 EITHER),
    ("function", "subtract"):           ("paddle.subtract",            EITHER),
    ("function", "multiply"):           ("paddle.multiply",            EITHER),
    ("function", "true_divide"):        ("paddle.divide",              EITHER),
    ("function", "floor_divide"):       ("paddle.floor_divide",        FIRST),
    ("function", "remainder"):          ("paddle.remainder",           {0: "bifc", 1: "c"}),
    ("function", "power"):              ("paddle.pow",                 FIRST),
    ("function", "maximum"):            ("paddle.maximum",             EITHER),
    ("function", "minimum"):            ("paddle.minimum",             EITHER),
    ("function", "fmax"):               ("paddle.fmax",                EITHER),
    ("function", "fmin"):               ("paddle.fmin",                EITHER),
    ("function", "equal"):              ("paddle.equal",               FIRST),
    ("function", "less"):               ("paddle.less",                EITHER),
    ("function", "logical_and"):        ("paddle.logical_and",         EITHER),
    ("function", "logical_xor"):        ("paddle.logical_xor",         EITHER),
    ("function", "bitwise_and"):        ("paddle.bitwise_and",         EITHER),
    ("function", "bitwise_or"):         ("paddle.bitwise_or",          EITHER),
    ("function", "left_shift"):         ("paddle.bitwise_left_shift",  EITHER),
    ("function", "logaddexp"):          ("paddle.logaddexp",           EITHER),
    ("function", "nextafter"):          ("paddle.nextafter",           EITHER),
    ("operator", "bitwise_and"):        ("&",                          {1: "bifc"}),
})

PADDLE = Policy(
    name="paddle",
    framework="PaddlePaddle",
    emulates="PaddlePaddle 3.3.1, dynamic mode",
    source="https://www.paddlepaddle.org.cn/documentation/docs/en/develop/guides/advanced/auto_type_promotion_en.html; "
           "paddle/phi/common/type_promotion.h, paddle/fluid/pybind/eager_math_op_patch.cc (Paddle 3.3.1)",
    promote=PairTable(parse_grid(PROMOTE_TYPES, _code)),
    dtypes=frozenset(["bool", "uint8", "int8", "int16", "int32", "int64", "float8_e4m3fn", "float8_e5m2",
                      "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]),
    default_float="float32",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float32", "c": "complex64"},
    # Divide rule: an int quotient is float32 (GetPromoteDtype), bool / bool stays bool.
    # copysign keeps int dtypes (Paddle has int kernels); the float-only ops compute ints in float32.
    kinds={"true_divide": PromotionKind.INT_TO_FLOAT_UNLESS_BOOL, "copysign": PromotionKind.DEFAULT,
           "reciprocal": PromotionKind.INT_TO_FLOAT,
           # paddle.mean and paddle.var keep an integer (and bool) dtype; paddle.std of ints is float32
           "mean": PromotionKind.DEFAULT, "var": PromotionKind.COMPLEX_TO_FLOAT,
           "std": PromotionKind.INT_TO_FLOAT_REAL},
    # Paddle's remainder has complex kernels; hypot is sqrt(x**2 + y**2), complex as add makes it.
    # paddle.neg of a bool tensor is bool; its sigmoid takes complex.
    accepts={"true_divide": "bfc", "remainder": "uifc", "hypot": "fc", "copysign": "buif", "negative": "buifc",
             "sigmoid": "buifc"},
    # No complex order (maximum, fmax, ...), no bitwise ops on floats, no bool floor_divide,
    # remainder or pow: Paddle has no such kernels ("kernel ... not registered").
    refuses={"floor_divide": "b", "remainder": "b", "power": "b",
             "maximum": "c", "minimum": "c", "fmax": "c", "fmin": "c", "arctan2": "c", "logaddexp": "c",
             "nextafter": "c", "bitwise_and": "fc", "bitwise_or": "fc", "bitwise_xor": "fc",
             "left_shift": "fc", "right_shift": "fc"},
    scalar_refusals=SCALAR_REFUSALS,
    rules=PaddleRules(routes=ROUTES),
)
