"""Reductions of dask arrays (gpupromote/integrations/dask_reduce.py) against the eager call.

The reference is the eager gp reduction of the whole NumPy array under the same policy: the lazy
result's dtype and ``_meta`` before anything is computed, its values once computed. Exact combines
(max, min, any, all, argmax, argmin, integer sums and products) must give the eager bits on any
blocks. A float sum, product or mean associates its additions by dask's tree of blocks, the eager
kernel by its fixed tree, so on blocks of any size they agree up to rounding: with n <= 70 positive
terms the two orders differ by at most (n - 1) * eps * sum|x| / |sum x| = 69 * 2**-24 < 5e-6
(float32), hence ``_FLOAT_RTOL``; var / std (Chan's update against the eager two passes) within the
same. On blocks aligned to the kernel's tree (one reduced axis, blocks of 128 * 2**j elements but
the last) a float sum, product and mean are the eager bits too.

Blocks are uneven (3 + 4 rows, 4 + 5 + 1 columns); graphs run on dask's synchronous scheduler, and
one test runs on a 1-worker process cluster (the tasks travel pickled).
"""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp

da = pytest.importorskip("dask.array", reason="needs the dask extra: pip install '.[dask]' in a clone")
pytest.importorskip("gpupromote.integrations.dask_reduce")

POLICIES = ("numpy", "torch", "jax")
_FLOAT_RTOL = 5e-6   # the module docstring: two association orders of <= 70 positive float32 terms
_SHAPE, _CHUNKS = (7, 10), ((3, 4), (4, 5, 1))

# op -> the operand dtypes it is checked on (few: each dtype and policy is a kernel to compile);
# the mean of int32 is refused by torch (torch.mean takes floats): refused at graph build too
_OPS = {"sum": ("f4", "i4"), "prod": ("f4", "i2"), "mean": ("f4", "i4"), "var": ("f4",), "std": ("f4",),
        "max": ("f4", "i4"), "min": ("f4",), "any": ("b1",), "all": ("b1",), "argmax": ("f4",),
        "argmin": ("i4",), "cumsum": ("f4", "i4"), "cumprod": ("i2",)}
_AXES = {"all": None, "axis0": 0, "axis-1": -1, "both": (0, 1)}
_ONE_AXIS = ("argmax", "argmin", "cumsum", "cumprod")


def _values(code, seed=0):
    rng = np.random.default_rng(seed)
    if code == "b1":
        return rng.random(_SHAPE) < 0.9
    if code in ("i2", "i4"):
        return rng.integers(-3, 4, _SHAPE).astype(code)   # small: an int16 product of 10 stays in range
    return (1 + rng.random(_SHAPE)).astype(np.float32)   # positive: the float tolerance's bound holds


def _check(lazy, eager, exact):
    eager = np.asarray(eager)
    assert isinstance(lazy, da.Array)
    assert (lazy.dtype, lazy._meta.dtype) == (eager.dtype, eager.dtype)
    assert lazy.shape == eager.shape or np.isnan(lazy.shape).any()   # a scan of blocks of unknown size
    got = lazy.compute(scheduler="sync")
    assert (got.dtype, got.shape) == (eager.dtype, eager.shape)
    if exact:
        assert got.tobytes() == eager.tobytes()
    else:
        np.testing.assert_allclose(got, eager, rtol=_FLOAT_RTOL)


_CASES = [(op, code, axis) for op, codes in _OPS.items() for code in codes for axis in _AXES
          if not (op in _ONE_AXIS and axis == "both")]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op, code, axis", _CASES, ids=[f"{op}-{code}-{axis}" for op, code, axis in _CASES])
