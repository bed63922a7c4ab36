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
from gpupromote.kernel.math.twins import FAST_TWINS, KEYED, SECOND_TWINS, TIE_KEY_LIMIT, TOGETHER

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
    (power) are checked at the exponents their twins answer (POWER_TWIN_EXPONENTS)."""
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


# the exponents each power twin answers without a flag: float32 0, +-1, 2, 3, 4 and 0.5 (exact
# operations; the second twin, keyed, answers the others: test_float32_power_second_twin_on_pairs);
# float64 2 only (the second twin, the entry point's core straight-line, the others:
# test_float64_power_second_twin_on_pairs)
POWER_TWIN_EXPONENTS = {"gpm_power_f32": (0.0, 1.0, -1.0, 2.0, 3.0, 4.0, 0.5), "gpm_power_f64": (2.0,)}


def _power_loop(entry, table=FAST_TWINS):
    if (entry, id(table)) not in _loops:
        twin, rare = table[entry]
        e = intrinsic_for(entry) if entry.endswith("_f32") else _F[entry]
        t, r = intrinsic_for(twin), intrinsic_for(rare)
        keyed = rare in KEYED

        @njit(error_model="numpy")
        def loop(x, y, want, got, flagged):
            for i in range(x.size):
                want[i], got[i] = e(x[i], y[i]), t(x[i], y[i])
                flagged[i] = (r(x[i], y[i]) <= TIE_KEY_LIMIT) if keyed else r(x[i], y[i])
        _loops[entry, id(table)] = loop
    return _loops[entry, id(table)]


def _power_run(entry, x, y, table=FAST_TWINS):
    """(the pairs where the twin differs from the entry point and is not flagged, the flags)"""
    want, got, flagged = np.empty_like(x), np.empty_like(x), np.empty(x.size, np.bool_)
    _power_loop(entry, table)(x, y, want, got, flagged)
    bits = np.uint32 if x.dtype == np.float32 else np.uint64
    bad = (want.view(bits) != got.view(bits)) & ~flagged
    return np.stack([x[bad], y[bad]], axis=1), flagged


def _power_differences(entry, twin, rare, x):
    bad = []
    for y in POWER_TWIN_EXPONENTS[entry]:
        b, flagged = _power_run(entry, x, np.full(x.size, y, x.dtype))
        assert not flagged.any(), f"{rare} flags y = {y}"
        bad.append(b[:, 0])
    return np.concatenate(bad)


def test_power_twins_flag_what_they_leave():
    """The first twin flags every exponent but its own (NaN and infinities included) and none of
    those; the second, keyed, few ordinary pairs (about 2^-16 each) at any exponent."""
    x = (np.abs(np.random.default_rng(5).standard_normal(10**5)) * 4).astype(np.float32)
    for y in (2.5, -0.5, 1.5, 0.25, 5.0, -3.0, 7.0, 1e-45, np.inf, -np.inf, np.nan):
        _, flagged = _power_run("gpm_power_f32", x, np.full(x.size, y, np.float32))
        assert flagged.all(), f"the first twin answers y = {y}"
        _, flagged = _power_run("gpm_power_f32", x, np.full(x.size, y, np.float32), SECOND_TWINS)
        assert flagged.sum() <= 16, f"y = {y}: {flagged.sum()} of 10^5 flagged"
    for y in POWER_TWIN_EXPONENTS["gpm_power_f32"] + (-0.0,):
        _, flagged = _power_run("gpm_power_f32", x, np.full(x.size, y, np.float32))
        assert not flagged.any(), f"y = {y} flagged"
        _, flagged = _power_run("gpm_power_f32", x, np.full(x.size, y, np.float32), SECOND_TWINS)
        assert flagged.sum() <= 16, f"y = {y}: {flagged.sum()} of 10^5 flagged by the second twin"


def test_float32_power_second_twin_on_pairs():
    """The keyed twin on pairs the small exponents do not answer: random bit patterns, moderate
    bases with moderate, integer (exact products, exact ties of float32 among them), half and third
    exponents, powers of two, and the special values against everything; where the key does not
    flag a pair, the entry point's bits. (Its error, 2^-42 at most, is a fifth of the key's window.)"""
    rng = np.random.default_rng(31)
    n = SAMPLES
    bits = rng.integers(0, 1 << 32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    base = np.concatenate([(rng.standard_normal(n) * 3).astype(np.float32), rng.integers(-300, 300, n).astype(np.float32),
                           (rng.integers(1, 1 << 12, n) / 64.0).astype(np.float32),
                           (rng.integers(1, 1 << 12, n) / 4096.0 + 1.0).astype(np.float32),
                           np.ldexp(1.0, rng.integers(-149, 128, n)).astype(np.float32)])
    expo = np.concatenate([(rng.standard_normal(n) * 8).astype(np.float32), rng.integers(-70, 70, n).astype(np.float32),
                           rng.choice(np.array(POWER_TWIN_EXPONENTS["gpm_power_f32"], np.float32), n),
                           (rng.integers(-40, 40, n) / 2.0).astype(np.float32),
                           (1.0 / rng.integers(1, 9, n)).astype(np.float32)])
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, -2.0, 1e-45, 3.4028235e38], np.float32)
    sx, sy = np.meshgrid(specials, np.concatenate([specials, expo[:64]]))
    x = np.concatenate([bits[0], base, rng.permutation(base), sx.ravel(), specials.repeat(n // 16)]).astype(np.float32)
    y = np.concatenate([bits[1], expo, expo, sy.ravel(), np.resize(expo, specials.size * (n // 16))]).astype(np.float32)
    bad, flagged = _power_run("gpm_power_f32", x, y, SECOND_TWINS)
    assert bad.size == 0, f"gpm_power_fast_f32 differs from gpm_power_f32 at (x, y) {bad[:6].tolist()}"
    assert flagged.mean() < 0.02, f"{flagged.mean():.4f} of the pairs flagged"


@pytest.mark.parametrize("key", TOGETHER)
def test_value_and_key_together_are_the_twin_and_its_key(key):
    """A keyed twin's combined function (twins.TOGETHER: what the engine's pass calls) returns the
    twin's bits and the key's, pair for pair: random bit patterns, moderate values, the specials."""
    both = TOGETHER[key]
    twin = next(t for table in (FAST_TWINS, SECOND_TWINS) for t, k in table.values() if k == key)
    f, k, b = intrinsic_for(twin), intrinsic_for(key), intrinsic_for(both)
    rng = np.random.default_rng(41)
    x = np.concatenate([rng.integers(0, 1 << 32, SAMPLES, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        (rng.standard_normal(SAMPLES) * 3).astype(np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)])
    y = np.roll(x, 7)

    @njit(error_model="numpy")
    def run(x, y, v, kv, v2, kv2):
        for i in range(x.size):
            v[i], kv[i] = f(x[i], y[i]), k(x[i], y[i])
            v2[i], kv2[i] = b(x[i], y[i])
    v, v2 = np.empty_like(x), np.empty_like(x)
    kv, kv2 = np.empty(x.size, np.uint64), np.empty(x.size, np.uint64)
    run(x, y, v, kv, v2, kv2)
    assert np.array_equal(v.view(np.uint32), v2.view(np.uint32)) and np.array_equal(kv, kv2)


def test_float64_power_second_twin_on_pairs():
    """The float64 second twin (the entry point's core without its branches) on pairs: random bit
    patterns, moderate bases with moderate, integer, half and huge exponents, negative bases with
    integer and other exponents, powers of two up to the subnormal range, the special values against
    everything, and pairs whose |y log2 x| lies on both sides of the rare bound (results near
    2^-1021 and 2^1024); where rare is false, the entry point's bits. Ordinary pairs are not flagged."""
    rng = np.random.default_rng(37)
    n = SAMPLES
    bits = rng.integers(0, 1 << 64, (2, n), dtype=np.uint64).view(np.float64)
    base = np.concatenate([rng.standard_normal(n) * 3, rng.integers(-300, 300, n).astype(np.float64),
                           rng.integers(1, 1 << 12, n) / 4096.0 + 1.0, np.ldexp(1.0, rng.integers(-1074, 1024, n)),
                           np.exp(rng.uniform(-700, 700, n))])
    expo = np.concatenate([rng.standard_normal(n) * 8, rng.integers(-70, 70, n).astype(np.float64),
                           rng.integers(-40, 40, n) / 2.0, rng.uniform(-1100, 1100, n),
                           1.0 / rng.integers(1, 9, n)])
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, 5e-324,
                         2.2250738585072014e-308, 1.7976931348623157e308], np.float64)
    sx, sy = np.meshgrid(specials, np.concatenate([specials, expo[:64]]))
    # |y log2 x| around 1000 (the bound) and 1022 (the subnormal edge): y = t / log2 x
    lx = np.exp(rng.uniform(-5, 5, n))
    near = rng.choice(np.array([-1080.0, -1030.0, -1022.5, -1021.0, -1000.0, -999.0, 999.0, 1000.0, 1023.9, 1024.5]), n)
    x = np.concatenate([bits[0], base, rng.permutation(base), sx.ravel(), specials.repeat(n // 16), lx])
    y = np.concatenate([bits[1], expo, expo, sy.ravel(), np.resize(expo, specials.size * (n // 16)),
                        near / np.log2(lx) * (1 + rng.uniform(-1e-3, 1e-3, n))])
    bad, flagged = _power_run("gpm_power_f64", x, y, SECOND_TWINS)
    assert bad.size == 0, f"gpm_power_fast_f64 differs from gpm_power_f64 at (x, y) {bad[:6].tolist()}"
    ordinary = (np.abs(base[:n]) > 1e-3) & (np.abs(expo[:n]) < 20)
    _, flagged = _power_run("gpm_power_f64", base[:n][ordinary], expo[:n][ordinary], SECOND_TWINS)
    assert not flagged.any(), f"{flagged.sum()} ordinary pairs flagged"


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


@pytest.mark.parametrize("entry", [e for e, (_, rare) in FAST_TWINS.items() if rare in KEYED and "power" not in e])
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
