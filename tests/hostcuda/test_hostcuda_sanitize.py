"""Undefined behaviour in the generated kernels, on the host tier with all of
-fsanitize=undefined (and float-cast-overflow): signed overflow, shifts out of range, float to
integer conversions out of range, ... A GPU reports none of these, it computes something; but
what it computes is then up to the compiler (NVRTC may assume a signed sum never overflows), so
a case that passes on x86 may not pass on the device. Here they fail the way a fault would.

A small set of kernels runs in ``make test``: the integer ops of the lean sweep (every op, a third of
its cases; the quick sweep's under GP_TEST_TIER=full) on 8- to 64-bit integers under NumPy's and
PyTorch's rules, the narrow-float conversions, and the cast kernels.
GP_HOSTCUDA_SANITIZE=undefined runs every host test in this mode instead.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import gpupromote as gp
from tests import hostcuda
from tests.support.engine_cases import Sweep, known_divergence
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical

pytestmark = HOSTCUDA_MARKS

MODE = "undefined"
DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float8_e5m2", "float32"}
POLICIES = {"numpy", "torch"}
_TIER = "lean"   # a third of the quick sweep's cases (tests/support/engine_cases.py); quick under GP_TEST_TIER=full


def _selected(case):
    policy, op, a, b, kind = case
    return policy in POLICIES and a == b and a in DTYPES


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed(sanitize=MODE) as cp:
        yield cp


@pytest.fixture(scope="module")
def sweep(host):
    from gpupromote.engines.cuda import engine as cuda_cupy
    build = hostcuda.builder(MODE)

    def precompile(items):
        loaded = cuda_cupy.precompile(items, group=256, workers=1)
        build.build_pending()
        return loaded
    return Sweep(_TIER, int(os.environ.get("GP_HOSTCUDA_WORKERS", os.cpu_count() or 1)), precompile,
                 select=_selected, mode=MODE)


def _cases():
    from tests.support.engine_cases import enumerate_cases
    out = []
    for case, _ in enumerate_cases(_TIER)[0]:
        if not _selected(case):
            continue
        d = known_divergence(case, MODE)
        marks = [pytest.mark.xfail(strict=True, reason=d.cause)] if d else []
        out.append(pytest.param(case, id="-".join(case), marks=marks))
    return out


@pytest.mark.parametrize("case", _cases())
def test_no_undefined_behaviour(sweep, host, case):
    msg = sweep.check(case, host)
    assert msg is None, msg


CASTS = [("float32", "int8", [300.0, -129.0, 1e10, np.nan, np.inf]), ("float64", "uint16", [-1.0, 70000.0, 1e300]),
         ("float32", "int64", [9.3e18, -9.3e18, np.inf])]


def _cast_case(src, dst, vals):
    case = ("*", "astype", src, dst, "out-of-range")
    d = known_divergence(case, MODE)
    return pytest.param(src, dst, vals, id=f"{src}-{dst}",
                        marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=d.cause)] if d else [])


@pytest.mark.parametrize("src, dst, vals", [_cast_case(*c) for c in CASTS])
def test_out_of_range_float_to_int_cast(host, src, dst, vals):
    """NumPy's astype of a float outside the integer's range is C's undefined conversion too: x86
    gives one answer, a GPU's saturating cvt another. The cast kernel must not leave it to the
    compiler."""
    x = np.array(vals, np.dtype(src))
    with np.errstate(all="ignore"):
        want = x.astype(np.dtype(dst))
    try:
        got = gp.asarray(x, device="cuda").astype(dst)
    except host.CUDADriverError as exc:
        raise AssertionError(f"astype {src} -> {dst}: {exc}") from None
    assert_bit_identical(got, want, host, f"astype {src} -> {dst} out of range")


def test_in_range_casts_are_clean(host):
    x = np.array([1.5, -2.5, 127.0, -128.0, 0.0], np.float32)
    assert_bit_identical(gp.asarray(x, device="cuda").astype("int8"), x.astype(np.int8), host, "in range")