def test_a_reduction_of_a_dask_array_equals_the_eager_one(policy, op, code, axis):
    a = _values(code)
    x = da.from_array(a, chunks=_CHUNKS)
    fn = getattr(gp, op)
    try:
        eager = fn(a, axis=_AXES[axis], policy=policy)
    except (TypeError, ValueError) as refused:   # the policy refuses it: so must the graph, while it is built
        with pytest.raises(type(refused)) as lazily:
            fn(x, axis=_AXES[axis], policy=policy)
        assert str(lazily.value) == str(refused)
        return
    exact = code != "f4" or op in ("max", "min", "argmax", "argmin")
    lazy = fn(x, axis=_AXES[axis], policy=policy)
    assert lazy.dtype == gp.result_type(x, op=op, policy=policy)
    _check(lazy, eager, exact)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op, kwargs", [
    ("sum", dict(axis=1, keepdims=True)),
    ("sum", dict(axis=(0, 1), dtype="float64")),
    ("mean", dict(axis=0, keepdims=True, dtype="float64")),
    ("var", dict(axis=1, ddof=0)),
    ("std", dict(axis=None, ddof=1, keepdims=True)),
    ("max", dict(axis=None, keepdims=True)),
    ("argmin", dict(axis=1, keepdims=True)),
    ("cumsum", dict(axis=None, dtype="float64")),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={w}" for k, w in v.items()))
def test_keepdims_dtype_and_ddof(policy, op, kwargs):
    a = _values("f4", seed=1)
    eager = getattr(gp, op)(a, policy=policy, **kwargs)
    exact = op in ("max", "argmin")
    _check(getattr(gp, op)(da.from_array(a, chunks=_CHUNKS), policy=policy, **kwargs), eager, exact)


def test_var_divides_by_the_policys_default_ddof():
    a = _values("f4", seed=2)
    x = da.from_array(a, chunks=_CHUNKS)
    torch_var = gp.var(x, policy="torch").compute(scheduler="sync")   # torch.var: correction=1
    numpy_var = gp.var(x, policy="numpy").compute(scheduler="sync")
    np.testing.assert_allclose(torch_var, numpy_var * a.size / (a.size - 1), rtol=_FLOAT_RTOL)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "argmax", "cumsum"])
def test_unknown_block_sizes_and_a_0d_array(op):
    a = np.arange(-5, 20, dtype=np.float32)
    x = da.from_array(a, chunks=7)
    positive = x[x > 0]   # blocks of unknown size (NaN in dask): counts come from the blocks themselves
    if op != "argmax":    # dask's own arg-reductions need known sizes too
        _check(getattr(gp, op)(positive), getattr(gp, op)(a[a > 0]), True)
    _check(getattr(gp, op)(da.from_array(np.float32(3.5))), getattr(gp, op)(np.float32(3.5)), True)


# ---------------------------------------------------------------------------------------------
# Aligned blocks: the eager bits for float sums too

_N = 512 * 11 + 77   # 12 blocks of 512 (4 of the kernel's leaves of 128), the last one of 77


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("sum", "float16"), ("mean", "float32"),
                                       ("prod", "float32")])
def test_blocks_aligned_to_the_kernels_tree_give_the_eager_bits(policy, op, dtype):
    rng = np.random.default_rng(3)
    a = (1 + rng.standard_normal(_N) * (1e-3 if op == "prod" else 1.0)).astype(dtype)
    _check(getattr(gp, op)(da.from_array(a, chunks=512), policy=policy), getattr(gp, op)(a, policy=policy), True)
    rows = np.stack([a, a[::-1]])   # one reduced axis of many: the same alignment per row
    _check(getattr(gp, op)(da.from_array(rows, chunks=(1, 512)), axis=1, policy=policy),
           getattr(gp, op)(rows, axis=1, policy=policy), True)


def test_float16_partial_sums_are_kept_in_float32_under_torch():
    # 0.1 in float16, 5709 times: float16 partial sums would each round (spacing 0.03 above 64), the
    # float32 ones do not; the aligned blocks give the eager bits only when the partials are float32
    a = np.full(_N, 0.1, np.float16)
    lazy = gp.sum(da.from_array(a, chunks=512), policy="torch")
    assert lazy.dtype == np.float16
    eager = gp.sum(a, policy="torch")
    blockwise_float16 = np.float16(sum(gp.sum(a[i:i + 512], policy="torch") for i in range(0, _N, 512)))
    assert lazy.compute(scheduler="sync").tobytes() == np.asarray(eager).tobytes() != blockwise_float16.tobytes()


# ---------------------------------------------------------------------------------------------
# argmax / argmin across blocks: the first extreme, the first NaN

