"""gp.round(x, decimals) is np.round(x, decimals) bit for bit under the numpy policy (NumPy's own
composition: multiply by 10**d, rint, divide; each step stored in x's dtype or out's), on every real
dtype and decimals from -6 to 8, into out= too and inside gp.fuse; the torch policy's (torch.round's
composition, against torch itself in tests/oracle/test_round_torch.py) refuses what torch refuses; the
other policies and complex input refuse it with the explicit form to write instead. NumPy's methods of these functions (x.round(),
x.clip(), x.conj(), x.real, x.imag) on gp.Array and inside gp.fuse."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.rounding import _power_of_ten

DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.uint8, np.int16, np.uint16, np.int32,
          np.int64, np.uint64]


def _values(dt, n=4000, seed=7):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)
    # halves at every scale (the ties rint breaks to even) and the specials
    ties = (rng.integers(-2000, 2000, 200) + 0.5) / 10.0 ** rng.integers(0, 4, 200)
    with np.errstate(over="ignore"):
        return np.concatenate([x, ties, [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, 1.5, 2.5, -2.5]]).astype(dt)


def _same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    bad = np.nonzero((got.view(np.uint8).reshape(got.size, -1) != want.view(np.uint8).reshape(want.size, -1)).any(1))[0]
    assert bad.size == 0, f"{bad.size} differ, e.g. at {bad[:4].tolist()}: {got[bad[:4]]} against NumPy's {want[bad[:4]]}"


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_to_decimals_is_numpys(dt):
    x = _values(dt)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for d in range(-6, 9):
            _same(gp.round(x, d, policy="numpy"), np.round(x, d))
            if np.dtype(dt).kind == "f":
                for odt in (np.float32, np.float64):
                    got, want = np.empty(x.size, odt), np.empty(x.size, odt)
                    assert gp.round(x, decimals=d, out=got, policy="numpy") is got
                    _same(got, np.round(x, d, out=want))


def test_power_of_ten_is_numpys_table_then_products():
    assert [_power_of_ten(n) for n in range(9)] == [10.0 ** n for n in range(9)]
    p = 1e9
    for n in range(10, 40):
        p *= 10.0
        assert _power_of_ten(n) == p


def test_round_to_decimals_inside_fuse_is_the_eager_call():
    x = _values(np.float32)
    f = gp.fuse(lambda v: gp.round(v * 3.0, 2) - v)
    with np.errstate(all="ignore"):
        _same(f(x), gp.subtract(gp.round(gp.multiply(x, 3.0), 2), x))


@pytest.mark.parametrize("policy", ["jax", "paddle", "tf-all", "array-api"])
def test_other_policies_refuse_decimals_with_the_explicit_form(policy):
    with pytest.raises(gp.PromotionError, match=r"decimals=2.*gp\.rint\(x \* 100\.0\) / 100\.0"):
        gp.round(np.float32([1.25]), 2, policy=policy)
    assert gp.round(np.float32([2.5]), 0, policy=policy)[0] == 2.0    # decimals=0 is the op itself


def test_torch_refuses_what_torch_round_refuses():
    """torch.round(t, decimals=d) raises for integer and bool tensors and for an out= of another dtype."""
    with pytest.raises(gp.PromotionError, match=r"torch.*decimals=2.*gp\.astype\(x, 'float32'\)"):
        gp.round(np.int32([123]), 2, policy="torch")
    with pytest.raises(gp.PromotionError, match=r"torch.*round.*bool"):   # (as torch.round of bool, any decimals)
        gp.round(np.bool_([True]), 2, policy="torch")
    with pytest.raises(TypeError, match="out= of float64.*gp.astype"):
        gp.round(np.float32([1.25]), 1, out=np.empty(1, np.float64), policy="torch")
    assert gp.round(np.int32([123]), 0, policy="torch")[0] == 123    # decimals=0 is the op itself


def test_refusals_say_what_to_do():
    with pytest.raises(gp.PromotionError, match="complex.*gp.real"):
        gp.round(np.complex64([1.25 + 2.35j]), 1, policy="numpy")
    with pytest.raises(TypeError, match="out="):
        gp.round(np.int32([123]), -1, out=np.empty(1, np.int32), policy="numpy")
    with pytest.raises(TypeError):
        gp.round(np.float32([1.25]), 1.5, policy="numpy")     # decimals is an integer, as in NumPy


# --- NumPy's ndarray methods of the functions, on gp.Array and inside gp.fuse ---------------------

METHODS = [("x.round(1)", lambda a: a.round(1)), ("x.round()", lambda a: a.round()), ("x.clip(0, 2)", lambda a: a.clip(0, 2)),
           ("x.clip(max=1)", lambda a: a.clip(max=1)), ("x.conj()", lambda a: a.conj()),
           ("x.conjugate()", lambda a: a.conjugate()), ("x.real", lambda a: a.real), ("x.imag", lambda a: a.imag)]


@pytest.mark.parametrize("text, method", METHODS, ids=[t for t, _ in METHODS])
@pytest.mark.parametrize("dt", [np.float32, np.complex64, np.int16], ids=lambda d: np.dtype(d).name)
def test_array_methods_are_numpys(text, method, dt):
    x = (np.array([1.25, -2.5, 3.75, 0.5, 2.5]) * (1 + 1j if np.dtype(dt).kind == "c" else 1)).astype(dt)
    if np.dtype(dt).kind == "c" and ("round(1)" in text or "clip" in text):
        return   # (gp.round(x, 1) of complex refuses, test_refusals_say_what_to_do; NumPy's clip of complex is deprecated)
    with gp.use_policy("numpy"):
        got = method(gp.asarray(x))
        assert isinstance(got, gp.Array), text
        _same(got.numpy(), np.ascontiguousarray(method(x)))


def test_methods_inside_fuse_are_the_eager_calls():
    x = _values(np.float32)[:4000]
    chain = gp.fuse(lambda v: (v * 2).clip(0, 6).round(1) + v.real)
    staged = gp.fuse(lambda v: (v - gp.max(v)).clip(-1, 0).round(2))
    with np.errstate(all="ignore"):
        _same(chain(x), gp.add(gp.round(gp.clip(gp.multiply(x, 2), 0, 6), 1), x))
        _same(staged(x), gp.round(gp.clip(gp.subtract(x, gp.max(x)), -1, 0), 2))
