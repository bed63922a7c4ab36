"""Values of the unary functions and clip equal the frameworks' recorded values
(tests/observed/unary-values.jsonl.gz: NumPy, PyTorch, JAX with x64 off and on, on edge inputs).

Exact functions (rounding, sign of a real number, predicates, parts of complex numbers, abs,
square, clip ...): every bit, signed zeros included (any NaN matches any NaN); the sign of a complex
number (z / |z|, two roundings) within 1 ulp. Math functions: within 1 ulp of the
framework's value, or, where the framework is further from the exact value than that, equal to
the correctly rounded value (mpmath decides): gpupromote is correctly rounded where a framework
is not (JAX's float32 exp2 of 100 is 1.2676533e+30, 2**100 is 1.2676506e+30).
"""
from __future__ import annotations

import gzip
import json
import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.opfunctions import OP_FUNCTIONS
from gpupromote.tools.conformance import expected
from tests.support import tier
OBSERVED = __import__("pathlib").Path(__file__).resolve().parents[1] / "observed"

mpmath = pytest.importorskip("mpmath")

POLICY = {("numpy", "default"): "numpy", ("torch", "f32"): "torch", ("jax", "x32"): "jax", ("jax", "x64"): "jax-x64"}
MATH = {"abs", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "erf",
        "angle"}
_MP = {"rsqrt": lambda x: 1 / mpmath.sqrt(x), "exp2": lambda x: mpmath.power(2, x),
       "expm1": mpmath.expm1, "log1p": mpmath.log1p, "arcsin": mpmath.asin, "arccos": mpmath.acos, "arctan": mpmath.atan,
       "arcsinh": mpmath.asinh, "arccosh": mpmath.acosh, "arctanh": mpmath.atanh,
       "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)), "log2": lambda x: mpmath.log(x, 2),
       "log10": lambda x: mpmath.log(x, 10), "cbrt": mpmath.cbrt}