def test_ties_across_blocks_pick_the_smallest_flat_index():
    # the block holding columns 0-1 comes first in the blocks' order, but the tie at (0, 2) comes
    # first in the flat order: the combine keeps the smallest index, not the first block's
    a = np.zeros((2, 4), np.float32)
    a[1, 0] = a[0, 2] = 5
    x = da.from_array(a, chunks=(2, 2))
    assert int(gp.argmax(x).compute(scheduler="sync")) == int(gp.argmax(a)) == 2
    a[1, 1] = a[0, 3] = np.nan
    assert int(gp.argmax(da.from_array(a, chunks=(2, 2))).compute(scheduler="sync")) == int(gp.argmax(a)) == 3


@pytest.mark.parametrize("policy", POLICIES)
def test_max_of_signed_zeros_across_blocks_follows_the_policys_tie_rule(policy):
    # NumPy's float16 max keeps the first of equal values (-0.0 here), torch's the last, XLA's orders
    # -0.0 below 0.0: the blocks' maxima are merged by the eager kernel of the operand's dtype
    a = np.array([-0.0, 0.0, -0.0, 0.0], np.float16)
    for op in ("max", "min"):
        _check(getattr(gp, op)(da.from_array(a, chunks=1), policy=policy), getattr(gp, op)(a, policy=policy), True)


# ---------------------------------------------------------------------------------------------
# Refusals and errors raise while the graph is built

def test_a_refused_reduction_raises_while_the_graph_is_built_with_the_eager_message():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    with pytest.raises(Exception) as eager:
        gp.mean(a, policy="torch")
    with pytest.raises(type(eager.value)) as lazy:
        gp.mean(da.from_array(a, chunks=2), policy="torch")
    assert str(lazy.value) == str(eager.value) and "torch" in str(lazy.value)


def test_an_axis_out_of_range_and_out_are_refused_while_the_graph_is_built():
    x = da.ones((3, 4), chunks=2, dtype=np.float32)
    with pytest.raises(np.exceptions.AxisError):
        gp.sum(x, axis=2)
    with pytest.raises(TypeError, match="out="):
        gp.sum(x, axis=0, out=np.empty(4, np.float32))
    with pytest.raises(TypeError, match="axis must be None or one int"):
        gp.argmax(x, axis=(0, 1))


# ---------------------------------------------------------------------------------------------
# gp.fuse functions with a reduction, and a process cluster

def test_a_fused_function_ending_in_a_reduction_takes_dask_arrays():
    @gp.fuse
    def softmax(x):
        e = gp.exp(x - gp.max(x, axis=-1, keepdims=True))
        return e / gp.sum(e, axis=-1, keepdims=True)

    a = _values("f4", seed=4)
    x = da.from_array(a, chunks=(3, 10))   # whole rows: the row sums are the eager ones
    for policy in ("numpy", "torch"):
        _check(softmax(x, policy=policy), softmax(a, policy=policy), True)
    sum_of_squares = gp.fuse(lambda x: gp.sum(x * x, axis=0))
    _check(sum_of_squares(da.from_array(a, chunks=_CHUNKS)), sum_of_squares(a), False)


def test_reductions_on_a_process_cluster():
    distributed = pytest.importorskip("distributed")
    a, i = _values("f4", seed=5), _values("i4", seed=5)
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        x, y = da.from_array(a, chunks=_CHUNKS), da.from_array(i, chunks=_CHUNKS)
        graphs = [gp.sum(y, axis=0, policy="torch"), gp.var(x, policy="torch"), gp.argmax(x, axis=1),
                  gp.cumsum(y, axis=1, policy="jax")]
        got = client.gather(client.compute(graphs))
    eager = [gp.sum(i, axis=0, policy="torch"), gp.var(a, policy="torch"), gp.argmax(a, axis=1),
             gp.cumsum(i, axis=1, policy="jax")]
    for g, e, exact in zip(got, eager, (True, False, True, True)):
        assert g.dtype == np.asarray(e).dtype
        assert g.tobytes() == np.asarray(e).tobytes() if exact else np.allclose(g, e, rtol=_FLOAT_RTOL)
