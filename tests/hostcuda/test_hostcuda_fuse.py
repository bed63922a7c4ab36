"""gp.fuse on the CUDA engine, run on the host tier: random chains (tests/dispatch/test_fuse.py's trees) traced
into one generated CUDA kernel, launched behind the real launcher on device arrays, equal bit for bit
to the CPU engine calling the same ops one at a time (the eager reference of tests/dispatch/test_fuse.py).

GP_HOSTCUDA_FUSE_EXAMPLES sets how many chains (default 60, 150 under GP_TEST_TIER=full: each new chain
is one g++ build, cached on disk by source hash for the next run).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gpupromote as gp
from tests.support import tier
from tests import hostcuda
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical
from tests.dispatch.test_fuse import chains, eager, evaluate

pytestmark = HOSTCUDA_MARKS


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        yield cp


def _on_device(x, cp):
    """The same operand on the device: arrays become CuPy arrays (or device gp.Arrays); a 0-d host
    array stays on the host, a CPU scalar folded into the kernel as on a GPU."""
    if isinstance(x, gp.Array):
        return gp.asarray(x.numpy(), device="cuda")
    return cp.asarray(x) if x.ndim else x


def _run(fn):
    """("ok", result) or ("raise", exception class); warnings are the CPU engine's alone (NumPy's
    floating-point flags), so they are not compared."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return "ok", fn()
        except (TypeError, ValueError, ArithmeticError) as exc:
            return "raise", type(exc)


@settings(max_examples=tier.count("GP_HOSTCUDA_FUSE_EXAMPLES", 60, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=chains())
def test_fused_chain_on_the_cuda_engine_equals_the_cpu_engine_eager(host, case):
    inputs, expr, policy = case
    fn = lambda *xs: evaluate(expr, xs)  # noqa: E731
    want = _run(lambda: eager(fn, inputs, policy))
    got = _run(lambda: gp.fuse(fn, policy=policy)(*[_on_device(x, host) for x in inputs]))
    what = f"{policy}: {expr}"
    assert got[0] == want[0], f"{what}: CUDA {got}, CPU engine {want}"
    if want[0] == "raise":
        assert got[1] is want[1], what
    else:
        assert_bit_identical(got[1], want[1], host, what)


def test_the_fused_chain_is_one_cuda_kernel(host):
    """The fused call on device arrays launches one generated kernel, not one per op."""
    a, b, c, d, e = (host.asarray(np.arange(1, 10, dtype=np.float32) * k) for k in range(1, 6))
    f = gp.fuse(lambda a, b, c, d, e: a * b + c * d - e)
    mark = len(host.launches)
    got = f(a, b, c, d, e)
    names = host.launched_since(mark)
    assert len(names) == 1 and names[0].startswith("gp_"), names
    want = gp.subtract(gp.add(gp.multiply(a.get(), b.get()), gp.multiply(c.get(), d.get())), e.get())
    assert_bit_identical(got, want, host, "a*b + c*d - e")