# Where gpupromote's value differs from a framework's on purpose, by (policy prefix, op, input dtype
# prefix), and which inputs (a predicate over the input array; None: the whole record).
# Note: each is a framework behaviour the policies do not emulate, with the reason.
DEVIATIONS = [
    # XLA's complex functions give NaN parts at infinities and NaNs, and other signs of zero on the
    # branch cuts, where C99 Annex G (NumPy's, and gpupromote's under every policy: one complex
    # library) gives exact parts.
    ("jax", "*", "complex", lambda x: ~(np.isfinite(x.real) & np.isfinite(x.imag)) | (x.real == 0) | (x.imag == 0),
     "XLA's complex special values"),
    # SciPy's complex erf (the Faddeeva function) has no owned implementation: no kernel.
    ("numpy", "erf", "complex", None, "no complex erf"),
    # XLA's cbrt of a subnormal, flushed to zero first, is -5.6e-16 (a defect); gpupromote gives 0.
    ("jax", "cbrt", "", lambda x: (x != 0) & (np.abs(x.astype(np.float64)) < np.finfo(np.float32).tiny), "XLA's cbrt"),
    # jnp.clip converts a Python int bound to an unsigned x's dtype first (-1 wraps to 255), then
    # promotes: the bounds become (255, 1.5); gpupromote clips with -1.
    ("jax", "clip", "uint", None, "jnp.clip's wrapped bound"),
    # torch negates complex numbers as 0 - z in its vectorized loop body and as -z in the scalar
    # tail, so the sign of a zero part depends on the element's position; gpupromote gives the body's
    # (what large arrays see). The records were made with AVX-512: the body is the first 64 bytes.
    ("torch", "negative", "complex", lambda x: np.arange(x.size) >= 64 // x.itemsize, "torch's loop tail"),
]


def _deviation(policy, op, dtype):
    for prefix, dev_op, dtype_prefix, where, _ in DEVIATIONS:
        if policy.startswith(prefix) and dev_op in ("*", op) and dtype.startswith(dtype_prefix):
            return (where,)
    return None


def _records():
    with gzip.open(OBSERVED / "unary-values.jsonl.gz", "rt") as f:
        for line in f:
            r = json.loads(line)
            policy = POLICY.get((r["fw"], r["config"]))
            if policy and r["family"] in ("unary", "clip") and "in_dtypes" not in r and expected(r) is not None:
                yield policy, r


# lean tier (tests/support/tier.py): each function on half its (policy, input dtype) cells, each of those
# under half the functions; GP_TEST_TIER=full replays every record
RECORDS = tier.thin(_records(), 2, row=lambda pr: pr[1]["op"], column=lambda pr: (pr[0], pr[1]["a"]["dtype"]))


def _array(texts, dtype):
    d = gp.dtype(dtype).numpy
    if dtype == "bool":
        return np.array([t == "True" for t in texts])
    if d.kind in "iu":
        return np.array([int(t) for t in texts], dtype=d)
    if d.kind == "c":
        return np.array([complex(t) for t in texts], dtype=d)
    return np.array([float(t) for t in texts], dtype=np.float64).astype(d)


def _bound(desc):
    if desc["kind"] == "s":
        return None if desc["dtype"] == "pynone" else eval(desc["value"], {"nan": float("nan"), "inf": float("inf")})
    return _array(desc["value"], desc["dtype"]).reshape(())


def _call(policy, r):
    x = _array(r["a"]["value"], r["a"]["dtype"])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if r["family"] == "clip":
            return x, gp.clip(x, _bound(r["lo"]), _bound(r["hi"]), policy=policy)
        return x, OP_FUNCTIONS[r["op"]](x, policy=policy)


def _ordered(v):
    """The bits of floats as integers ordered as the values (-0.0 and +0.0 apart, by one)."""
    width = 8 * v.dtype.itemsize
    bits = np.ascontiguousarray(v).view(f"u{v.dtype.itemsize}").astype(np.uint64)
    sign = np.uint64(1) << np.uint64(width - 1)
    magnitude = (bits & (sign - np.uint64(1))).astype(np.int64)
    return np.where((bits & sign) != 0, -magnitude - 1, magnitude)


def _correctly_rounded(op, x, dtype, part=None):
    """mpmath's value of op(x), rounded once to ``dtype`` (None where mpmath has none); ``part``:
    "real" or "imag" of a complex input's value."""
    mpmath.mp.prec = 160
    fn = {"abs": abs, "angle": mpmath.arg}.get(op) or _MP.get(op) or getattr(mpmath, op)
    arg = mpmath.mpc(complex(x)) if part else mpmath.mpf(float(x))
    try:
        v = fn(arg)
    except (ValueError, ZeroDivisionError):
        return None
    if part:
        v = mpmath.mpc(v)
        v = v.real if part == "real" else v.imag
    elif isinstance(v, mpmath.mpc):
        return None
    return np.array([float(v)], np.float64).astype(dtype)[0] if abs(v) < 1e308 else None


def _check(op, x, got, want, part=None):
    """Messages for the elements that disagree."""
    if got.dtype.kind == "c":
        return _check(op, x, got.real.copy(), want.real.copy(), "real") + \
            _check(op, x, got.imag.copy(), want.imag.copy(), "imag")
    if got.dtype.kind in "biu":
        return [f"{x[i]!r}: {got[i]!r} != {want[i]!r}" for i in np.flatnonzero(got != want)]
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    same = (np.isnan(g64) & np.isnan(w64)) | (_ordered(got) == _ordered(want))
    out = []
    # a real math function: within 1 ulp of the framework or correctly rounded; a part of a complex
    # one: within 4 ulps of the correctly rounded part (the library's complex functions are measured
    # within that, kernel/math/README.md)
    slack = 4 if x.dtype.kind == "c" else 0
    math_like = op in MATH or op == "sign" and x.dtype.kind == "c"
    for i in np.flatnonzero(~same):
        apart = abs(_ordered(got[i:i + 1]) - _ordered(want[i:i + 1]))[0]
        if math_like and np.isfinite(g64[i]) and np.isfinite(w64[i]) and apart <= 1:
            continue
        if math_like:
            exact = _correctly_rounded(op, x[i], got.dtype, part if x.dtype.kind == "c" else None)
            if exact is not None and abs(_ordered(np.array([exact], got.dtype))[0] - _ordered(got[i:i + 1])[0]) <= slack:
                continue   # the framework is not correctly rounded here; gpupromote is
        out.append(f"{x[i]!r}: {got[i]!r} != {want[i]!r}")
    return out


@pytest.mark.parametrize("policy, record", RECORDS, ids=[f"{p}-{r['case']}" for p, r in RECORDS])
def test_values_follow_the_framework(policy, record):
    if record["error"] is not None:   # a refusal: gpupromote refuses too
        with pytest.raises((TypeError, ValueError, OverflowError)):
            _call(policy, record)
        return
    deviation = _deviation(policy, record["op"], record["a"]["dtype"])
    if deviation is not None and deviation[0] is None:
        pytest.skip("a documented deviation (DEVIATIONS)")
    x, got = _call(policy, record)
    got = np.asarray(got)
    assert gp.dtype(got.dtype).name == record["result"]
    want = _array(record["values"], record["result"])
    if deviation is not None:
        keep = ~deviation[0](x)
        x, got, want = x[keep], got[keep], want[keep]
    bad = _check(record["op"], x, got, want)
    assert not bad, f"{len(bad)} value(s) differ from {record['fw']}'s:\n" + "\n".join(bad[:10])
