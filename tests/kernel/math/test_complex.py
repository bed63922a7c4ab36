"""Complex functions (complex128 and complex64), against NumPy:

* special values: on a grid of (0, -0, 1, -1, 0.5, 2, inf, -inf, nan, huge, tiny)^2 every part is
  what NumPy returns: NaN where NumPy has NaN, the same infinity or signed zero, finite parts within
  4 ulps (C99 Annex G; where Annex G leaves a sign open, NumPy's choice);
* random inputs over the whole range and near the unit circle: both parts within 8 ulps of NumPy's
  result, measured against the larger part (normwise);
* cpow: small integer exponents give NumPy's bits exactly (the same multiplications, in the same
  order, in the same precision); other exponents normwise within 32 ulps of NumPy;
* both engines give the same bits everywhere.
"""
import numpy as np
import pytest

from ._harness import host_call, numba_call
from ._inputs import SAMPLES

FUNCS = {"cexp": np.exp, "clog": np.log, "csqrt": np.sqrt, "csin": np.sin, "ccos": np.cos, "ctan": np.tan,
         "csinh": np.sinh, "ccosh": np.cosh, "ctanh": np.tanh, "casin": np.arcsin, "cacos": np.arccos,
         "catan": np.arctan, "casinh": np.arcsinh, "cacosh": np.arccosh, "catanh": np.arctanh}
TYPES = {"c128": (np.float64, np.complex128), "c64": (np.float32, np.complex64)}


def _complex(x, y, ct):
    z = np.empty(len(x), ct)
    z.real = x
    z.imag = y
    return z


def _grid(ft):
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30]
    X, Y = np.meshgrid(v, v)
    return X.ravel().astype(ft), Y.ravel().astype(ft)


def _random(ft, n):
    rng = np.random.default_rng(21)
    big = 700 if ft is np.float64 else 85
    k = n // 3
    a = np.exp(rng.uniform(-big, big, k)) * rng.choice([-1, 1], k)
    b = np.exp(rng.uniform(-big, big, k)) * rng.choice([-1, 1], k)
    c = rng.uniform(-3, 3, k)
    d = rng.uniform(-3, 3, k)
    t = rng.uniform(-np.pi, np.pi, k)
    r = 1 + rng.uniform(-1e-6, 1e-6, k)
    x = np.concatenate([a, c, r * np.cos(t)]).astype(ft)
    y = np.concatenate([b, d, r * np.sin(t)]).astype(ft)
    return x, y


def _parts_match(o, e, ft, tol):
    if np.isnan(e):
        return bool(np.isnan(o))
    if np.isinf(e) or e == 0:
        return bool(o == e and np.signbit(o) == np.signbit(e))
    return bool(abs(o - e) <= tol * np.finfo(ft).eps * abs(e))


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_special_values_as_numpy(name, kind):
    ft, ct = TYPES[kind]
    x, y = _grid(ft)
    r, i = numba_call(f"gpm_{name}_{kind}", x, y)
    with np.errstate(all="ignore"):
        ref = FUNCS[name](_complex(x, y, ct))
    bad = [(x[k], y[k], r[k], i[k], ref[k]) for k in range(len(x))
           if not (_parts_match(r[k], ref[k].real, ft, 4) and _parts_match(i[k], ref[k].imag, ft, 4))]
    assert not bad, bad[:8]


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_random_inputs_close_to_numpy_and_engines_agree(name, kind):
    ft, ct = TYPES[kind]
    x, y = _random(ft, SAMPLES // 4)
    r, i = numba_call(f"gpm_{name}_{kind}", x, y)
    hr, hi = host_call(f"gpm_{name}_{kind}", x, y)
    assert (r.view(np.uint8) == hr.view(np.uint8)).all() and (i.view(np.uint8) == hi.view(np.uint8)).all()
    with np.errstate(all="ignore"):
        ref = FUNCS[name](_complex(x, y, ct))
        mag = np.maximum(np.abs(ref.real), np.abs(ref.imag))
        ok = np.isfinite(mag) & (mag > np.finfo(ft).tiny * 2**30) & (mag < np.finfo(ft).max / 4)
        err = np.maximum(np.abs(r - ref.real), np.abs(i - ref.imag)) / (mag * np.finfo(ft).eps)
    worst = np.nanmax(np.where(ok, err, 0))
    assert worst <= 8, (worst, x[np.nanargmax(np.where(ok, err, 0))], y[np.nanargmax(np.where(ok, err, 0))])
    nan_mismatch = (np.isnan(r) != np.isnan(ref.real)) | (np.isnan(i) != np.isnan(ref.imag))
    assert not nan_mismatch.any()


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_cpow_small_integer_exponents_are_numpys_bits(kind):
    ft, ct = TYPES[kind]
    rng = np.random.default_rng(4)
    n = SAMPLES // 4
    ar, ai = rng.uniform(-3, 3, n).astype(ft), rng.uniform(-3, 3, n).astype(ft)
    br = np.round(rng.uniform(-99, 99, n)).astype(ft)
    bi = np.zeros(n, ft)
    r, i = numba_call(f"gpm_cpow_{kind}", ar, ai, br, bi)
    hr, hi = host_call(f"gpm_cpow_{kind}", ar, ai, br, bi)
    with np.errstate(all="ignore"):
        ref = np.power(_complex(ar, ai, ct), _complex(br, bi, ct))
    same = lambda a, b: (a == b) | (np.isnan(a) & np.isnan(b))   # noqa: E731
    assert same(r, ref.real).all() and same(i, ref.imag).all()
    assert (r.view(np.uint8) == hr.view(np.uint8)).all() and (i.view(np.uint8) == hi.view(np.uint8)).all()


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_cpow_general_and_special(kind):
    ft, ct = TYPES[kind]
    rng = np.random.default_rng(6)
    n = SAMPLES // 4
    ar, ai = rng.uniform(-3, 3, n).astype(ft), rng.uniform(-3, 3, n).astype(ft)
    br, bi = rng.uniform(-3, 3, n).astype(ft), rng.uniform(-3, 3, n).astype(ft)
    r, i = numba_call(f"gpm_cpow_{kind}", ar, ai, br, bi)
    hr, hi = host_call(f"gpm_cpow_{kind}", ar, ai, br, bi)
    assert (r.view(np.uint8) == hr.view(np.uint8)).all() and (i.view(np.uint8) == hi.view(np.uint8)).all()
    ref = np.power(_complex(ar, ai, ct), _complex(br, bi, ct))
    mag = np.maximum(np.abs(ref.real), np.abs(ref.imag))
    err = np.maximum(np.abs(r - ref.real), np.abs(i - ref.imag)) / (mag * np.finfo(ft).eps)
    assert np.nanmax(err) <= 32
    # a^0 = 1, 0^b: 0 for Re b > 0, NaN otherwise (NumPy's npy_cpow)
    one = numba_call(f"gpm_cpow_{kind}", np.array([np.nan, 0.0], ft), np.array([2.0, 0.0], ft),
                     np.array([0.0, 0.0], ft), np.array([0.0, 0.0], ft))
    assert list(one[0]) == [1.0, 1.0] and list(one[1]) == [0.0, 0.0]
    zero = numba_call(f"gpm_cpow_{kind}", np.zeros(3, ft), np.zeros(3, ft), np.array([2.5, -1.0, 0.0], ft),
                      np.array([1.0, 0.0, 1.0], ft))
    assert zero[0][0] == 0.0 and np.isnan(zero[0][1]) and np.isnan(zero[0][2])
