"""TensorFlow RFC 431 policies (tf-all, tf-safe, tf-none) against what TensorFlow 2.21 does.

Golden grids: ``a + b`` for two tensors with dimensions (rows = a), observed on TensorFlow 2.21
with experimental_enable_numpy_behavior(dtype_conversion_mode=...) (tests/observed). ``--``
is an error: a refused promotion, or no kernel (AddV2 has none for bool or float8).
Examples: one line each, ``op(a, b)  result``; ``int8[n]`` is a tensor, ``int8[]`` a 0-d tensor,
anything else a Python scalar; the result is a dtype, ``error`` (any exception) or
``OverflowError``. A failure lists every line that differs.
"""

import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from tests.support.grid import assert_examples, assert_grid

TF_ALL_ADD = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  --  u1  u2  u4  u8  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c8 c16
  u8  u8  u8  u8  u8  u8  f8  f8  f8  f8  --  --  f2  bf  f4  f8  c8 c16
  i1  i1  i2  i4  i8  f8  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i4  i8  f8  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  i4  i4  i4  i4  i8  f8  i4  i4  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  i8  i8  i8  i8  i8  f8  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c8 c16
  e4  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f4  f4  f8  c8 c16
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  f4  bf  f4  f8  c8 c16
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16
"""

TF_SAFE_ADD = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  --  u1  u2  u4  u8  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u2  u4  u8  --  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  u2  u2  u2  u2  u4  u8  --  --  i4  i8  --  --  --  --  f4  f8  c8 c16
  u4  u4  u4  u4  u4  u8  --  --  --  i8  --  --  --  --  --  f8  -- c16
  u8  u8  u8  u8  u8  u8  --  --  --  --  --  --  --  --  --  --  --  --
  i1  i1  --  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c8 c16
  i2  i2  i2  --  --  --  i2  i2  i4  i8  --  --  --  --  f4  f8  c8 c16
  i4  i4  i4  i4  --  --  i4  i4  i4  i8  --  --  --  --  --  f8  -- c16
  i8  i8  i8  i8  i8  --  i8  i8  i8  i8  --  --  --  --  --  --  --  --
  e4  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
  f2  f2  f2  --  --  --  f2  --  --  --  --  --  f2  --  f4  f8  c8 c16
  bf  bf  bf  --  --  --  bf  --  --  --  --  --  --  bf  f4  f8  c8 c16
  f4  f4  f4  f4  --  --  f4  f4  --  --  --  --  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  --  f8  f8  f8  --  --  --  f8  f8  f8  f8  -- c16
  c8  c8  c8  c8  --  --  c8  c8  --  --  --  --  c8  c8  c8  --  c8 c16
 c16 c16 c16 c16 c16  -- c16 c16 c16  --  --  -- c16 c16 c16 c16 c16 c16
"""

@pytest.mark.parametrize("policy, table", [("tf-all", TF_ALL_ADD), ("tf-safe", TF_SAFE_ADD)])
def test_add_grid(policy, table):
    assert_grid(table, policy, "add")


@pytest.mark.parametrize("policy, table", [("tf-all", TF_ALL_ADD), ("tf-safe", TF_SAFE_ADD)])
def test_add_grid_zero_dim(policy, table):
    # 0-d tensors are as strong as tensors with dimensions in TensorFlow.
    assert_grid(table, policy, "add", zero_dim_column=True)


