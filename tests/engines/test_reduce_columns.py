"""Reductions over leading axes run as columns (engines/cpu/reduce_columns.py: the operands
transposed, many results at once, rows read in order): the same bits as the same reduction over
the trailing axes of a contiguous transposed copy, which runs as rows, for every combine, dtype,
policy and thread count, and for sizes around the leaf, lane and column-block boundaries."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import reduce as cpu_reduce
from gpupromote.engines.cpu.reduce_columns import COLUMNS

_RNG = np.random.default_rng(11)


def _values(shape, dtype, op):
    x = _RNG.standard_normal(shape) * 3
    if op == "prod":
        x = 1 + x / 50
    if dtype == "bool":
        return x > 2.5 if op == "all" else x > -2.5 if op == "any" else x > 0
    if dtype in ("int32", "int8"):
        return (x * 10).astype(dtype)
    flat = x.reshape(-1)
    if op in ("max", "min", "sum") and flat.size > 8:   # the values whose order and sign matter
        flat[::7] = 0.0
        flat[3::11] = -0.0
        flat[5::97] = np.inf
        flat[6::89] = -np.inf
        flat[4::131] = np.nan
    if dtype == "complex64":
        with np.errstate(invalid="ignore"):   # 1j * inf
            return (x + 1j * x[::-1]).astype(np.complex64)
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _bits(a, any_nan=False):
    """The result's dtype, shape and bytes; ``any_nan``: every NaN as one NaN, for sums and
    products (which NaN an addition of two NaNs gives is not promised: docs/deviations.md)."""
    a = np.array(a, copy=True)
    if any_nan and a.dtype.kind in "fcV":
        wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        a[np.isnan(wide)] = np.nan
    return a.dtype, a.shape, a.tobytes()


def _check(op, x, axes, policy, threads=1):
    """``op`` over the leading (or middle) ``axes`` of ``x`` as columns, against the same over the
    trailing axes of a contiguous copy with those axes moved last, as rows."""
    ran = []
    real, real_batched = cpu_reduce._transposed, cpu_reduce.run_batched

    def spy(args, rowwise):
        got = real(args, rowwise)
        ran.append(got is not None)
        return got

    def spy_batched(*args, **kwargs):
        ran.append(True)
        return real_batched(*args, **kwargs)
    fn = getattr(gp, op)
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.ascontiguousarray(np.transpose(x, rest + list(axes)))
    with gp.num_threads(threads):
        want = fn(moved, axis=tuple(range(len(rest), x.ndim)), policy=policy)
        cpu_reduce._transposed, cpu_reduce.run_batched = spy, spy_batched
        try:
            got = fn(x, axis=axes, policy=policy)
        finally:
            cpu_reduce._transposed, cpu_reduce.run_batched = real, real_batched
    assert any(ran), f"{op} over {axes} of {x.shape} did not run as columns"
    any_nan = op not in ("max", "min")
    assert _bits(got, any_nan) == _bits(want, any_nan), \
        f"{op} {x.dtype} {x.shape} axes {axes} under {policy}: columns differ from rows"


OPS = ["sum", "prod", "mean", "max", "min", "var", "std"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "complex64"]
CASES = [(op, dt) for op in OPS for dt in DTYPES
         if not (dt == "complex64" and op in ("max", "min", "var", "std"))] + [("any", "bool"), ("all", "bool"),
                                                                               ("sum", "bool")]
# K around a leaf (LEAF = 128) and the lanes, M around a block of COLUMNS
SHAPES = [(7, 3), (129, 2), (1000, COLUMNS + 37)]
MORE_SHAPES = [(128, 300), (4097, 5), (3 * 128, COLUMNS), (2, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{k}x{m}" for k, m in SHAPES])
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_leading_axis_as_columns_equals_rows(op, dtype, shape):
    _check(op, _values(shape, dtype, op), (0,), "numpy")


@pytest.mark.parametrize("shape", MORE_SHAPES, ids=[f"{k}x{m}" for k, m in MORE_SHAPES])
@pytest.mark.parametrize("op", ["sum", "max", "var"])
def test_more_shapes_as_columns_equal_rows(op, shape):
    _check(op, _values(shape, "float32", op), (0,), "numpy")


POLICIES = ["torch", "jax", "tf-all"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op, dtype", [("sum", "float16"), ("max", "float32"), ("min", "bfloat16"),
                                       ("mean", "float32"), ("sum", "int8")], ids=lambda v: str(v))
def test_every_policy_columns_equal_rows(op, dtype, policy):
    _check(op, _values((300, 70), dtype, op), (0,), policy)


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_columns_split_over_threads_are_the_same_bits(threads, monkeypatch):
    monkeypatch.setattr(cpu_reduce, "_MIN_PER_THREAD", 64)
    for op in ("sum", "max", "var"):
        _check(op, _values((257, COLUMNS + 300), "float32", op), (0,), "numpy", threads)


def test_three_dims_reduced_over_the_two_leading_axes():
    for op in ("sum", "mean", "max"):
        _check(op, _values((6, 50, 40), "float32", op), (0, 1), "numpy")


MIDDLE = [((4, 300, 70), (1,)), ((3, 5, 129, 40), (1, 2)), ((2, 7, 3), (1,)), ((6, 2, 1100), (1,))]


@pytest.mark.parametrize("shape, axes", MIDDLE, ids=[f"{s}-{a}" for s, a in MIDDLE])
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("var", "float32"), ("max", "float16"),
                                       ("mean", "bfloat16"), ("prod", "float64"), ("any", "bool"),
                                       ("sum", "int32"), ("std", "complex64")], ids=lambda v: str(v))
def test_middle_axes_as_batched_columns_equal_rows(op, dtype, shape, axes):
    _check(op, _values(shape, dtype, op), axes, "numpy")


@pytest.mark.parametrize("threads", [2, 3])
def test_batched_columns_split_over_threads_are_the_same_bits(threads, monkeypatch):
    monkeypatch.setattr(cpu_reduce, "_MIN_PER_THREAD", 64)
    for op in ("sum", "var"):
        _check(op, _values((5, 200, 90), "float32", op), (1,), "numpy", threads)


def test_a_fused_chain_over_a_leading_axis_equals_eager():
    x = _values((600, 90), "float32", "mean")
    y = _values((600, 90), "float32", "mean")
    fused = gp.fuse(lambda a, b: gp.sum(a * b + 1, axis=0))
    ran = []
    real = cpu_reduce._transposed
    cpu_reduce._transposed = lambda args, rowwise: (ran.append(True), real(args, rowwise))[1]
    try:
        got = fused(x, y)
    finally:
        cpu_reduce._transposed = real
    assert ran
    want = gp.sum(np.ascontiguousarray(x.T) * np.ascontiguousarray(y.T) + 1, axis=1)
    assert _bits(got, True) == _bits(want, True)
