"""gp.sanitize on the GPU (marked ``gpu``; skipped without a device): each lossy case of
tests/dispatch/test_sanitize.py with its array operands on the device gives the CPU engine's report
(what, operand, count, first index, value) and the same result bits, and nothing one step inside the
edge. The flags are set by the NVRTC-compiled kernel here, by the Numba one there, from one IR."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from tests.dispatch.test_sanitize import CASES, bits, plain, sanitized
from tests.gpu.test_gpu_reduce import GPU, _WHY

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason=f"needs a CUDA device and CuPy ({_WHY})")]


def _on_device(operands):
    # gp.asarray, not cupy.asarray: CuPy has no float8 / bfloat16 dtypes, gp.Array carries them
    return [gp.asarray(o, device="cuda") if isinstance(o, np.ndarray) else o for o in operands]


def _host(x):
    return x.numpy() if isinstance(x, gp.Array) else x.get() if hasattr(x, "get") else np.asarray(x)


def _fields(r):
    return (r.op, r.policy, r.what, r.operand, r.count, r.index, r.value, r.result)


@pytest.mark.parametrize("policy, op, edge, inside, expected", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_gpu_reports_what_the_cpu_engine_reports(policy, op, edge, inside, expected):
    fn = getattr(gp, op)
    want, want_reports = sanitized(lambda: fn(*edge, policy=policy))
    got, got_reports = sanitized(lambda: fn(*_on_device(edge), policy=policy))
    assert bits(_host(got)) == bits(want), "GPU result differs from the CPU engine's under the sanitizer"
    assert [_fields(r) for r in got_reports] == [_fields(r) for r in want_reports]
    got, got_reports = sanitized(lambda: fn(*_on_device(inside), policy=policy))
    assert bits(_host(got)) == bits(plain(lambda: fn(*inside, policy=policy)))
    assert got_reports == []


def test_gpu_raise_stops_a_fused_chain():
    import cupy as cp
    f = gp.fuse(lambda a, b: (a + b) * 2, policy="numpy")
    with gp.sanitize("raise"), pytest.raises(gp.LossyPromotionError, match="wrapped"):
        f(cp.asarray(np.array([0, 127], np.int8)), cp.asarray(np.array([1, 1], np.int8)))