# Rules every mode shares: Python scalars, conversions, kernels, truediv, the ops outside RFC 431.
COMMON = """
    add(int8[n], 1)                 int8        # a Python int is a weak int32: the tensor's dtype wins
    add(int8[n], 300)               int8        # in int32's range: cast to int8, wrapping
    add(int8[n], 70000)             int8
    add(int8[n], 1099511627776)     OverflowError  # flexible_dtypes: too large to convert to np.int32
    add(float32[n], 1099511627776)  OverflowError  # whatever the other dtype
    add(uint64[n], 9223372036854775808)  OverflowError
    add(float8_e4m3fn[n], 1099511627776) OverflowError  # before the missing kernel
    add(bool[n], 1)                 int32       # bool + weak int32 = int32
    add(1, bool[])                  int32
    add(bool[n], 1.5)               float32     # bool + weak float32 = float32
    add(bool[n], True)              error       # a Python bool is a strong bool; AddV2 has no bool kernel
    add(int32[n], True)             int32       # True converts to int32, int64, uint64, half, float, double
    add(uint64[n], True)            uint64
    add(float16[n], True)           float16
    add(uint8[n], True)             error       # "Cannot convert True to EagerTensor of dtype uint8"
    add(int8[n], True)              error
    add(bfloat16[n], True)          error
    add(complex64[n], True)         error
    add(complex128[n], True)        complex128
    add(bfloat16[n], 1.5)           bfloat16    # a weak float takes a float tensor's dtype
    add(float16[n], 1e300)          float16     # no range check on floats
    add(float64[n], 1+2j)           complex128
    add(complex64[n], 1.5)          complex64
    add(float8_e5m2[n], float8_e5m2[n])  error  # no float8 kernel
    multiply(bool[n], bool[n])      error       # tf.math.multiply: no bool kernel
    equal(bool[n], bool[n])         bool
    equal(int8[n], True)            error
    equal(uint8[n], -1)             bool
    maximum(complex64[n], complex64[n])  error
    floor_divide(complex64[n], complex64[n])  error
    remainder(complex128[n], 1)     error
    power(uint8[n], 2)              error       # Pow: no unsigned kernel
    power(int32[n], 2)              int32
    power(int32[n], -1)             error       # "Integers to negative integer powers are not allowed"
    power(-1, int32[n])             int32
    power(float32[n], -1)           float32
    true_divide(int8[n], int8[n])   float32     # _TRUEDIV_TABLE: 8 and 16 bits -> float32
    true_divide(uint16[n], 1)       float32
    true_divide(int32[n], int32[n]) float64     # 32 and 64 bits -> float64
    true_divide(uint64[n], 1)       float64
    true_divide(bool[n], bool[n])   error       # bool is not in _TRUEDIV_TABLE
    true_divide(float16[n], 1)      float16
    less(int8[n], int16[n])         error       # not an RFC 431 op: no promotion at all
    less(int8[n], 300)              bool        # the scalar is converted to the tensor's dtype
    less(int32[n], 1099511627776)   bool        # legacy conversion: any int64, cast
    less(int32[n], 9223372036854775808)  error
    less(uint64[n], 9223372036854775808) bool   # uint64, half, float, double, complex128 also read a uint64
    where(float32[n], 9223372036854775808) float32
    bitwise_and(int64[n], 9223372036854775808) error
    less(uint8[n], 1.5)             error       # "Cannot convert 1.5 to EagerTensor of dtype uint8"
    less(bool[n], bool[n])          error
    bitwise_and(int8[n], uint8[n])  error
    bitwise_and(uint8[n], 300)      uint8
    bitwise_and(int32[n], True)     int32
    bitwise_and(bool[n], bool[n])   error       # tf.bitwise.bitwise_and: integers only
    left_shift(int64[], int64[n])   int64
    logical_and(bool[n], True)      bool
    logical_and(bool[n], 1)         error       # 1 does not convert to bool
    logical_xor(int8[n], int8[n])   error       # LogicalAnd / LogicalOr: bool only
    arctan2(int32[n], int32[n])     error       # Atan2: floats only, ints are not converted
    arctan2(float16[n], 1)          float16
    arctan2(float32[n], float64[n]) error
    nextafter(float16[n], float16[n])  error    # NextAfter: float and double only
    nextafter(float32[n], 1.5)      float32
    where(int8[n], 300)             int8
    where(int8[n], int16[n])        error
    where(1.5, 1)                   float32     # no tensor: the first scalar's default dtype
    where(1, 1.5)                   error
    where(True, 1)                  error
    where(1, True)                  int32
    where(1+2j, 1.5)                complex128
    where(1099511627776, 1)         int64       # the first scalar's value: convert_to_tensor infers int64
    where(1, 1099511627776)         int32       # the second is converted to the first one's dtype
    where(9223372036854775808, 1)   OverflowError
    where(1e300, 1.5)               OverflowError  # beyond float32, the dtype a Python float gets
    where(1.5, 1e300)               float32
    where(1+2j, 1099511627776)      OverflowError  # an int beside a complex goes through np.int32
    where(1099511627776, 1+2j)      OverflowError
"""

# Where the modes differ: tensor-tensor widening, Python floats with integer tensors.
ALL_ONLY = """
    add(uint8[n], int8[n])          int16
    add(uint64[n], int64[n])        float64
    add(int32[n], float16[n])       float16
    add(uint8[n], 1.5)              float64     # an int tensor + weak float32 = weak float64
    add(int64[], 1.5)               float64
    add(float32[n], 1+2j)           complex64
    add(uint64[n], 1+2j)            complex128
    true_divide(int8[n], uint16[n]) float64     # int32 first (the RFC's own example), then float64
    maximum(uint8[n], 1.5)          float64
    power(uint8[n], 1.5)            float64
"""

SAFE_ONLY = """
    add(uint8[n], int8[n])          error
    add(uint64[n], int64[n])        error
    add(int32[n], float16[n])       error
    add(uint8[n], 1.5)              error       # "the summation between a tf.int32 and a python float"
    add(int64[], 1.5)               error
    add(float32[n], 1+2j)           error
    add(uint64[n], 1+2j)            error
    true_divide(int8[n], uint16[n]) error
    maximum(uint8[n], 1.5)          error
"""

