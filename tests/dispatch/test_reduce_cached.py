"""The cached whole-array and last-axis reductions (dispatch/reduce.py, ``_fast_runner``): a call on a
C-contiguous NumPy array gives what the general path gives for the same values in another layout,
the same bits, dtype, shape and type, for every reduction, keepdims or not, under several policies;
what they do not take (scans, var, other axes, dtype=, out=) goes the general way."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import reduce as R

OPS = ["sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin"]
# every op under NumPy's rules on four kinds of dtype; the main ops under torch's and JAX's on two more
CASES = [("numpy", op, [np.float32, ml_dtypes.bfloat16, np.int8, np.bool_]) for op in OPS] + \
        [(pol, op, [np.float16, np.int64]) for pol in ("torch", "jax") for op in ("sum", "mean", "max", "argmax")]
SHAPES = [(1,), (7,), (300,), (4, 33), (2, 3, 40), ()]


def _data(shape, dtype):
    rng = np.random.default_rng(len(shape) * 31 + np.dtype(dtype).itemsize)
    x = rng.standard_normal(shape if shape else ()) * 3
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape if shape else ())
    return np.asarray(x).astype(dtype)


def _general_layout(x):
    """The same values in a layout the cached path does not take (the general path's)."""
    if x.ndim == 0:
        return x
    wide = np.repeat(x, 2, axis=-1)
    return wide[..., ::2]


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    a, b = np.asarray(a), np.asarray(b)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert a.tobytes() == b.tobytes(), f"{a!r} != {b!r}"


@pytest.mark.parametrize("policy, op, dtypes", CASES, ids=[f"{p}-{op}" for p, op, _ in CASES])
def test_cached_calls_equal_the_general_path(policy, op, dtypes):
    checked = 0
    for dtype in dtypes:
        for shape in SHAPES:
            x = _data(shape, dtype)
            for axis, keepdims in [(None, False), (None, True), (-1, False), (-1, True)]:
                if axis is not None and x.ndim == 0:
                    continue
                call = lambda a: getattr(gp, op)(a, axis=axis, keepdims=keepdims, policy=policy)   # noqa: E731
                try:
                    want = call(_general_layout(x))
                except (TypeError, ValueError) as exc:   # refused under this policy: refused alike
                    with pytest.raises(type(exc)):
                        call(x)
                    continue
                _same(call(x), want)
                checked += 1
    assert checked >= 20, checked   # (torch refuses the mean of an integer array)
    keys = [k for k, r in R._fast.items() if k[0] == op and k[5] == policy and r is not None]
    assert keys, "no call took the cached path"


@pytest.mark.parametrize("call", [
    lambda x: gp.cumsum(x), lambda x: gp.var(x), lambda x: gp.sum(x, axis=0),
    lambda x: gp.sum(x, dtype="float64"), lambda x: gp.sum(x, out=np.empty((), np.float32)),
], ids=["cumsum", "var", "axis0-of-2d", "dtype", "out"])
def test_what_the_cached_path_does_not_take(call):
    x = _data((4, 5), np.float32)
    before = {k for k, r in R._fast.items() if r is not None}
    call(x)
    new = {k for k, r in R._fast.items() if r is not None} - before
    assert not new, new


def test_a_call_of_many_elements_runs_over_threads_with_the_same_bits():
    x = _data((3, 100_000), np.float32)
    with gp.num_threads(2):
        _same(gp.sum(x), gp.sum(_general_layout(x)))
        _same(gp.mean(x, axis=-1), gp.mean(_general_layout(x), axis=-1))
