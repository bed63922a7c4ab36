"""More than 32 dimensions (issue 25): NumPy's arrays and ufuncs take up to 64, and so does every path of
gpupromote - the compiled dispatcher, the Python path (``gp.<op>.__wrapped__``, and every call the
compiled one declines: a reversed or transposed view, out=, a broadcast), gp.fuse and the Dask
integration's shape check - with NumPy's results, and one ValueError where the shapes do not
broadcast (NumPy's own ``np.broadcast_shapes`` stops at 32 dimensions: gpupromote does not use it there).
"""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.operands import broadcast_shapes

NDIMS = [31, 32, 33, 47, 64]


def _shape(ndim, sizes=(2, 3, 2)):
    """``ndim`` axes, all of length 1 but a few spread over them (small arrays, real strides)."""
    shape = [1] * ndim
    for k, n in enumerate(sizes):
        shape[(k * 7 + ndim // 3) % ndim] = n
    return tuple(shape)


def _arrays(ndim):
    rng = np.random.default_rng(ndim)
    a = rng.standard_normal(_shape(ndim)).astype(np.float32)
    b = rng.integers(-5, 5, _shape(ndim)).astype(np.int16)
    return a, b


def _paths():
    fused = gp.fuse(lambda x, y: x * y + 1)
    return {
        "compiled": lambda a, b: gp.add(gp.multiply(a, b), 1),
        "Python path": lambda a, b: gp.add.__wrapped__(gp.multiply.__wrapped__(a, b), 1),
        "fuse": fused,
    }


PATHS = _paths()


def _want(a, b):
    return np.multiply(a, b) + np.float32(1)


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("layout", ["contiguous", "reversed", "transposed", "broadcast", "low rank"])
def test_every_path_takes_up_to_64_dimensions(ndim, path, layout):
    a, b = _arrays(ndim)
    if layout == "reversed":
        a = a[(slice(None, None, -1),) * ndim]
    elif layout == "transposed":
        a = np.ascontiguousarray(a).transpose(list(range(ndim))[::-1])
        b = np.ascontiguousarray(b).transpose(list(range(ndim))[::-1])
    elif layout == "broadcast":
        b = b.reshape(b.shape[:-3] + (1, 1, 1))[..., :1]
    elif layout == "low rank":
        b = np.arange(a.shape[-1], dtype=np.int16)
    _same(PATHS[path](a, b), _want(a, b))


@pytest.mark.parametrize("ndim", NDIMS)
def test_out_unary_where_and_scalars_above_32_dimensions(ndim):
    a, b = _arrays(ndim)
    out = np.empty(a.shape, np.float32)
    assert gp.add(a[(slice(None, None, -1),) * ndim], 2.5, out=out) is out
    _same(out, a[(slice(None, None, -1),) * ndim] + np.float32(2.5))
    _same(gp.sqrt(np.abs(a)), np.sqrt(np.abs(a)))
    _same(gp.sqrt.__wrapped__(np.abs(a)), np.sqrt(np.abs(a)))
    _same(gp.where(a > 0, a, b), np.where(a > 0, a, b))
    _same(gp.where.__wrapped__(a > 0, a, b), np.where(a > 0, a, b))
    _same(gp.maximum(a, np.float32(0.5)), np.maximum(a, np.float32(0.5)))
    empty = np.zeros((0,) + a.shape[1:], np.float32)
    _same(gp.add(empty, a[:1]), empty + a[:1])


@pytest.mark.parametrize("ndim", [33, 64])
@pytest.mark.parametrize("path", list(PATHS))
def test_shapes_that_do_not_broadcast_raise_one_value_error(ndim, path):
    a, _ = _arrays(ndim)
    b = np.ones(a.shape[:-1] + (a.shape[-1] + 1,) if a.shape[-1] > 1 else a.shape[:-1] + (4,), np.int16)
    if a.shape[-1] == 1:
        a = np.broadcast_to(a, a.shape[:-1] + (3,))
    with pytest.raises(ValueError):
        np.multiply(a, b)
    with pytest.raises(ValueError, match="broadcast"):
        PATHS[path](a, b)
    with pytest.raises(ValueError, match="broadcast"):
        gp.add(np.ones(a.shape, np.float32), 1, out=np.empty(b.shape, np.float32))


def test_broadcast_shapes_agrees_with_numpy():
    for shapes in [((2, 1, 3), (4, 1)), ((), (1, 1)), ((0, 1), (1, 5)), ((3,), (0, 1))]:   # NumPy's own range
        assert broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    assert broadcast_shapes((1,) * 40 + (3,), (2, 1)) == (1,) * 39 + (2, 3)
    assert broadcast_shapes((0, 1) + (1,) * 40, (5,)) == (0,) + (1,) * 40 + (5,)
    assert broadcast_shapes((), (1,) * 64) == (1,) * 64
    a = np.ones((1,) * 40 + (3,), np.int8)
    assert broadcast_shapes(a.shape, (2, 1)) == np.add(a, np.ones((2, 1), np.int8)).shape
    with pytest.raises(ValueError):
        broadcast_shapes((1,) * 40 + (3,), (4,))


def test_the_dask_integration_checks_shapes_above_32_dimensions():
    da = pytest.importorskip("dask.array")
    a, b = _arrays(40)
    got = gp.add(da.from_array(a, chunks=a.shape), b).compute()
    _same(got, a + b)
