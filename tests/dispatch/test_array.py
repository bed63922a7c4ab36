"""gp.Array and gp.asarray on the CPU: attributes, conversions, operators with the current policy,
in-place operators with the policy's cast rule for outputs."""
from __future__ import annotations

import operator

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp


def test_asarray_wraps_storage_with_a_logical_dtype_and_device():
    x = gp.asarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert isinstance(x, gp.Array)
    assert x.dtype == gp.int16 and x.dtype is gp.dtype("int16")
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and len(x) == 2
    assert x.device == "cpu"


def test_asarray_converts_dtype_and_python_data():
    x = gp.asarray([1.5, 2.5], dtype="bfloat16")
    assert x.dtype == gp.bfloat16 and np.asarray(x).dtype == ml_dtypes.bfloat16
    assert gp.asarray(x) is x
    assert gp.asarray(3).dtype == gp.int64 and gp.asarray(3).ndim == 0


def test_asarray_refuses_dtypes_without_cpu_storage_and_unknown_devices():
    with pytest.raises(TypeError, match="complex32"):
        gp.asarray([1j], dtype="complex32")
    with pytest.raises(ValueError, match="unknown device"):
        gp.asarray([1], device="tpu")


def test_array_protocol_and_repr():
    x = gp.asarray(np.array([1, 2], np.float16))
    assert np.asarray(x).dtype == np.float16
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert repr(x) == "gp.Array([1., 2.], dtype=float16, device='cpu')"


def test_dlpack_round_trip():
    x = gp.asarray(np.arange(4, dtype=np.int32))
    y = np.from_dlpack(x)
    assert y.tolist() == [0, 1, 2, 3] and y.dtype == np.int32
    assert x.__dlpack_device__()[0] == 1  # kDLCPU


def test_getitem_keeps_the_logical_dtype():
    x = gp.asarray(np.arange(6, dtype=np.uint8))
    assert x[1:3].dtype == gp.uint8 and np.asarray(x[1:3]).tolist() == [1, 2]


_OPERATORS = [
    ("+", operator.add, "add"), ("-", operator.sub, "subtract"), ("*", operator.mul, "multiply"),
    ("/", operator.truediv, "true_divide"), ("//", operator.floordiv, "floor_divide"),
    ("%", operator.mod, "remainder"), ("**", operator.pow, "power"), ("==", operator.eq, "equal"),
    ("!=", operator.ne, "not_equal"), ("<", operator.lt, "less"), ("<=", operator.le, "less_equal"),
    (">", operator.gt, "greater"), (">=", operator.ge, "greater_equal"), ("&", operator.and_, "bitwise_and"),
    ("|", operator.or_, "bitwise_or"), ("^", operator.xor, "bitwise_xor"), ("<<", operator.lshift, "left_shift"),
    (">>", operator.rshift, "right_shift"),
]


@pytest.mark.parametrize("symbol, fn, op", _OPERATORS, ids=[s for s, _, _ in _OPERATORS])
def test_operators_run_the_op_and_return_an_array(symbol, fn, op):
    a = np.array([5, 7, 9], np.int32)
    b = np.array([2, 3, 4], np.int16)
    r = fn(gp.asarray(a), gp.asarray(b))
    assert isinstance(r, gp.Array)
    expected = getattr(np, op)(a, b)
    assert r.dtype == gp.dtype(expected.dtype) and np.asarray(r).tolist() == expected.tolist()
    # reflected: numpy array or Python scalar on the left
    r = fn(a, gp.asarray(b))
    assert isinstance(r, gp.Array) and np.asarray(r).tolist() == expected.tolist()
    r = fn(3, gp.asarray(b))
    assert np.asarray(r).tolist() == getattr(np, op)(3, b).tolist()


def test_operators_use_the_current_policy():
    x = gp.asarray(np.array([1, 2], np.int32))
    assert (x + 2.5).dtype == gp.float64          # numpy: int32 + Python float -> float64
    with gp.use_policy("torch"):
        assert (x + 2.5).dtype == gp.float32      # torch: the default float
    with gp.use_policy("jax"):
        assert (x / 2).dtype == gp.float32


def test_inplace_operators_write_into_self():
    x = gp.asarray(np.arange(4, dtype=np.float32))
    storage = x._storage
    x += 1
    x *= 2
    assert x._storage is storage and np.asarray(x).tolist() == [2, 4, 6, 8]


def test_inplace_float_into_int_raises_under_numpy_same_kind():
    x = gp.asarray(np.arange(3, dtype=np.int8))
    with pytest.raises(TypeError, match="same_kind"):
        x += 1.5
    with gp.use_policy("torch"):
        with pytest.raises(TypeError, match="canCast"):
            x += 1.5
        x += 1            # int8 + Python int stays int8 in torch
    assert np.asarray(x).tolist() == [1, 2, 3]


def test_inplace_narrowing_within_a_kind_is_allowed_by_same_kind():
    x = gp.asarray(np.ones(2, np.float16))
    x += np.ones(2, np.float64)    # float64 result cast into float16 (same_kind)
    assert x.dtype == gp.float16 and np.asarray(x).tolist() == [2, 2]


def test_unary_operators():
    x = gp.asarray(np.array([1, -2], np.int8))
    assert np.asarray(-x).tolist() == [-1, 2] and np.asarray(abs(x)).tolist() == [1, 2]
    assert np.asarray(~x).tolist() == [-2, 1]


def test_comparison_results_are_bool_arrays():
    x = gp.asarray(np.array([1.0, np.nan], np.float32))
    r = x == x
    assert r.dtype == gp.bool_ and np.asarray(r).tolist() == [True, False]
