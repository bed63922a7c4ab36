"""Strided and broadcast layouts of kernels that call the math library run buffered (source.py's
buffered<nd>: stretches of the innermost axis copied into contiguous buffers, computed by the
vectorised flat loop, copied out) and give the bits of the same call on contiguous copies; kernels
without math calls keep the plain strided loops."""
import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu.kernels import kernel_for
from gpupromote.engines.cpu.source import BUFFER_ELEMENTS
from gpupromote.dispatch.api import plan_for

B = BUFFER_ELEMENTS
LAYOUTS = {
    "every-2nd": lambda a: a[..., ::2],
    "transposed": lambda a: a.T,
    "reversed": lambda a: a[::-1, ::-3],
    "row-broadcast": lambda a: np.broadcast_to(a[..., :1], a.shape),
}
DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "int8": np.int8}


def _data(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def _same(got, want):
    want = np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.nonzero(np.ascontiguousarray(got).view(np.uint8) != want.view(np.uint8))[0]
    assert diff.size == 0, f"{diff.size} bytes differ, first at byte {diff[:1]}"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["exp", "tanh", "log1p"])
def test_a_math_function_on_a_strided_view_equals_the_contiguous_call(fn, dtype, layout):
    x = LAYOUTS[layout](_data((7, 2 * B + 6), DTYPES[dtype]))
    with np.errstate(all="ignore"):
        _same(getattr(gp, fn)(x), getattr(gp, fn)(np.ascontiguousarray(x)))


@pytest.mark.parametrize("n", [1, B - 1, B, B + 1, 3 * B + 5], ids=lambda n: f"row{n}")
def test_rows_crossing_the_buffer_length(n):
    """A fused exp(x - row max) with the max broadcast along rows of n elements."""
    x = _data((5, n), np.float32)
    m = x.max(axis=-1, keepdims=True)
    fused = gp.fuse(lambda x, m: gp.exp(x - m) * 2)
    _same(fused(x, m), gp.exp(x - m) * 2)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
def test_every_rank_and_the_leading_loop_beyond_four(ndim):
    shape = (3, 4, 5, 6, 70)[-ndim:]
    x = _data(shape, np.float32)
    view = x[..., ::-2]
    _same(gp.sigmoid(view), gp.sigmoid(np.ascontiguousarray(view)))


def test_out_and_in_place_through_a_transposed_view():
    x = _data((50, 70), np.float32)
    want = gp.exp(np.ascontiguousarray(x.T))
    out = np.empty((70, 50), np.float32)
    gp.exp(x.T, out=out)
    _same(out, want)
    y = x.copy()
    gp.exp(y.T, out=y.T)
    _same(y.T, want)


def test_checks_still_raise_from_a_buffered_kernel():
    a = np.linspace(-3, 3, 600, dtype=np.float32).reshape(20, 30)
    b = np.arange(600, dtype=np.int32).reshape(20, 30)
    c = np.ones((20, 30), np.int32)
    c[5, 4] = 0
    f = gp.fuse(lambda a, b, c: gp.exp(a) + (b // c))
    with gp.use_policy("torch"):
        _same(f(a[:, 1::2], b[:, 1::2], c[:, 1::2]),
              f(*(np.ascontiguousarray(v[:, 1::2]) for v in (a, b, c))))
        with pytest.raises(ZeroDivisionError):
            f(a[:, ::2], b[:, ::2], c[:, ::2])


def test_only_kernels_that_call_the_math_library_are_buffered():
    x = np.ones(4, np.float32)
    assert kernel_for(plan_for("exp", (x,))).buffered
    assert kernel_for(plan_for("power", (x, 2.5))).buffered
    assert not kernel_for(plan_for("multiply", (x, x))).buffered
    assert not kernel_for(plan_for("negative", (x,))).buffered
