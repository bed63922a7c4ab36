"""gp.sanitize's cost (pytest-benchmark): the same call with the sanitizer off and on, one thread,
N = 10**7, on values it finds nothing lost in (the clean path: the kernel's compares, no report).

Rows: ``gp.add(int64, float32)`` under NumPy's rules (int64 read into float64: one range compare
per element) and a fused 5-op chain on the same kinds of input. The table's ratio is the
unsanitized median / the sanitized one; goal (issue 27): >= 1/1.5 (sanitized at most 1.5x the
plain call). The sanitizer off costs nothing on the compiled dispatcher (one int it tests), which
bench_cpu.py's rows measure as before.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402

N = 10**7
_rng = np.random.default_rng(2)
I64 = _rng.integers(-2**40, 2**40, N, dtype=np.int64)
F32 = [_rng.standard_normal(N).astype(np.float32) for _ in range(3)]


@gp.fuse(policy="numpy")
def chain5(i, f, g, h):
    return ((i + f) * g - h) * f + g   # five ops: add, multiply, subtract, multiply, add


def _add():
    return gp.add(I64, F32[0], policy="numpy")


def _chain():
    return chain5(I64, *F32)


CASES = {"add int64+float32": _add, "fuse 5-op chain int64,float32": _chain}


def _on(fn):
    def run():
        with gp.sanitize():
            return fn()
    return run


@pytest.mark.parametrize("case", CASES)
def test_sanitizer_on(benchmark, case):
    fn = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error", gp.LossyPromotionWarning)   # clean values: no report
        got = _on(fn)()
    assert np.array_equal(got.view(np.uint8), fn().view(np.uint8))   # the same bits
    benchmark.group = f"sanitize {case} N=1e7"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_on(fn), rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_sanitizer_off(benchmark, case):
    fn = CASES[case]
    fn()
    benchmark.group = f"sanitize {case} N=1e7"
    benchmark.extra_info["impl"] = "sanitizer off"
    benchmark.pedantic(fn, rounds=10, warmup_rounds=1)