SAFE_AND_NONE = """
    add(uint8[n], 1)                uint8
    add(float64[n], 1+2j)           complex128
    add(bool[n], 1)                 int32
"""

TENSOR_PAIRS_SAFE = """
    add(int8[n], int16[n])          int16
    add(uint8[n], float16[])        float16
    true_divide(int8[n], int16[n])  float32     # int16 first, then float32 (RFC 431's example)
    true_divide(uint8[n], uint32[n]) float64
"""

TENSOR_PAIRS_NONE = """
    add(int8[n], int16[n])          error
    add(uint8[n], float16[])        error
    add(float32[], float64[n])      error
    true_divide(int8[n], int16[n])  error
    add(bool[n], float32[n])        error
"""

EXAMPLES = {
    "tf-all": COMMON + ALL_ONLY + TENSOR_PAIRS_SAFE,
    "tf-safe": COMMON + SAFE_ONLY + SAFE_AND_NONE + TENSOR_PAIRS_SAFE,
    "tf-none": COMMON + SAFE_ONLY + SAFE_AND_NONE + TENSOR_PAIRS_NONE,
}

@pytest.mark.parametrize("policy", sorted(EXAMPLES))
def test_examples(policy):
    assert_examples(EXAMPLES[policy], policy)


def test_errors_name_policy_op_and_cast():
    with pytest.raises(gp.PromotionError) as exc:
        gp.result_type(gp.spec("uint8"), gp.spec("int8"), op="add", policy="tf-safe")
    msg = str(exc.value)
    assert "tf-safe" in msg and "add" in msg and "uint8" in msg and "int8" in msg and "astype" in msg


def test_weak_results():
    # An int tensor meeting a Python float gives TensorFlow's weak float64; bool + int a weak int32.
    assert plan_for("add", [gp.spec("uint8"), 1.5], policy="tf-all").weak
    assert plan_for("add", [gp.spec("bool"), 1], policy="tf-safe").weak
    assert not plan_for("add", [gp.spec("int8"), 1], policy="tf-all").weak


_TF_DTYPES = [d.name for d in gp.core.dtypes.ALL if d.name != "complex32"]
_SCALARS = [True, 1, -1, 300, 2**40, 1.5, 1e300, 1 + 2j]


@pytest.mark.parametrize("policy", ["tf-all", "tf-safe", "tf-none"])
@pytest.mark.parametrize("op", ["add", "true_divide", "less", "bitwise_and"])
def test_commutative(policy, op):
    # No TensorFlow case gave different dtypes for op(a, b) and op(b, a) (oracle README, 8).
    def outcome(*xs):
        try:
            return gp.result_type(*xs, op=op, policy=policy).name
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__
    operands = [gp.spec(d) for d in _TF_DTYPES] + [gp.spec(d, ndim=0) for d in _TF_DTYPES]
    diffs = [f"  {op}({a}, {b})" for i, a in enumerate(operands) for b in operands[i:] + _SCALARS
             if outcome(a, b) != outcome(b, a)]
    assert not diffs, f"policy {policy!r}: not commutative for\n" + "\n".join(diffs)


def _tf_outcome(policy, op, a, b):
    try:
        return gp.result_type(a, b, op=op, policy=policy).name
    except OverflowError:
        return "OverflowError"
    except Exception:  # noqa: BLE001 - any refusal
        return "error"


@pytest.mark.parametrize("op", sorted(gp.OPS))
def test_none_is_safe_without_tensor_to_tensor_promotion(op):
    # RFC 431, NONE mode: "no implicit dtype promotion between tensors"; everything else is SAFE's
    # rule. Stated here as the RFC states it, over every pair of tensors, 0-d tensors and Python
    # scalars, not as a table: tf-safe itself is held to TensorFlow's records (test_conformance).
    tensors = [gp.spec(d) for d in _TF_DTYPES] + [gp.spec(d, ndim=0) for d in _TF_DTYPES]
    diffs = []
    for a in tensors:
        for b in tensors + _SCALARS:
            for x, y in ((a, b), (b, a)):
                both_tensors = not isinstance(x, (bool, int, float, complex)) and \
                    not isinstance(y, (bool, int, float, complex))
                safe = _tf_outcome("tf-safe", op, x, y)
                want = "error" if both_tensors and x.dtype != y.dtype and safe != "error" else safe
                got = _tf_outcome("tf-none", op, x, y)
                if got != want:
                    diffs.append(f"  {op}({x}, {y}): RFC rule {want}, tf-none {got}")
    assert not diffs, f"{len(diffs)} cells differ\n" + "\n".join(diffs[:40])
