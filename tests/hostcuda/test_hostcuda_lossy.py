"""gp.sanitize on the CUDA engine, run on the host tier: the generated CUDA kernels carry the
sanitizer's checks (the same IR as the CPU engine's), set the same flags, and the reports and the
results are those of the CPU engine, eager and fused. A subset of tests/dispatch/test_sanitize.py's
cases (each is one g++ build)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from tests import hostcuda
from tests.dispatch.test_sanitize import CASES, FUSED, _chain, plain, sanitized
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical

pytestmark = HOSTCUDA_MARKS

_ON_DEVICE = ("a-int64-2**53+1-to-float64", "a-int16-257-to-bfloat16", "b-uint64-2**63-to-float64",
              "c-1e5-overflows-float16", "e-int8-127+1", "e-int64-2**62*2", "e-uint64-max+1", "e-abs-int64-INT_MIN")


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        yield cp


def _device(operands, cp):
    return [cp.asarray(x) if isinstance(x, np.ndarray) else x for x in operands]


@pytest.mark.parametrize("policy, op, edge, inside",
                         [pytest.param(*c[1:5], id=c[0]) for c in CASES if c[0] in _ON_DEVICE])
def test_the_cuda_kernels_report_what_the_cpu_engine_reports(host, policy, op, edge, inside):
    for operands in (edge, inside):
        want, want_reports = sanitized(lambda: getattr(gp, op)(*operands, policy=policy))
        on_device = _device(operands, host)
        got, reports = sanitized(lambda: getattr(gp, op)(*on_device, policy=policy))
        assert_bit_identical(got, want, host, f"{policy} {op}")
        assert_bit_identical(plain(lambda: getattr(gp, op)(*on_device, policy=policy)), want, host, "unsanitized")
        assert [repr(r) for r in reports] == [repr(r) for r in want_reports]
        assert (len(reports) == 1) == (operands is edge)


@pytest.mark.parametrize("policy, edge", [pytest.param(c[1], c[2], id=c[0]) for c in FUSED[:2]])
def test_a_fused_cuda_chain_reports_what_the_cpu_engine_reports(host, policy, edge):
    fused = gp.fuse(_chain, policy=policy)
    want, want_reports = sanitized(lambda: fused(*edge))
    on_device = _device(edge, host)
    got, reports = sanitized(lambda: fused(*on_device))
    assert_bit_identical(got, want, host, policy)
    assert [repr(r) for r in reports] == [repr(r) for r in want_reports] and reports


def test_a_0_d_device_float_narrowed_in_the_kernel_is_reported(host):
    # PyTorch reads a 0-d float64 tensor beside a float16 array as float16; on the host it is folded
    # (one value, checked as it is folded), on a device it is a kernel operand, checked there
    x, big = host.asarray(np.array([1, 2, 3], np.float16)), host.asarray(np.array(1e5))
    got, reports = sanitized(lambda: gp.add(x, big, policy="torch"))
    assert_bit_identical(got, plain(lambda: gp.add(x, big, policy="torch")), host, "unsanitized")
    assert [(r.what, r.operand, r.source, r.target, r.count, r.index, r.value) for r in reports] == \
        [("float_overflow", 1, "float64", "float16", 3, 0, 1e5)]
    assert sanitized(lambda: gp.add(x, host.asarray(np.array(6e4)), policy="torch"))[1] == []
