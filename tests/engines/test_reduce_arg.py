"""argmax / argmin of real rows (engines/cpu/reduce_tree.arg_pass: the extreme and a NaN test, then
the least index holding it) against the sequential rule written out here: the first NaN if the row
has one, else the first element equal (==) to the row's extreme. Rows mix NaNs of both signs,
infinities, both zeros and repeated values, in every dtype kind the pass takes, and in the ones it
leaves to the sequential comb (bool, complex)."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp

SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 3.0, 3.0]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int64", "uint64", "bool", "complex64"]


def _expected(row, op):
    """The sequential rule, one element at a time."""
    values = [complex(v) if np.iscomplexobj(row) else float(v) for v in row]
    for k, v in enumerate(values):
        if v != v:
            return k
    key = (lambda v: (v.real, v.imag)) if np.iscomplexobj(row) else (lambda v: v)
    best = (max if op == "argmax" else min)(values, key=key)
    return next(k for k, v in enumerate(values) if v == best)


def _rows(dtype, K, rng):
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, (24, K)).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        pool = np.array([info.min, info.max, 0, 1, 1, 7], dtype=dt)
        return rng.choice(pool, (24, K)).astype(dt)
    if dt.kind == "c":
        re = rng.choice(np.array(SPECIALS), (24, K))
        return (re + 1j * rng.choice(np.array([0.0, 1.0, -1.0]), (24, K))).astype(dt)
    pool = np.array(SPECIALS, dtype=np.float64).astype(dt)
    rows = rng.standard_normal((24, K)).astype(dt)
    mask = rng.random((24, K)) < 0.1
    rows[mask] = rng.choice(pool, int(mask.sum()))
    rows[0] = pool[4]             # all +0.0
    rows[1, ::2] = pool[5]        # -0.0 and +0.0 ...
    rows[1, 1::2] = pool[4]
    rows[2] = pool[2]             # all +inf
    rows[3] = np.array(-math.inf, dt)   # all -inf, then a NaN at the end
    rows[3, -1] = pool[1]
    return rows


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("K", [1, 2, 7, 130, 1024])
def test_rows_take_the_first_nan_else_the_first_extreme(op, dtype, K):
    x = _rows(dtype, K, np.random.default_rng(K))
    got = np.asarray(getattr(gp, op)(x, axis=1))
    want = [_expected(row, op) for row in x]
    bad = [(m, int(got[m]), want[m], x[m].tolist()[:12]) for m in range(len(want)) if int(got[m]) != want[m]]
    assert not bad, f"{op} {dtype} K={K}: row, got, want, row head: {bad[:3]}"
    if dtype not in ("bfloat16", "complex64"):   # NumPy's own loops agree (bfloat16: ml_dtypes' argmax)
        np.testing.assert_array_equal(got, getattr(np, op)(x, axis=1))


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
def test_whole_array_and_fused_map(policy):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(5000).astype(np.float32)
    x[[17, 4000]] = np.nan
    assert int(np.asarray(gp.argmax(x, policy=policy))) == 17
    y = rng.standard_normal((16, 300)).astype(np.float32)
    y[3, 5:9] = 9.0                      # ties: the first
    fused = gp.fuse(lambda a: gp.argmin(-a * 2, axis=-1), policy=policy)
    want = [_expected(row, "argmin") for row in (-y * 2)]
    np.testing.assert_array_equal(np.asarray(fused(y)), want)
    assert int(np.asarray(fused(y))[3]) == 5


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16"])
def test_columns_and_strided_rows(op, dtype):
    """Down columns and along strided rows the engine keeps the one sequential pass: the same rule."""
    x = _rows(dtype, 130, np.random.default_rng(3))
    for view, axis in ((x, 0), (x[:, ::3], 1), (x.T[::2], 1)):
        got = np.asarray(getattr(gp, op)(view, axis=axis))
        rows = np.moveaxis(view, axis, -1)
        np.testing.assert_array_equal(got, [_expected(row, op) for row in rows])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int16"])
def test_long_rows_look_in_the_first_chunk_holding_the_extreme(op, dtype):
    """A row longer than a vector pass's chunk (reduce_tree.PASS_CHUNK) is searched again only in
    the first chunk holding the extreme's key (or a NaN); a zero extreme from the row's start, its
    other zero possibly in an earlier chunk. Cases: the extreme, a tie and a NaN in later chunks,
    -0.0 in one chunk and +0.0 (the extreme) in a later one, a chunk's last and first elements."""
    from gpupromote.engines.cpu.reduce_tree import PASS_CHUNK as C
    K = 3 * C + 17
    sign = 1 if op == "argmax" else -1
    dt = np.dtype(dtype)
    base = (-sign * (np.arange(K) % 50 + 1)).astype(dt)       # every element on the far side of 0
    cases = {"in chunk 2": {2 * C + 5: 9}, "tie, chunks 1 and 2": {C + 3: 9, 2 * C: 9},
             "last of chunk 0": {C - 1: 9}, "first of chunk 1": {C: 9}, "tail": {K - 1: 9}}
    if dt.kind == "f":
        cases |= {"-0 in chunk 0, +0 in chunk 2": {100: -0.0, 2 * C + 1: 0.0},
                  "+0 in chunk 1, -0 in chunk 2": {C + 1: 0.0, 2 * C + 1: -0.0},
                  "NaN in chunk 2, extreme in chunk 1": {2 * C + 9: np.nan, C + 2: 9},
                  "NaNs in chunks 3 and 1": {3 * C + 1: np.nan, C + 7: -np.nan}}
    rows = []
    for where in cases.values():
        row = base.copy()
        for k, v in where.items():
            row[k] = sign * v if v == v and v != 0 else v
        rows.append(row)
    x = np.stack(rows)
    got = np.asarray(getattr(gp, op)(x, axis=1))
    want = [_expected(row, op) for row in x]
    bad = [(name, int(g), w) for name, g, w in zip(cases, got, want) if int(g) != w]
    assert not bad, f"{op} {dtype}: case, got, want: {bad}"
    for row, w in zip(x, want):   # a whole array: one row of K
        assert int(np.asarray(getattr(gp, op)(row))) == w
