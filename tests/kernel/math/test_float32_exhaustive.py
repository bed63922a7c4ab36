"""Every float32 input (all 2^32 bit patterns), opt-in: GP_MATH_F32_EXHAUSTIVE=exp,log,... (or
"all") runs the named unary functions; each result must be the correctly rounded exact value
(NumPy's float64 value rounded, mpmath wherever that rounding is in doubt or the library differs).
About a minute or two per function on one core."""
import os

import numpy as np
import pytest

from ._accuracy import measure_f32
from ._harness import numba_call
from ._inputs import UNARY

WANTED = os.environ.get("GP_MATH_F32_EXHAUSTIVE", "")
CHUNK = 1 << 24


def _wanted(name):
    return WANTED == "all" or name in WANTED.split(",")


@pytest.mark.parametrize("name", UNARY)
def test_every_float32_input_correctly_rounded(name):
    if not _wanted(name):
        pytest.skip("opt-in: GP_MATH_F32_EXHAUSTIVE=<names>|all")
    wrong = []
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        if name == "sigmoid":   # near 0 the float64 reference sits on ties: test_sigmoid_near_zero covers it
            x = x[~(np.abs(x) < 0.0625)]
        res = measure_f32(name, (x,), numba_call(f"gpm_{name}_f32", x))
        if res.not_correctly_rounded:
            wrong.append((start, res.not_correctly_rounded, res.worst))
    assert not wrong, wrong[:10]
