"""An ``out=`` array of another dtype than the result's is written by the op's own kernel with the
cast fused in (ir.stored_as; dispatch/eager.run_into_out): the same bits as computing the result and
casting it (what NumPy and torch do, and what the temporary and ``copyto`` gave before), in one pass.
Where out overlaps an input other than element for element, the temporary stays."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import engine

N = 2000
_rng = np.random.default_rng(5)
_VALUES = np.concatenate([_rng.standard_normal(N - 16) * 40,
                          [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-8, -1e-8, 65504.0, 65520.0, 1e5, -1e5, 0.5,
                           2.5, -2.5, 300.0, -129.0]])

# (policy, op, input dtype, out dtype): out dtypes each policy's out= rule accepts
CASES = [
    ("numpy", "add", "float32", "float16"),
    ("numpy", "add", "float64", "float32"),
    ("numpy", "add", "float64", "bfloat16"),
    ("numpy", "add", "float16", "float32"),
    ("numpy", "multiply", "int8", "int32"),
    ("numpy", "multiply", "int32", "float64"),
    ("numpy", "sigmoid", "float16", "float16"),      # scipy's expit of float16 is float64
    ("numpy", "exp", "float32", "float16"),
    ("numpy", "sqrt", "int16", "float16"),
    ("numpy", "floor", "float64", "float16"),
    ("numpy", "greater", "float32", "int8"),
    ("torch", "add", "float32", "float16"),
    ("torch", "tanh", "bfloat16", "float32"),
    ("torch", "true_divide", "int32", "float64"),
    ("jax", "subtract", "float16", "float64"),
]


def _array(dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _VALUES.astype(dtype)


def _unary(op):
    return op in {"sigmoid", "exp", "sqrt", "floor", "tanh"}


def _no_copyto(monkeypatch):
    def refuse(dst, src):
        raise AssertionError("out= of another dtype went through a temporary and copyto")
    monkeypatch.setattr(engine.BACKEND, "copyto", refuse)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("policy, op, dtype, out_dtype", CASES, ids=["-".join(c) for c in CASES])
def test_eager_out_of_another_dtype_is_the_result_cast(monkeypatch, policy, op, dtype, out_dtype):
    x, y = _array(dtype), _array(dtype)[::-1].copy()
    args = (x,) if _unary(op) else (x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(getattr(gp, op)(*args, policy=policy)).astype(out_dtype)
        out = np.empty(N, out_dtype)
        _no_copyto(monkeypatch)
        got = getattr(gp, op)(*args, out=out, policy=policy)
    assert got is out
    diff = np.nonzero(_bits(out) != _bits(want))[0]
    assert diff.size == 0, f"{op}: first differing byte {diff[:4]}, got {out[diff[0] // out.itemsize]!r}"


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("dtype, out_dtype", [("float32", "float16"), ("float16", "float64"), ("float64", "bfloat16")],
                         ids=["f4-into-f2", "f2-into-f8", "f8-into-bf16"])
def test_fused_out_of_another_dtype_is_the_eager_result_cast(monkeypatch, policy, dtype, out_dtype):
    def gelu(v):
        return 0.5 * v * (1.0 + gp.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))
    x = _array(dtype) / 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gp.use_policy(policy):
            # (a gp.Array's operators are the policy's; a NumPy array's would be NumPy's)
            want = np.asarray(gelu(gp.asarray(x))).astype(out_dtype)
        fused = gp.fuse(gelu, policy=policy)
        out = np.empty(N, out_dtype)
        _no_copyto(monkeypatch)
        fused(x, out=out)
    assert np.array_equal(_bits(out), _bits(want))


def test_broadcast_out_of_another_dtype():
    x = np.arange(6, dtype=np.float32).reshape(1, 6) / 7
    out = np.empty((4, 6), np.float16)
    gp.exp(x, out=out, policy="numpy")
    assert np.array_equal(out, np.broadcast_to(np.exp(x).astype(np.float16), (4, 6)))


def test_out_overlapping_an_input_keeps_the_temporary():
    # out's bytes cover two float16 inputs each: written element by element, the kernel would
    # overwrite inputs it has yet to read; NumPy buffers, and so does gpupromote
    buf = np.zeros(16, np.float32)
    halves = buf.view(np.float16)
    halves[:] = np.arange(32, dtype=np.float16)
    x = halves[:16]
    want = np.negative(x.copy()).astype(np.float32)
    gp.negative(x, out=buf, policy="numpy")
    assert np.array_equal(buf, want)


def test_bfloat16_storage_is_written_as_ml_dtypes_casts():
    x = _array("float32")
    out = np.empty(N, ml_dtypes.bfloat16)
    gp.add(x, x, out=out, policy="numpy")
    assert np.array_equal(_bits(out), _bits((x + x).astype(ml_dtypes.bfloat16)))
