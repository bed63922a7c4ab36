"""clip: its forms (both bounds, one left out as None, arrays as bounds), the compiled dispatcher
and the Python path giving one answer, and NumPy's saturation of an integer bound outside the
array's type (np.clip(int8, 0, 300) clips to [0, 127], it does not wrap 300 to 44)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp

X8 = np.array([-128, -3, 0, 5, 100, 127], np.int8)


@pytest.mark.parametrize("lo, hi", [(0, 300), (-1000, 3), (-1000, 1000), (0, 100), (None, 300), (-300, None)])
def test_an_int_bound_outside_the_type_saturates_as_numpy(lo, hi):
    want = np.clip(X8, lo, hi)
    for _ in range(3):   # the first call builds the compiled entry, the next ones take it
        got = gp.clip(X8, lo, hi)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_a_bound_beyond_numpys_own_limit_raises_as_numpy():
    with pytest.raises(OverflowError, match="1099511627776"):
        np.clip(X8, 2**40, None)
    with pytest.raises(OverflowError, match="1099511627776"):
        gp.clip(X8, 2**40, None)


def test_the_forms_agree_with_numpy():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    lo, hi = np.full(13, -1.0, np.float32), np.float32(2.0)
    for args in [(x, -1.0, 2.0), (x, None, 2.0), (x, -1.0, None), (x, lo, hi), (x, lo, None)]:
        got, want = gp.clip(*args), np.clip(*args)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_the_aliases_are_clip():
    assert gp.clamp is gp.clip and gp.clip_by_value is gp.clip


def test_torch_refuses_a_bound_its_dtype_cannot_hold_and_says_how_to_fix_it():
    # torch.clamp(uint8 tensor, -1, 300): "value cannot be converted to type uint8_t without overflow"
    with pytest.raises(OverflowError, match=r"policy 'torch', clip: .*uint8.*Convert it explicitly"):
        gp.clip(np.zeros(3, np.uint8), -1, 300, policy="torch")
