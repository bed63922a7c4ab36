"""Numpy scalars and 0-d arrays as operands (x - x.max(), x * np.float32(0.5), x / np.array(3.0)): the
compiled dispatcher folds them by value (fastpath/folding.c reads their values in C, ops.c turns a
0-d array into its scalar), the Python op function through its runners (folding.converter); both
must give what the general path gives (dispatch/eager.call, which folds them through fold_operand),
under every policy: the result's dtype and bits, or the same error.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support.compiled import assert_all_served
from gpupromote.dispatch import eager, opfunctions
from tests.dispatch.test_dispatcher import _array, _differences, _fresh, _run
from tests.support import tier

pytestmark = pytest.mark.skipif(opfunctions._fastpath is None,
                                reason="GPUPROMOTE_PURE_PYTHON is set: the ops run in Python")

_NAN = float("nan")
# numpy scalars whose folding has a case of its own: signed zeros and NaNs (their sign and payload
# are the Python converter's), integers beyond 2**53 into a float (one rounding), values a narrower
# float overflows (NumPy's warning), types the C side leaves to Python (long double, bfloat16)
SCALARS = [np.bool_(True), np.int8(-128), np.uint8(255), np.int16(-300), np.int32(2**31 - 1),
           np.int64(2**53 + 1), np.int64(-2**63), np.uint64(2**64 - 1), np.float16(0.1), np.float16(-0.0),
           np.float16(65504), np.float16(-_NAN), np.float32(3.4e38), np.float32(16777217), np.float32(1e-45),
           np.float32(-_NAN), np.float64(0.1), np.float64(1e300), np.float64(65520.0), np.float64(2**53 + 1),
           np.float64(-np.inf), np.complex64(1 + 2j), np.complex128(complex(1e300, 1)), np.longdouble(1.5),
           ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e5m2(-0.015625)]   # (float8_e5m2 says kind 'f', 1 byte)
ARRAYS = ["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float32", "float64", "complex64"]
OPS = ["add", "less", "maximum", "floor_divide"]


def _cases(policy):
    cases = []
    cells = tier.thin([(repr(s), d) for s in SCALARS for d in ARRAYS], 3, shift=gp.policies().index(policy))
    by_repr = {repr(s): s for s in SCALARS}
    for label, dtype in cells:
        s, a = by_repr[label], _array(dtype, seed=4)
        zero_d = np.array(s)
        swapped = [(zero_d.astype(zero_d.dtype.newbyteorder()), "0-d swapped")] if zero_d.dtype.itemsize > 1 else []
        for value, kind in [(s, type(s).__name__), (zero_d, "0-d"), *swapped]:
            cases.append((f"({dtype}[5], {kind} {label})", lambda a=a, v=value: ((_fresh(a), _fresh(v)), {"policy": policy})))
            cases.append((f"({kind} {label}, {dtype}[5])", lambda a=a, v=value: ((_fresh(v), _fresh(a)), {"policy": policy})))
    return cases


@pytest.mark.parametrize("policy", gp.policies())
def test_numpy_scalars_and_0d_arrays_give_the_general_paths_outcome(policy):
    cases = _cases(policy)
    diffs = []
    for op in OPS:
        diffs += _differences(op, cases)   # the compiled op against the Python function
        python = getattr(gp, op).__wrapped__
        for label, make in cases:          # the Python function against the general path
            want = _run(lambda *args, policy: eager.call(op, args, policy, None), make)
            got = _run(python, make)
            if got[0] != want[0] or got[2] != want[2]:
                diffs.append(f"{op}{label}:\n    Python  {got}\n    general {want}")
    assert not diffs, f"{len(diffs)} calls differ under {policy!r}:\n" + "\n".join(diffs[:15])


def test_a_reduction_subtracted_stays_on_the_compiled_path():
    x = np.linspace(-3, 3, 1024, dtype=np.float32)
    calls = [lambda: gp.subtract(x, x.max()), lambda: gp.multiply(x, np.float32(0.5)), lambda: gp.divide(x, np.array(3.0)),
             lambda: gp.add(np.float16(2), x[:7].astype(np.float16)), lambda: gp.less(x, np.int64(1), policy="torch")]
    assert_all_served(calls)
    assert gp.subtract(x, x.max()).tobytes() == (x - x.max()).tobytes()
