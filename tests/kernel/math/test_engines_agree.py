"""The two renderings give the same bits: every public entry point, the Numba rendering against
the C++ rendering compiled by g++ (-std=c++17 -ffp-contract=off -fno-fast-math), on the inputs of
the accuracy tests (float64, float32), on every float16 and bfloat16 value (the _wide, _f16 and
_bf16 entry points) and on doubles around every narrow rounding boundary (gpm_round_*). Bits are compared
raw: NaN payloads and signs included.
"""
import numpy as np
import pytest

from . import _reference as R
from ._harness import NP, assert_same_bits, host_call, numba_call, signature
from ._inputs import binary_inputs, unary_inputs
from gpupromote.kernel.math import entry_points


def _inputs_for(name):
    pts, rts, is_tuple = signature(name)
    base, _, kind = name[len("gpm_"):].rpartition("_")
    if name.startswith("gpm_round_"):
        fmt = name[len("gpm_round_"):]
        _, vals = R.all_values(fmt)
        fin = vals[np.isfinite(vals)]
        s = np.unique(np.abs(fin))
        mids = (s[1:] + s[:-1]) / 2
        x = np.concatenate([vals, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), -mids,
                            unary_inputs("exp", "float64")])
        return (x,)
    if kind in ("f16", "bf16"):     # the narrow entry points: every value of the format, as float32
        with np.errstate(invalid="ignore"):
            return (R.all_values(kind)[1].astype(np.float32),)
    if kind == "wide":
        v = np.concatenate([R.all_values("f16")[1], R.all_values("bf16")[1]])
        if len(pts) == 1:
            return (v,)
        rng = np.random.default_rng(5)
        return rng.choice(v, 100000), rng.choice(v, 100000)
    dt = "float64" if kind == "f64" else "float32"
    if len(pts) == 1:
        return (unary_inputs(base, dt),)
    return binary_inputs(base, dt)


REAL = [n for n, (pts, rt) in entry_points().items() if not isinstance(rt, tuple) and not n.startswith("gpm_c")]


@pytest.mark.parametrize("name", REAL)
def test_numba_and_gxx_give_the_same_bits(name):
    args = _inputs_for(name)
    a = numba_call(name, *args)
    b = host_call(name, *args)
    assert_same_bits(args, a, b)


def test_every_entry_point_is_checked():
    names = set(entry_points())
    assert set(REAL) <= names
    assert {f"gpm_{f}_{k}" for f in ("exp", "log", "power") for k in ("f64", "f32", "wide")} <= names
    _ = NP
