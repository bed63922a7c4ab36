"""torch on the CPU for the bench suites' baseline rows: one intra-op thread (as NumPy's ufuncs and
gpupromote's one-thread rows), and NumPy / ml_dtypes arrays as tensors without a copy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest


def torch_one_thread():
    """The torch module set to one intra-op thread; the row skips where torch is not installed."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


def as_torch(torch, x):
    """``x`` as a tensor sharing its memory (bfloat16 by bit pattern)."""
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)
