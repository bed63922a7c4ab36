"""Every owned math function on all 65,536 float16 and all 65,536 bfloat16 inputs, through the
engines: the CPU engine's gp.<fn> gives the library's narrow result, ``gpm_round_<fmt>`` of
``gpm_<fn>_wide`` (correctly rounded on every input: tests/kernel/math/test_narrow_exhaustive.py),
and the CUDA engine, run on the host tier, gives the CPU engine's bits on every input.

One kernel per function and format on each engine (46 each), 65,536 elements each."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.kernel.unary import UNARY
from tests import hostcuda
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical
from tests.kernel.math._harness import numba_call

pytestmark = HOSTCUDA_MARKS

FORMATS = {"float16": (np.float16, "f16"), "bfloat16": (ml_dtypes.bfloat16, "bf16")}
# the library's real functions carry the op's name (gpm_arcsin_wide is gp.arcsin's)
FUNCTIONS = [real for real, _ in UNARY.values()]
# under NumPy, sigmoid and erf are SciPy's (no float16 / bfloat16 loop: float64); torch keeps the format
POLICY = {"sigmoid": "torch", "erf": "torch"}


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        yield cp


def _every_value(fmt):
    return np.arange(65536, dtype=np.uint16).view(FORMATS[fmt][0])


def _library(fn, fmt, x):
    with np.errstate(invalid="ignore"):
        wide = numba_call(f"gpm_{fn}_wide", x.astype(np.float64))
    return numba_call(f"gpm_round_{FORMATS[fmt][1]}", wide).view(FORMATS[fmt][0])


def _quiet(f, *args, policy):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(*args, policy=policy)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_every_narrow_input(host, fn, fmt):
    x = _every_value(fmt)
    policy = POLICY.get(fn, "numpy")
    cpu = _quiet(getattr(gp, fn), x, policy=policy)
    assert cpu.dtype == x.dtype
    want = _library(fn, fmt, x)
    nan = np.isnan(cpu.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = np.flatnonzero((cpu.view(np.uint16) != want.view(np.uint16)) & ~nan)
    assert not bad.size, f"{fn}({fmt}): {bad.size} inputs differ from the library, e.g. {x[bad[:4]]}"
    device = _quiet(getattr(gp, fn), gp.asarray(x, device="cuda"), policy=policy)
    assert_bit_identical(device, cpu, host, f"{fn}({fmt}) on the host tier")
