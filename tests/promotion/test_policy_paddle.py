"""The ``paddle`` policy against what PaddlePaddle 3.3.1 (dynamic mode, CPU) does.

Golden grids (rows = first operand, 2-char dtype codes, ``--`` = refused), observed on Paddle
3.3.1 (tests/observed). Paddle's CPU build lacks some kernels (float16/bfloat16 add, every
float8 kernel); there the grids hold the dtype the promotion rule gives, as the policy does.
Examples: one line each, ``op(a, b)  result``; ``int8[n]`` is a tensor, ``int8[]`` a 0-d tensor,
anything else a Python scalar; the result is a dtype, ``error`` (any exception) or an exception
name. A failure lists every cell or line that differs.
"""

import pytest

import gpupromote as gp
from gpupromote.promotion.policies import get_policy
from tests.support.grid import assert_examples, assert_grid, parse

# Tensor + tensor (the seed's first table, NeedTypePromotion): floats promote with floats,
# complex with anything, every other mix of dtypes is a TypeError.
PADDLE_ADD = """
      b1  u1  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  --  --  --  --  --  --  --  --  --  --  --  c8 c16
  u1  --  u1  --  --  --  --  --  --  --  --  --  --  c8 c16
  i1  --  --  i1  --  --  --  --  --  --  --  --  --  c8 c16
  i2  --  --  --  i2  --  --  --  --  --  --  --  --  c8 c16
  i4  --  --  --  --  i4  --  --  --  --  --  --  --  c8 c16
  i8  --  --  --  --  --  i8  --  --  --  --  --  --  c8 c16
  e4  --  --  --  --  --  --  e4  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  e5  --  --  --  --  --  --
  f2  --  --  --  --  --  --  --  --  f2  f4  f4  f8  c8 c16
  bf  --  --  --  --  --  --  --  --  f4  bf  f4  f8  c8 c16
  f4  --  --  --  --  --  --  --  --  f4  f4  f4  f8  c8 c16
  f8  --  --  --  --  --  --  --  --  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16
"""

# Tensor + 0-d tensor (columns are 0-d): add is in support_promotion_ops, so a 0-d tensor of the
# tensor's kind (int, float, complex) takes the tensor's dtype; bool, another kind, or float8
# goes through promoteTypes, which knows no float8.
PADDLE_ADD_ZERO_DIM = """
      b1  u1  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  u1  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u1  u1  u1  u1  --  --  f2  bf  f4  f8  c8 c16
  i1  i1  i1  i1  i1  i1  i1  --  --  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i2  i2  i2  i2  --  --  f2  bf  f4  f8  c8 c16
  i4  i4  i4  i4  i4  i4  i4  --  --  f2  bf  f4  f8  c8 c16
  i8  i8  i8  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c8 c16
  e4  --  --  --  --  --  --  e4  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  e5  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f2  f2  f2  c8 c16
  bf  bf  bf  bf  bf  bf  bf  --  --  bf  bf  bf  bf  c8 c16
  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f4  c8 c16
  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8  c8
 c16 c16 c16 c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16
"""

# 0-d + 0-d for add, and any 0-d operand of floor_divide: phi::promoteTypes itself, which does
# promote int with int (uint8 + int8 -> int16).
PADDLE_PROMOTE_TYPES = """
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

# Tensor + Python scalar through the operators (the seed's second table): a scalar of the
# tensor's kind or lower takes the tensor's dtype; a float makes an int or bool tensor float32,
# an int makes a bool tensor int64, a complex gives complex64 (complex128 from float64).
PADDLE_SCALARS = """
       True     1   1.5  1+2j
  b1     b1    i8    f4    c8
  u1     u1    u1    f4    c8
  i1     i1    i1    f4    c8
  i2     i2    i2    f4    c8
  i4     i4    i4    f4    c8
  i8     i8    i8    f4    c8
  e4     --    --    --    --
  e5     --    --    --    --
  f2     f2    f2    f2    c8
  bf     bf    bf    bf    c8
  f4     f4    f4    f4    c8
  f8     f8    f8    f8   c16
  c8     c8    c8    c8    c8
 c16    c16   c16   c16   c16
