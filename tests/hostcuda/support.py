"""Fixtures and helpers of the host tier's tests (tests/test_hostcuda_*.py)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from tests import hostcuda

AVAILABLE, WHY_NOT = hostcuda.available()
HOSTCUDA_MARKS = [pytest.mark.hostcuda, pytest.mark.skipif(not AVAILABLE, reason=f"host tier unavailable: {WHY_NOT}")]


def host_result(r, cp):
    """(dtype name, NumPy array) of a result of either engine, for bit comparisons."""
    if isinstance(r, gp.Array):
        return r.dtype.name, np.asarray(r.numpy())
    if isinstance(r, cp.ndarray):
        return str(r.dtype), r.get()
    r = np.asarray(r)
    return str(r.dtype), r


def _bits(x):
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "c":
        x = np.stack([x.real, x.imag])
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.itemsize in (1, 2, 4, 8) else x.view(np.uint8)


def assert_bit_identical(got, want, cp, what=""):
    """Same dtype, shape and bits (a NaN of any payload matches a NaN)."""
    (gd, g), (wd, w) = host_result(got, cp), host_result(want, cp)
    assert (gd, g.shape) == (wd, w.shape), f"{what}: CUDA gave {gd}{g.shape}, the CPU engine {wd}{w.shape}"
    if g.dtype.kind in "fc" or g.dtype.kind == "V" or str(g.dtype).startswith(("bfloat16", "float8")):
        with np.errstate(invalid="ignore"):
            gn = np.isnan(g.astype(np.complex128 if g.dtype.kind == "c" else np.float64))
            wn = np.isnan(w.astype(np.complex128 if w.dtype.kind == "c" else np.float64))
        same_nan = gn & wn
        g, w = np.where(same_nan, np.zeros((), g.dtype), g), np.where(same_nan, np.zeros((), w.dtype), w)
    bad = _bits(g) != _bits(w)
    if bad.any():
        at = np.flatnonzero(bad.reshape(-1))[:4]
        flat_g, flat_w = np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(w).reshape(-1)
        at = at[at < flat_g.size]
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ from the CPU engine, e.g. at "
                             f"{at.tolist()}: {flat_g[at]} vs CPU {flat_w[at]}")
