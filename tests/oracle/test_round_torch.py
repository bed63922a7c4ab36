"""gp.round(x, decimals) under the torch policies equals torch.round(t, decimals=d) on the CPU bit for
bit (its composition in x's opmath type: float16 and bfloat16 in float32), for every float dtype and
decimals from -6 to 8, eagerly, into out= and inside gp.fuse. Skips where torch is not installed."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp

pytestmark = pytest.mark.oracle

DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _values(name, n=3000, seed=11):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-4, 6, n)
    # halves at every scale (the ties rint breaks to even) and the specials
    ties = (rng.integers(-2000, 2000, 300) + 0.5) / 10.0 ** rng.integers(0, 4, 300)
    with np.errstate(over="ignore"):
        return np.concatenate([x, ties, [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, 1.5, 2.5, -2.5, 65504.0]]).astype(
            ml_dtypes.bfloat16 if name == "bfloat16" else name)


def _torch_round(torch, x, d):
    if x.dtype == ml_dtypes.bfloat16:
        t = torch.from_numpy(x.view(np.uint16)).view(torch.bfloat16)
        return torch.round(t, decimals=d).view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
    return torch.round(torch.from_numpy(x), decimals=d).numpy()


def _differ(got, want) -> list[int]:
    g, w = got.view(np.uint8).reshape(got.size, -1), want.view(np.uint8).reshape(want.size, -1)
    same_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    return np.nonzero((g != w).any(1) & ~same_nan)[0].tolist()


@pytest.mark.parametrize("policy", ["torch", "torch-f64"])
@pytest.mark.parametrize("name", DTYPES)
def test_round_to_decimals_is_torchs(name, policy):
    torch = pytest.importorskip("torch")
    x = _values(name)
    failures = []
    with np.errstate(all="ignore"):
        for d in range(-6, 9):
            want = _torch_round(torch, x, d)
            got = np.asarray(gp.round(x, d, policy=policy))
            assert got.dtype == want.dtype, (d, got.dtype, want.dtype)
            bad = _differ(got, want)
            if bad:
                failures.append(f"decimals={d}: {len(bad)} differ, e.g. x={x[bad[0]]!r}: {got[bad[0]]!r}, torch "
                                f"{want[bad[0]]!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["float16", "float32"])
def test_round_into_out_and_inside_fuse_is_torchs(name):
    torch = pytest.importorskip("torch")
    x = _values(name)
    want = _torch_round(torch, x, 2)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        assert gp.round(x, 2, out=out, policy="torch") is out
        assert _differ(out, want) == []
        fused = gp.fuse(lambda v: gp.round(v, 2), policy="torch")
        assert _differ(np.asarray(fused(x)), want) == []