"""


def test_add_grid():
    assert_grid(PADDLE_ADD, "paddle", "add")


def test_add_grid_zero_dim():
    assert_grid(PADDLE_ADD_ZERO_DIM, "paddle", "add", zero_dim_column=True)


def _code(operands, op):
    try:
        return gp.result_type(*operands, op=op, policy="paddle").code
    except (TypeError, OverflowError):
        return "--"


@pytest.mark.parametrize("op, zero_dim_rows", [("add", True), ("floor_divide", False)])
def test_promote_types_grid(op, zero_dim_rows):
    diffs = []
    for (a, b), want in parse(PADDLE_PROMOTE_TYPES).items():
        if op == "floor_divide" and (want.startswith("c") or want == "b1"):
            want = "--"  # no floor of a complex number; no bool kernel (the records: "not registered")
        got = _code((gp.spec(a, ndim=0 if zero_dim_rows else 1), gp.spec(b, ndim=0)), op)
        if got != want:
            diffs.append(f"  {op}({a}{'[]' if zero_dim_rows else ''}, {b}[]): expected {want}, got {got}")
    assert not diffs, f"{len(diffs)} cells differ\n" + "\n".join(diffs)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "equal", "less"])
def test_scalar_grid(op):
    diffs = []
    for (a, value), want in parse(PADDLE_SCALARS).items():
        if op in ("equal", "less") and want != "--":
            want = "b1"  # the logic rule: the same promotion, a bool result
        if op == "subtract" and want == "b1":
            want = "--"  # no bool - bool
        for operands in ((gp.spec(a), eval(value)), (eval(value), gp.spec(a))):
            got = _code(operands, op)
            if got != want:
                diffs.append(f"  {op}{tuple(map(str, operands))}: expected {want}, got {got}")
    assert not diffs, f"{len(diffs)} cells differ\n" + "\n".join(diffs)


EXAMPLES = """
    # Divide rule: an int quotient is float32, whatever the ints; bool / bool stays bool.
    true_divide(int32[n], int32[n])      float32
    true_divide(int64[n], int64[n])      float32
    true_divide(int8[n], int64[])        float32
    true_divide(bool[n], int32[])        float32
    true_divide(bool[n], bool[n])        bool
    true_divide(bool[n], True)           bool
    true_divide(int32[n], 1)             float32
    true_divide(int32[n], int64[n])      error
    true_divide(float64[], 1+2j)         complex64   # the scalar is a shape-[1] complex64 tensor
    add(float64[], 1+2j)                 complex128  # + builds it in the tensor's dtype

    # Logic rule: comparisons and logical ops promote as above and give bool, complex included.
    equal(float16[n], float32[n])        bool
    equal(int32[n], complex64[n])        bool
    less(int32[n], int64[])              bool
    equal(int32[n], int64[n])            error
    logical_and(float32[n], float64[n])  bool
    logical_and(int32[n], int64[])       error       # logical ops treat 0-d tensors as tensors
    equal(uint8[n], 1.5)                 bool

    # 0-d tensors act as scalars only for the ops in support_promotion_ops.
    add(int32[n], int64[])               int32
    add(int64[], int32[n])               int32
    add(int32[], int64[])                int64       # both 0-d: promoteTypes
    add(uint8[], int8[])                 int16
    add(int32[n], float64[])             float64     # another kind: promoteTypes
    add(float32[n], float64[])           float32
    add(complex64[n], complex128[])      complex64
    add(complex64[n], float64[])         complex128
    remainder(int32[n], int64[])         int32
    power(int32[n], int64[])             int32
    copysign(int8[n], int64[])           int8
    floor_divide(int32[n], int64[])      int64       # GetPromoteDtype sees elementwise_floordiv
    floor_divide(uint8[n], int8[])       int16
    maximum(int32[n], int64[])           error       # not in support_promotion_ops
    maximum(float32[n], float64[])       float64
    where(int32[n], int64[])             error
    arctan2(float32[n], float64[])       float64
    logaddexp(float32[n], float64[])     float64
    hypot(int32[n], int64[])             float32     # pow, add (0-d as scalar), sqrt of int
    hypot(float32[n], float64[])         float32
    hypot(int32[n], float64[])           float64

    # Float-only ops on ints, and ops with int kernels of their own.
    arctan2(int32[n], int32[n])          float64     # atan2's int kernels compute in double
    hypot(int32[n], int32[n])            float32
    logaddexp(int64[n], int64[n])        float32
    copysign(int32[n], int32[n])         int32
    remainder(complex64[n], complex64[n]) complex64

    # Ops outside the type-promotion white list do not promote.
    bitwise_and(int32[n], int32[n])      int32
    bitwise_and(int32[n], int64[n])      error
    bitwise_or(uint8[n], int8[])         error

    # Python scalars: each function its own way.
    where(1, int64[n])                   int64       # paddle.to_tensor(1) is int64
    where(1, int32[n])                   error
    where(1.5, float16[n])               float32     # a float32 tensor, promoted as a tensor
    where(1+2j, int32[n])                complex64
    where(True, 1)                       error
    copysign(int32[n], 1.5)              int32       # to_tensor(1.5, dtype=int32)
    copysign(float8_e4m3fn[n], 1.5)      error       # NumPy cannot build float8
    bitwise_and(True, int8[n])           int8        # __rand__: to_tensor(True, dtype=int8)
    bitwise_and(1.5, int8[n])            error
    maximum(float32[n], 1.5)             error       # paddle.maximum takes tensors only
    hypot(float32[n], 1.5)               error
    add(float8_e4m3fn[n], 1)             error
    add(float8_e4m3fn[n], float32[n])    error
    add(float8_e4m3fn[n], complex64[n])  error       # promoteTypes knows no float8

    # Python ints: + - * and tensor / int go through a double and wrap; full/to_tensor paths
    # take only int64; integer division by a value that wraps to 0 raises.
    add(int8[n], 300)                    int8
    add(int8[n], 9223372036854775808)    int8
    true_divide(int8[n], 9223372036854775808) float32
    true_divide(9223372036854775808, int8[n]) OverflowError  # __rtruediv__ builds a full tensor
    equal(int8[n], 9223372036854775808)  OverflowError
    where(9223372036854775808, int64[n]) OverflowError
    power(float32[n], 9223372036854775808) OverflowError
    floor_divide(int32[n], 1099511627776) ZeroDivisionError
    remainder(int32[n], 1099511627776)   ZeroDivisionError
    floor_divide(int64[n], 1099511627776) int64
    copysign(bfloat16[n], 9223372036854775808) error
    copysign(float32[n], 9223372036854775808) float32
"""

def test_examples():
    assert_examples(EXAMPLES, "paddle")


def test_errors_name_policy_op_and_cast():
    with pytest.raises(gp.PromotionError) as exc:
        gp.result_type(gp.spec("int64"), gp.spec("float32"), op="add", policy="paddle")
    msg = str(exc.value)
    assert "'paddle'" in msg and "add(" in msg and "int64" in msg and "float32" in msg and "astype" in msg


def test_every_op_has_a_route():
    pol = get_policy("paddle")
    assert set(pol.rules.routes) == set(gp.OPS)
