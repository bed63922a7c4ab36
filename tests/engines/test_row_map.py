"""2-d calls with an operand broadcast along the rows or down the columns run as the row map
(engines/cpu/kernels.run_map: the broadcast operand read once per row or as one row, vector loops):
the same bits as the same call on materialized, contiguous operands, for every layout it takes."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import kernels

_RNG = np.random.default_rng(7)
_X = (_RNG.standard_normal((33, 130)) * 3).astype(np.float32)


def _as(a, dtype):
    if dtype == "bfloat16":
        return a.astype(ml_dtypes.bfloat16)
    if dtype in ("int32", "int8"):
        return (a * 10).astype(dtype)
    if dtype == "bool":
        return a > 0
    if dtype == "complex64":
        return (a + 1j * a[::-1]).astype(np.complex64)
    return a.astype(dtype)


# (name, first operand, second operand): views of _X with a row-constant or column-constant operand
LAYOUTS = {
    "matrix op row max": lambda x: (x, x.max(axis=1, keepdims=True) if x.dtype != np.bool_ else x[:, :1]),
    "row max op matrix": lambda x: (x[:, 3:4], x),
    "matrix op one row": lambda x: (x, x[5]),
    "one row op matrix": lambda x: (x[0], x),
    "column op row": lambda x: (x[:, :1], x[1]),
    "3-d op (B, T, 1)": lambda x: (x[:32].reshape(4, 8, 130), x[:32, :1].reshape(4, 8, 1)),
}
CASES = [(op, dt) for op, dt in [("add", "float32"), ("subtract", "float16"), ("multiply", "bfloat16"),
                                 ("true_divide", "float32"), ("maximum", "float32"), ("power", "float32"),
                                 ("arctan2", "float16"), ("logaddexp", "float32"), ("add", "int32"),
                                 ("bitwise_and", "int8"), ("multiply", "complex64"), ("logical_xor", "bool"),
                                 ("less", "bfloat16")]]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_broadcast_rows_and_columns_equal_materialized_operands(op, dtype, layout, monkeypatch):
    ran = []
    real = kernels._run_map_kinds   # (what run_map and the shape-classified route both run)

    def spy(*args, **kwargs):
        ran.append(True)
        return real(*args, **kwargs)
    monkeypatch.setattr(kernels, "_run_map_kinds", spy)
    a, b = LAYOUTS[layout](_as(_X, dtype))
    got = np.asarray(getattr(gp, op).__wrapped__(a, b))
    assert ran, "the call did not run as the row map"
    full = [np.ascontiguousarray(v) for v in np.broadcast_arrays(a, b)]
    want = np.asarray(getattr(gp, op).__wrapped__(*full))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_unary_math_of_a_broadcast_row_and_a_kernel_with_checks():
    """A unary call on a broadcast view runs as the row map too; a kernel with checks (integer
    floor_divide, which raises on a zero divisor) keeps the strided loop and its checks."""
    row = _X[0]
    got = np.asarray(gp.exp(np.broadcast_to(row, (40, 130))))
    assert got.tobytes() == np.asarray(gp.exp(np.ascontiguousarray(np.broadcast_to(row, (40, 130))))).tobytes()
    ints = (_X * 10).astype(np.int32)
    divisor = np.ones((33, 1), np.int32)
    divisor[4, 0] = 0
    with pytest.raises(ZeroDivisionError):
        gp.floor_divide(ints, divisor, policy="torch")
