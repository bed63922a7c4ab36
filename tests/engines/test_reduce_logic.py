"""any / all (engines/cpu/reduce_tree: runs of elements or-ed as vectors, a row stopping at the run
that decides it; a long row's chunks on threads) against NumPy: the deciding element first, last,
at run and chunk boundaries or absent, in bool, float (NaN is true, -0.0 false) and integer rows,
over rows, columns and whole arrays, on one thread and on three."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import threads

LENGTHS = [1, 7, 4095, 4096, 4097, 70_000, 300_001]


def _row(dtype, K, op, at):
    """A row all of the value that does not decide ``op`` (0 for any, 1 for all), with the deciding
    value at index ``at`` (None: nowhere)."""
    calm, deciding = (0, 1) if op == "any" else (1, 0)
    x = np.full(K, calm, dtype)
    if dtype == np.float32 and op == "any":
        x[::3] = -0.0                # false, like 0.0
        deciding = np.nan            # true, as NumPy has it
    if at is not None:
        x[at] = deciding
    return x


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int8], ids=["bool", "float32", "int8"])
@pytest.mark.parametrize("K", LENGTHS)
def test_whole_rows_and_arrays(op, dtype, K):
    places = sorted({0, K - 1, K // 2, min(4096, K - 1), min(8191, K - 1)}) + [None]
    rows = np.stack([_row(dtype, K, op, at) for at in places])
    want = getattr(np, op)(rows, axis=1)
    for n in (1, 3):
        with threads.num_threads(n):
            np.testing.assert_array_equal(np.asarray(getattr(gp, op)(rows, axis=1)), want)
            for r, w in zip(rows, want):
                assert bool(np.asarray(getattr(gp, op)(r))) == bool(w)
            np.testing.assert_array_equal(np.asarray(getattr(gp, op)(rows.T, axis=0)), want)


def test_fused_map_decides_early_and_late():
    x = np.zeros(100_003, np.float32)
    has_nan = gp.fuse(lambda a: gp.any(gp.isnan(a)))
    assert not bool(np.asarray(has_nan(x)))
    for at in (0, 4096, 100_002):
        y = x.copy()
        y[at] = np.nan
        assert bool(np.asarray(has_nan(y)))
