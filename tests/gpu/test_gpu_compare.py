"""gp.compare on device arrays (marked ``gpu``; skipped without a device): a CuPy array, and a CUDA
torch tensor read through DLPack, give the report NumPy arguments give (the same kernels' bits,
copied to the host for the comparison)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from tests.gpu.test_gpu_reduce import GPU, _WHY
from tests.tools.test_compare import X_INT32, scaled_root_sum

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason=f"needs a CUDA device and CuPy ({_WHY})")]

POLICIES = ("numpy", "torch", "jax")


def _device_arguments():
    import cupy
    yield "cupy", cupy.asarray(X_INT32)
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        yield "torch-cuda", torch.tensor(X_INT32, device="cuda")


def test_device_arguments_give_the_numpy_report():
    expected = gp.compare(scaled_root_sum, X_INT32, policies=POLICIES)
    for name, x in _device_arguments():
        report = gp.compare(scaled_root_sum, x, policies=POLICIES)
        assert str(report) == str(expected), name
        for mine, theirs in zip(report.steps, expected.steps):
            for policy in POLICIES:
                assert isinstance(mine.values[policy], np.ndarray), name
                np.testing.assert_array_equal(mine.values[policy], theirs.values[policy], err_msg=name)
