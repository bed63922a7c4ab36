"""Accuracy, measured: every function on GP_MATH_SAMPLES (default 10^5) random inputs per type,
plus edge values and known hard cases (tests/kernel/math/_inputs.py).

* float64 results are within 1 ulp of the exact value (mpmath decides wherever the library and
  NumPy's float64 function differ, the largest differences first, and on a random subsample);
* float32 results are correctly rounded (every result that differs from NumPy's float64 value
  rounded to float32, or whose rounding that value leaves in doubt, is decided with mpmath).
"""
import numpy as np
import pytest

from ._accuracy import measure_f32, measure_f64
from ._harness import numba_call
from ._inputs import BINARY, UNARY, binary_inputs, unary_inputs


@pytest.mark.parametrize("name", UNARY)
def test_unary_float64_within_one_ulp(name):
    x = unary_inputs(name, "float64")
    res = measure_f64(name, (x,), numba_call(f"gpm_{name}_f64", x))
    assert res.max_ulp <= 1.0, (res.max_ulp, res.worst)


@pytest.mark.parametrize("name", BINARY)
def test_binary_float64_within_one_ulp(name):
    x, y = binary_inputs(name, "float64")
    res = measure_f64(name, (x, y), numba_call(f"gpm_{name}_f64", x, y))
    assert res.max_ulp <= 1.0, (res.max_ulp, res.worst)


@pytest.mark.parametrize("name", UNARY)
def test_unary_float32_correctly_rounded(name):
    x = unary_inputs(name, "float32")
    res = measure_f32(name, (x,), numba_call(f"gpm_{name}_f32", x))
    assert res.not_correctly_rounded == 0, (res.not_correctly_rounded, res.max_ulp, res.worst)


@pytest.mark.parametrize("name", BINARY)
def test_binary_float32_correctly_rounded(name):
    x, y = binary_inputs(name, "float32")
    res = measure_f32(name, (x, y), numba_call(f"gpm_{name}_f32", x, y))
    assert res.not_correctly_rounded == 0, (res.not_correctly_rounded, res.max_ulp, res.worst)


def test_inputs_cover_the_range():
    x = unary_inputs("exp", "float64")
    assert len(x) >= 100000
    assert np.isnan(x).any() and np.isinf(x).any() and (x == 0).any()
    assert np.nanmax(np.abs(x[np.isfinite(x)])) > 1e300 and np.nanmin(np.abs(x[x != 0])) < 1e-300


def test_float32_exception_table_is_correct_and_applied():
    """_f32_fixes.py lists the float32 inputs (found over all 2^32) where the double evaluation lies
    too close to a rounding boundary; each listed result is the correctly rounded exact value, and
    both engines return it."""
    import math
    import re
    from pathlib import Path

    from . import _reference as R
    from ._harness import host_call
    src = (Path(__file__).resolve().parents[3] / "gpupromote/kernel/math/_f32_fixes.py").read_text()
    rows = []
    for block in re.split(r"\n(?=@helper)", src):
        m = re.search(r"def gpm_fix_(\w+)_f32", block)
        if m:
            rows += [(m.group(1), int(a, 16), int(c, 16))
                     for a, c in re.findall(r"b == u32\((0x[0-9a-f]+)\), as_f32\(u32\((0x[0-9a-f]+)\)", block)]
    assert len(rows) >= 10
    for name, a, c in rows:
        x = np.array([a], np.uint32).view(np.float32)
        cr = R.round_exact(R.exact(name, float(x[0])), "f32")
        assert not math.isnan(cr) and np.array([cr], np.float32).view(np.uint32)[0] == c, (name, hex(a))
        for call in (numba_call, host_call):
            assert call(f"gpm_{name}_f32", x).view(np.uint32)[0] == c, (name, hex(a), call)


def test_sigmoid_near_zero_float32_ties():
    """sigmoid(x) = 1/2 + x/4 - x^3/48 + ...: for float32 x, 1/2 + x/4 is often exactly a float32
    tie, and the exact value lies just beside it; the float32 result must still round correctly."""
    import math

    from . import _reference as R
    rng = np.random.default_rng(3)
    x = (np.exp(rng.uniform(np.log(2**-26), np.log(0.07), 2000)) * rng.choice([-1, 1], 2000)).astype(np.float32)
    k = rng.integers(0, 2**18, 2000) * 2 + 1
    ties = (k.astype(np.float64) * 2.0**-23).astype(np.float32)      # 1/2 + x/4 = 1/2 + k 2^-25: a float32 tie
    ties = ties[np.abs(ties) < 0.0625]
    x = np.concatenate([x, ties, -ties])
    ours = numba_call("gpm_sigmoid_f32", x)
    wrong = [float(v) for v, o in zip(x, ours)
             if np.float32(R.round_exact(R.exact("sigmoid", float(v)), "f32")) != o]
    assert not wrong and not math.isnan(float(ours[0])), wrong[:5]
