"""The fast twins (twins.FAST_TWINS): wherever the rare predicate is false, the twin gives the
entry point's bits (the CPU engine relies on it: engines/cpu/source.py runs a block with the twin
and reruns it with the entry point only where rare held). Sampled here (random bit patterns,
moderate values, the edges around the predicates' thresholds, every float16 and bfloat16 value);
every float32 input with GP_MATH_F32_EXHAUSTIVE=twins (or "all"), about a minute a function on one
core. Measured over all 2^32 inputs on 2026-11-27: 0 differences for sin, cos, tan, tanh, log, log2, log10, log1p.
The keyed twins (twins.KEYED: float32 tanh, log, log2, log10, log1p) flag their rare inputs by a key at most
TIE_KEY_LIMIT; they are also checked to flag few ordinary inputs (a flagged block is computed twice)."""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from numba import njit

from gpupromote.kernel.math import numba_functions
from gpupromote.kernel.math.twins import FAST_TWINS, KEYED, TIE_KEY_LIMIT

from ._harness import intrinsic_for
from ._inputs import SAMPLES

WANTED = os.environ.get("GP_MATH_F32_EXHAUSTIVE", "")
CHUNK = 1 << 24


def _sample(dtype):
    rng = np.random.default_rng(29)
    bits = rng.integers(0, 1 << 64, SAMPLES, dtype=np.uint64)
    bits = bits.astype(np.uint32).view(np.float32) if dtype == np.float32 else bits.view(np.float64)
    moderate = (rng.standard_normal(SAMPLES) * 1000).astype(dtype)
    edges = [16777216.0, 708.0, 709.0, 710.0, 745.0, 746.0, 1.0, 2.2250738585072014e-308, 5e-324, 1e-300, 1e300,
             np.finfo(dtype).max, np.finfo(dtype).tiny, 22.0, 40.0, 711.0, 1020.0, 1080.0, 1500000.0,
             0.7853981633974483, 1.4901161193847656e-08, 7.450580596923828e-09, 3.725290298461914e-09, 36.0, 38.0,
             5.551115123125783e-17, 268435456.0]
    around = []
    for e in np.array(edges, dtype):
        if np.isfinite(e):
            around += [e, np.nextafter(e, dtype(0)), np.nextafter(e, dtype(np.inf))]
    around = np.array(around, dtype)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
    narrow = [np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(d).astype(dtype)
              for d in (np.float16, ml_dtypes.bfloat16)]
    return np.concatenate([bits, moderate, around, -around, specials, *narrow])


_loops: dict = {}
_F = numba_functions(flat=True)


def _differences(entry, twin, rare, x):
    """The inputs where the twin's bits differ from the entry point's and rare is false (the twin
    and the predicate as the CPU kernels write them: llvm_binding's intrinsics). Binary entry points
    (power) are checked at y = 2, their twin's case."""
    if entry.startswith("gpm_power_"):
        return _power_differences(entry, twin, rare, x)
    if entry not in _loops:
        e = intrinsic_for(entry) if entry.endswith("_f32") else _F[entry]
        t, r = intrinsic_for(twin), intrinsic_for(rare)

        if rare in KEYED:
            @njit(error_model="numpy")
            def loop(x, want, got, flagged):
                for i in range(x.size):
                    want[i], got[i], flagged[i] = e(x[i]), t(x[i]), r(x[i]) <= TIE_KEY_LIMIT
        else:
            @njit(error_model="numpy")
            def loop(x, want, got, flagged):
                for i in range(x.size):
                    want[i], got[i], flagged[i] = e(x[i]), t(x[i]), r(x[i])
        _loops[entry] = loop
    want, got, flagged = np.empty_like(x), np.empty_like(x), np.empty(x.size, np.bool_)
    _loops[entry](x, want, got, flagged)
    bits = np.uint32 if x.dtype == np.float32 else np.uint64
    return x[(want.view(bits) != got.view(bits)) & ~flagged]


def _power_differences(entry, twin, rare, x):
    if entry not in _loops:
        e = intrinsic_for(entry) if entry.endswith("_f32") else _F[entry]
        t, r = intrinsic_for(twin), intrinsic_for(rare)

        @njit(error_model="numpy")
        def loop(x, y, want, got, flagged):
            for i in range(x.size):
                want[i], got[i], flagged[i] = e(x[i], y), t(x[i], y), r(x[i], y)
        _loops[entry] = loop
    want, got, flagged = np.empty_like(x), np.empty_like(x), np.empty(x.size, np.bool_)
    _loops[entry](x, x.dtype.type(2.0), want, got, flagged)
    assert not flagged.any()
    bits = np.uint32 if x.dtype == np.float32 else np.uint64
    return x[want.view(bits) != got.view(bits)]


@pytest.mark.parametrize("entry", FAST_TWINS)
def test_twin_equals_its_entry_point_off_the_rare_inputs(entry):
    twin, rare = FAST_TWINS[entry]
    x = _sample(np.float32 if entry.endswith("_f32") else np.float64)
    bad = _differences(entry, twin, rare, x)
    assert bad.size == 0, f"{twin} differs from {entry} at {bad[:8]!r}"


@pytest.mark.parametrize("entry", [e for e in FAST_TWINS if e.endswith("_f32")])
def test_twin_on_every_float32_input(entry):
    if WANTED not in ("all", "twins"):
        pytest.skip("opt-in: GP_MATH_F32_EXHAUSTIVE=twins|all")
    twin, rare = FAST_TWINS[entry]
    bad = []
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        bad.extend(_differences(entry, twin, rare, x)[:4].tolist())
    assert not bad, f"{twin} differs from {entry} at {bad[:8]!r}"


@pytest.mark.parametrize("entry", [e for e, (_, rare) in FAST_TWINS.items() if rare in KEYED])
def test_keyed_twins_flag_few_ordinary_inputs(entry):
    """A keyed twin flags inputs near a float32 tie (about 2 TIE_KEY_LIMIT / 2^29 of them, 2^-16)
    and its special cases: of 10^6 moderate values at most 64 (expected about 15)."""
    twin, rare = FAST_TWINS[entry]
    x = np.abs(np.random.default_rng(31).standard_normal(1_000_000)).astype(np.float32) + np.float32(1e-3)
    key = intrinsic_for(rare)

    @njit(error_model="numpy")
    def flagged(x):
        n = 0
        for i in range(x.size):
            n += key(x[i]) <= TIE_KEY_LIMIT
        return n
    assert 0 < flagged(x) <= 64
