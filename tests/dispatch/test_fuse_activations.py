"""The activations people fuse are one kernel each and equal the eager calls bit for bit, under
every policy that takes their dtypes: GELU (tanh and erf forms), SiLU, softplus, a sigmoid gate,
clip(x * y, 0, 6) (ReLU6 of a product) and a clamp before a cast."""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.kernel import ir
from gpupromote.promotion.policies import policy_names

_C = math.sqrt(2 / math.pi)
_R2 = 1 / math.sqrt(2)

#            name            ops   the function of (x, y)
ACTIVATIONS = [
    ("gelu_tanh",            9,    lambda x, y: 0.5 * x * (1 + gp.tanh(_C * (x + 0.044715 * x * x * x)))),
    ("gelu_erf",             5,    lambda x, y: 0.5 * x * (1 + gp.erf(x * _R2))),
    ("silu",                 2,    lambda x, y: x * gp.sigmoid(x)),
    ("softplus",             2,    lambda x, y: gp.log1p(gp.exp(x))),
    ("sigmoid_gate",         3,    lambda x, y: gp.sigmoid(y) * gp.tanh(x)),
    ("relu6_of_product",     2,    lambda x, y: gp.clip(x * y, 0, 6)),
    ("clamp_then_cast",      1,    lambda x, y: gp.clip(x, -128, 127).astype("int8")),   # (the cast: no op)
]
DTYPES = ["float32", "float16", "bfloat16", "float64"]


def _data(dtype, seed):
    x = np.random.default_rng(seed).standard_normal(257) * 4
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-3]
    with np.errstate(all="ignore"):
        return x.astype(gp.dtype(dtype).numpy)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.dtype, a.view(np.dtype(f"u{a.dtype.itemsize}")).tolist()


def _applies(kernel):
    return [n for n in kernel.steps() if isinstance(n, ir.Apply)]


@pytest.mark.parametrize("name, ops, fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_an_activation_is_one_kernel_with_every_step(name, ops, fn):
    x, y = _data("float32", 1), _data("float32", 2)
    kernel = gp.fuse(fn).kernel(x, y, policy="numpy")
    assert len(_applies(kernel)) == ops, kernel.text


@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, ops, fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_fused_equals_eager(name, ops, fn, dtype, policy):
    x, y = _data(dtype, 1), _data(dtype, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with gp.use_policy(policy):
                want = np.asarray(fn(gp.asarray(x), gp.asarray(y)))   # gp.Array: its operators are gp ops
        except (TypeError, ValueError, ArithmeticError) as exc:
            with pytest.raises(type(exc)):
                gp.fuse(fn, policy=policy)(x, y)
            return
        got = gp.fuse(fn, policy=policy)(x, y)
    assert _bits(got) == _bits(want)


@pytest.mark.parametrize("policy, result", [("torch", ml_dtypes.bfloat16), ("jax", ml_dtypes.bfloat16),
                                            ("numpy", np.float32)])   # NumPy: bfloat16 * a Python float is float32
def test_bfloat16_gelu_is_written_as_a_new_user_writes_it(policy, result):
    """The issue's first try: "write a fused GELU on bfloat16" (it failed at tanh)."""
    x = _data("bfloat16", 3)
    gelu = gp.fuse(lambda v: 0.5 * v * (1 + gp.tanh(_C * (v + 0.044715 * v ** 3))), policy=policy)
    got = gelu(x)
    assert got.dtype == result
    with np.errstate(invalid="ignore"):
        exact = 0.5 * x.astype(np.float64) * (1 + np.tanh(_C * (x.astype(np.float64) + 0.044715 * x.astype(np.float64) ** 3)))
    finite = np.isfinite(exact)
    # each of the chain's roundings to bfloat16 is within half an ulp (2**-8 relative)
    assert np.allclose(got.astype(np.float64)[finite], exact[finite], rtol=2**-5, atol=2**-7)
