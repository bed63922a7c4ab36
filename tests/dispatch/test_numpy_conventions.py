"""NumPy's ufunc conventions on gp's op functions and gp.Array: the dtype=, casting= and where=
keywords and out= as a 1-tuple (dispatch/conventions.py), against NumPy's own results and
refusals under policy numpy; __array_ufunc__ / __array_function__ (dispatch/operators.py); and
that plain calls still never leave the compiled dispatcher."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import gpupromote as gp
from tests.support.compiled import assert_all_served
from gpupromote.dispatch import opfunctions

BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "power", "maximum", "minimum", "less",
          "equal", "logical_and", "bitwise_and", "left_shift", "arctan2", "copysign"]
UNARY = ["negative", "absolute", "sqrt", "exp", "floor", "sign", "isnan", "logical_not", "invert", "square"]
NUMPY_NAMES = {"true_divide": "divide"}
PAIRS = [("int8", "int8"), ("int32", "float64"), ("uint8", "int8"), ("float16", "float32"), ("bool", "int8"),
         ("float32", "complex64"), ("int64", "int64")]
UNARY_DTYPES = ["bool", "int16", "uint8", "float16", "float64", "complex64"]
DTYPES = [None, bool, "int32", "float32", "float64", "complex128"]
CASTINGS = [None, "no", "safe", "same_kind", "unsafe"]


def _data(dt, step=1):
    return np.array([1, 2, 3, 5][::step], dtype=float).astype(dt)


def _outcome(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 - the outcome compared is the exception
            return None, e


def _numpy_words(e: Exception) -> str:
    """NumPy's message as gp words it: dtype('int8') is int8, and gp's op names (divide is
    true_divide)."""
    m = re.sub(r"dtype\('(\w+)'\)", r"\1", str(e))
    return m.replace("ufunc 'divide'", "ufunc 'true_divide'").replace("ufunc divide", "ufunc true_divide")


def _same_outcome(case, expected, got):
    (r1, e1), (r2, e2) = expected, got
    if e1 is not None or e2 is not None:
        assert e1 is not None and e2 is not None, f"{case}: numpy {e1!r}, gp {e2!r}"
        base = next(k for k in (OverflowError, ValueError, TypeError) if isinstance(e1, k))
        assert isinstance(e2, base), f"{case}: numpy raises {type(e1).__name__}, gp {type(e2).__name__}: {e2}"
        words = _numpy_words(e1)
        if words.startswith("Cannot cast ufunc") and " output " in words and "casting" not in case[1:][-1]:
            # out= without casting=: the policy's own out= rule (promotion/store.py), in gp's words
            assert all(w in str(e2) for w in re.findall(r"from (\w+) to (\w+)", words)[0]), f"{case}: {e2}"
        elif words.startswith(("Cannot cast ufunc", "No loop matching", "Python integer")):
            # NumPy's sentence, within gp's (policy, op and fix); gp's own range check says "is out of bounds"
            assert words in str(e2).replace(" is out of bounds", " out of bounds"), f"{case}: {e2}"
        return
    r1, r2 = np.asarray(r1), np.asarray(r2)
    assert r2.dtype == r1.dtype, f"{case}: numpy {r1.dtype}, gp {r2.dtype}"
    np.testing.assert_allclose(r2.astype(complex), r1.astype(complex), rtol=2e-3, equal_nan=True, err_msg=str(case))


def _cases():
    for op in BINARY:
        for a, b in PAIRS:
            yield op, (_data(a), _data(b, -1))
    for op in UNARY:
        for a in UNARY_DTYPES:
            yield op, (_data(a),)
    for op in ("add", "multiply", "less"):
        yield op, (_data("int8"), 3)
    yield "add", (_data("int8"), 300)
    yield "add", (_data("int8"), 1.5)
    yield "maximum", (_data("float32"), 2.5)


@pytest.mark.parametrize("op, args", list(_cases()),
                         ids=lambda v: v if isinstance(v, str) else "-".join(str(getattr(x, "dtype", x)) for x in v))
def test_dtype_and_casting_give_numpys_results_and_refusals(op, args):
    for dt in DTYPES:
        for casting in CASTINGS:
            kw = {} if dt is None else {"dtype": dt}
            if casting:
                kw["casting"] = casting
            expected = _outcome(lambda: getattr(np, NUMPY_NAMES.get(op, op))(*args, **kw))
            got = _outcome(lambda: getattr(gp, op)(*args, policy="numpy", **kw))
            _same_outcome((op, kw), expected, got)


def test_a_refusal_names_the_ufunc_the_dtypes_and_the_fix():
    a = np.arange(4.0)
    with pytest.raises(TypeError) as e:
        gp.add(a, a, dtype="int32")
    assert "Cannot cast ufunc 'add' input 0 from float64 to int32 with casting rule 'same_kind'" in str(e.value)
    assert "casting='unsafe'" in str(e.value) and "policy 'numpy'" in str(e.value)
    with pytest.raises(TypeError, match=r"output from float64 to float32 with casting rule 'safe'.*out= of dtype "
                                        r"float64"):
        gp.add(a, a, out=np.empty(4, np.float32), casting="safe")
    with pytest.raises(TypeError, match=r"No loop matching .* for ufunc true_divide .*gp.astype"):
        gp.true_divide(np.arange(4), np.arange(1, 5), dtype="int64")
    with pytest.raises(ValueError, match="casting must be one of"):
        gp.add(a, a, casting="bogus")
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        gp.add(np.arange(4, dtype=np.int8), 300, dtype="int8")


@pytest.mark.parametrize("out_dtype, casting", [("float64", None), ("float32", None), ("int32", "unsafe"),
                                                ("float32", "same_kind"), ("int32", None), ("float32", "safe")])
def test_out_under_casting_as_numpy(out_dtype, casting):
    a, b = np.linspace(-2, 3, 6), np.arange(6, dtype=np.int32)
    kw = {} if casting is None else {"casting": casting}
    o1, o2 = np.full(6, 7, out_dtype), np.full(6, 7, out_dtype)
    expected = _outcome(lambda: np.multiply(a, b, out=o1, **kw))
    got = _outcome(lambda: gp.multiply(a, b, out=o2, **kw))
    _same_outcome(("multiply", kw), expected, got)
    if got[1] is None:
        assert got[0] is o2
        np.testing.assert_array_equal(o2, o1)


def test_out_as_a_one_tuple():
    a = np.arange(4, dtype=np.int32)
    o = np.empty(4, np.int64)
    assert gp.add(a, a, out=(o,)) is o and o.tolist() == [0, 2, 4, 6]
    with pytest.raises(ValueError, match="exactly one"):
        gp.add(a, a, out=(o, o))


@pytest.mark.parametrize("op, args", [("add", (np.linspace(0, 1, 6), np.arange(6, dtype=np.int32))),
                                      ("exp", (np.linspace(0, 1, 6, dtype=np.float32),)),
                                      ("less", (np.arange(6), 3)),
                                      ("clip", (np.arange(6), 1, 4))])
def test_where_with_out_keeps_outs_other_elements(op, args):
    mask = np.array([True, False, True, True, False, False])
    expected_dtype = np.asarray(getattr(gp, op)(*args)).dtype
    o1, o2 = np.full(6, 9, expected_dtype), np.full(6, 9, expected_dtype)
    getattr(np, op)(*args, where=mask, out=o1)
    assert getattr(gp, op)(*args, where=mask, out=o2) is o2
    np.testing.assert_allclose(o2, o1, rtol=1e-6)


SWEEP_DTYPES = ["bool", "int8", "uint8", "int32", "float16", "float32", "float64", "complex64"]


@pytest.mark.parametrize("op", ["add", "maximum", "less", "true_divide", "negative"])
def test_where_and_out_of_every_dtype_as_numpy(op):
    rng = np.random.default_rng(0)
    unary = op == "negative"
    for a, b, o in [(a, b, o) for a in SWEEP_DTYPES for b in (["bool"] if unary else SWEEP_DTYPES)
                    for o in SWEEP_DTYPES]:
        for casting in (None, "unsafe", "same_kind"):
            x, y = rng.integers(0, 5, 6).astype(a), rng.integers(1, 5, 6).astype(b)
            mask = rng.integers(0, 2, 6).astype(bool)
            args = (x,) if unary else (x, y)
            kw = {} if casting is None else {"casting": casting}
            o1, o2 = np.ones(6, o), np.ones(6, o)
            expected = _outcome(lambda: getattr(np, NUMPY_NAMES.get(op, op))(*args, where=mask, out=o1, **kw))
            got = _outcome(lambda: getattr(gp, op)(*args, where=mask, out=o2, **kw))
            _same_outcome((op, kw), expected, got)
            if got[1] is None:
                np.testing.assert_allclose(o2.astype(complex), o1.astype(complex), rtol=1e-3, equal_nan=True)


def test_where_without_out_is_zero_where_false_and_broadcasts_as_numpy():
    a = np.arange(1, 4, dtype=np.float32)
    mask = np.array([[True, False, True], [False, True, True]])
    r = gp.add(a, 1, where=mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # NumPy: 'where' used without 'out', expect uninitialized memory
        expected = np.add(a, 1, where=mask)
    assert r.shape == expected.shape == (2, 3) and r.dtype == expected.dtype
    np.testing.assert_array_equal(r[mask], expected[mask])
    assert (r[~mask] == 0).all()
    assert gp.add(a, 1, where=[True, False, True]).tolist() == [2, 0, 4]
    assert gp.add(a, 1, where=False).tolist() == [0, 0, 0]
    o = np.full(3, 5, np.float32)
    assert gp.add(a, 1, where=False, out=o).tolist() == [5, 5, 5]
    assert gp.add(a, 1, where=True).tolist() == [2, 3, 4]


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
def test_masked_out_elements_are_not_checked(policy):
    x = np.arange(6, dtype=np.int32)
    y = np.array([0, 1, 2, 0, 3, 0], dtype=np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # numpy would warn "divide by zero", torch raise, for a masked-out 0
        r = gp.floor_divide(x, y, where=y != 0, policy=policy)
        o = np.full(6, -1, np.int32)
        gp.remainder(x, y, where=y != 0, out=o, policy=policy)
    assert r.tolist() == [0, 1, 1, 0, 1, 0] and o.tolist() == [-1, 0, 0, -1, 1, -1]
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.floor_divide(x, y, where=y != 0, out=np.zeros(6, np.int32))
    np.testing.assert_array_equal(r, expected)
    if policy == "numpy":
        with pytest.raises(ValueError, match="negative integer powers"):
            gp.power(x, y - 1, where=y >= 0)
        assert gp.power(x, y - 1, where=y > 0).tolist() == [0, 1, 2, 0, 16, 0]
    if policy == "torch":
        with pytest.raises(ZeroDivisionError):
            gp.floor_divide(x, y, where=y != 1, policy=policy)   # a selected 0 still raises


def test_where_must_be_boolean_and_broadcast():
    a = np.arange(4.0)
    with pytest.raises(TypeError, match="boolean mask, got int64.*astype\\(bool\\)"):
        gp.add(a, 1, where=np.array([1, 0, 1, 0]))
    with pytest.raises(ValueError):
        gp.add(a, 1, where=np.array([True, False]))


def test_where_with_dtype_and_out_of_another_dtype():
    a, b = np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int32)[::-1]
    mask = a % 2 == 0
    o1, o2 = np.full(5, -1.0, np.float32), np.full(5, -1.0, np.float32)
    np.subtract(a, b, dtype="float64", where=mask, out=o1)
    gp.subtract(a, b, dtype="float64", where=mask, out=o2)
    np.testing.assert_array_equal(o2, o1)


def test_where_on_a_gp_array():
    x = gp.asarray(np.arange(4, dtype=np.float32))
    r = gp.multiply(x, 2, where=np.array([True, False, True, False]))
    assert isinstance(r, gp.Array) and r.dtype == gp.float32 and r.numpy().tolist() == [0, 0, 4, 0]


def test_keywords_apply_under_every_policy():
    a, b = np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32)
    mask = np.array([True, False, True, True])
    for policy in gp.policies():
        if policy in ("jax", "jax-strict"):   # no float64 with x64 off
            with pytest.raises(TypeError, match="No loop .* on float64 operands it gives float32"):
                gp.add(a, b, dtype="float64", policy=policy)
        else:
            r = gp.add(a, b, dtype="float64", policy=policy)
            assert r.dtype == np.float64 and r.tolist() == [0, 2, 4, 6], policy
        o = np.full(4, 9, np.int32)
        gp.add(a, b, where=mask, out=o, policy=policy)
        assert o.tolist() == [0, 9, 4, 6], policy
        o = np.zeros(4, np.int16)
        gp.add(a, b, out=o, casting="unsafe", policy=policy)   # refused by every policy's own out= rule but numpy's
        assert o.tolist() == [0, 2, 4, 6], policy
        with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from int32 to int16"):
            gp.add(a, b, out=np.zeros(4, np.int16), casting="safe", policy=policy)


def test_astype_casting():
    a = np.ones(2)
    with pytest.raises(TypeError, match="Cannot cast array data from float64 to int32 according to the rule 'safe'"):
        gp.astype(a, "int32", casting="safe")
    with pytest.raises(TypeError):
        a.astype("int32", casting="safe")
    assert gp.astype(a, "int32").dtype == np.int32
    assert gp.astype(a, "float32", casting="same_kind").dtype == np.float32
    assert gp.astype(a, bool).dtype == np.bool_ and gp.astype(a, float).dtype == np.float64


# --- NumPy's protocols ------------------------------------------------------------------------

def test_numpy_ufuncs_on_a_gp_array_run_the_gp_op():
    x = gp.asarray(np.arange(4, dtype=np.float32))
    n = np.arange(4, dtype=np.int8)
    for got, want in [(np.exp(x), gp.exp(x)), (np.add(x, 1), gp.add(x, 1)), (np.add(n, x), gp.add(n, x)),
                      (np.divide(n, x), gp.true_divide(n, x)), (np.conjugate(x), gp.conj(x)),
                      (np.absolute(x), gp.absolute(x)), (np.less(n, x), gp.less(n, x))]:
        assert isinstance(got, gp.Array) and got.dtype is want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with gp.use_policy("torch"):   # the current policy: torch keeps float32 for int8 / float32 and exp(int16)
        assert np.exp(gp.asarray(np.arange(3, dtype=np.int16))).dtype == gp.float32
    assert np.exp(gp.asarray(np.arange(3, dtype=np.int16))).dtype == gp.float32   # numpy: int16 -> float32 too
    assert np.add(gp.asarray(np.arange(3, dtype=np.int64)), 1.5).dtype == gp.float64


def test_numpy_ufunc_keywords_pass_through():
    x = gp.asarray(np.arange(4, dtype=np.int32))
    assert np.add(x, 1, dtype="float64").dtype == gp.float64
    o = np.full(4, -1, np.int32)
    assert np.add(x, 1, where=np.array([True, False, True, False]), out=o) is o
    assert o.tolist() == [1, -1, 3, -1]
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' input 0 from int32 to int8"):
        np.add(x, 1, dtype="int8", casting="safe")


def test_unknown_ufuncs_and_methods_are_numpys_type_error():
    x = gp.asarray(np.arange(4.0))
    for call in (lambda: np.ldexp(x, 2), lambda: np.add.reduce(x), lambda: np.add.accumulate(x),
                 lambda: np.add.outer(x, x), lambda: np.divmod(x, 2), lambda: np.add(x, 1, order="F")):
        with pytest.raises(TypeError, match="NotImplemented from __array_ufunc__"):
            call()


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
def test_numpys_operators_give_the_reflected_operators_results(policy):
    x = gp.asarray(np.array([1, 2, 3], dtype=np.float32))
    k = gp.asarray(np.array([1, 2, 3], dtype=np.int8))
    n, i = np.array([4, 5, 6], dtype=np.int16), np.array([1, 2, 1], dtype=np.int16)
    ops = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"]
    with gp.use_policy(policy):
        for dunder in ops:
            got = getattr(n, f"__{dunder}__")(x)
            want = getattr(x, f"__r{dunder}__")(n)
            assert isinstance(got, gp.Array) and got.dtype is want.dtype, dunder
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        for dunder in ["and", "or", "xor", "lshift", "rshift"]:
            got, want = getattr(i, f"__{dunder}__")(k), getattr(k, f"__r{dunder}__")(i)
            assert got.dtype is want.dtype, dunder
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        for dunder, mirror in [("lt", "gt"), ("le", "ge"), ("eq", "eq"), ("ne", "ne"), ("gt", "lt"), ("ge", "le")]:
            got, want = getattr(n, f"__{dunder}__")(x), getattr(x, f"__{mirror}__")(n)
            assert got.dtype is want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert (np.float32(2) + x).numpy().tolist() == (x + np.float32(2)).numpy().tolist()


def test_numpys_inplace_operator_writes_into_the_ndarray():
    n = np.zeros(3, np.float64)
    x = gp.asarray(np.array([1, 2, 3], dtype=np.float32))
    before = n
    n += x
    assert n is before and n.tolist() == [1, 2, 3]
    i = np.zeros(3, np.int8)
    with pytest.raises(TypeError, match="same_kind"):
        i += x   # float32 into int8: refused as NumPy refuses it


def test_array_function_clip_and_where_and_numpys_own_for_the_rest():
    x = gp.asarray(np.arange(6, dtype=np.int8))
    r = np.clip(x, 1, 4)
    assert isinstance(r, gp.Array) and r.numpy().tolist() == [1, 1, 2, 3, 4, 4]
    assert np.clip(x, a_min=2, a_max=None).numpy().tolist() == [2, 2, 2, 3, 4, 5]
    assert np.clip(x, None, 3).numpy().tolist() == [0, 1, 2, 3, 3, 3]
    w = np.where(np.arange(6) > 2, x, 1.5)
    assert isinstance(w, gp.Array) and w.dtype == gp.float64
    with gp.use_policy("torch"):
        assert np.where(np.arange(6) > 2, x, 1.5).dtype == gp.float32   # torch: int8 with a Python float
    assert np.concatenate([x, x]).tolist() == [0, 1, 2, 3, 4, 5] * 2   # NumPy's own, through __array__
    assert np.nonzero(x)[0].tolist() == [1, 2, 3, 4, 5]
    assert np.where(x > 2)[0].tolist() == [3, 4, 5]   # one argument: NumPy's nonzero
    np.testing.assert_array_equal(x, np.arange(6))


def test_numpy_ufuncs_inside_gp_fuse():
    a = np.arange(5, dtype=np.float32)
    f = gp.fuse(lambda x: np.exp(x) + np.add(x, 1, dtype="float64"))
    np.testing.assert_allclose(f(a), gp.exp(a) + gp.add(a, 1, dtype="float64"), rtol=1e-6)
    g = gp.fuse(lambda x: np.multiply(x, 2, where=x > 2))
    assert g(a).tolist() == [0, 0, 0, 6, 8]
    h = gp.fuse(lambda x: np.where(x > 2, x, 0) + np.clip(x, 1, 3))
    assert h(a).tolist() == [1, 1, 2, 6, 7]


def test_array_astype_takes_casting():
    x = gp.asarray(np.arange(3, dtype=np.float32))
    assert x.astype("int32").dtype == gp.int32
    with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
        x.astype("int32", casting="same_kind")


def test_keywords_on_dask_and_torch_operands():
    da = pytest.importorskip("dask.array")
    d = da.from_array(np.arange(6, dtype=np.int32), chunks=3)
    assert gp.add(d, d, dtype="float64").compute().tolist() == [0, 2, 4, 6, 8, 10]
    assert gp.add(d, 1, where=d > 2).compute().tolist() == [0, 0, 0, 4, 5, 6]
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.int32)
    assert gp.add(t, t, dtype="float64").dtype == torch.float64
    o = torch.full((4,), -1, dtype=torch.int32)
    assert gp.add(t, t, where=t > 1, out=o) is o and o.tolist() == [-1, -1, 4, 6]


# --- the compiled dispatcher still serves plain calls ------------------------------------------

@pytest.mark.skipif(opfunctions._fastpath is None, reason="the compiled dispatcher was not built")
def test_plain_calls_never_leave_the_compiled_path():
    from gpupromote.core import caches
    caches.clear_all()
    f4, i1 = np.ones(10, np.float32), np.ones(10, np.int8)
    o = np.empty(10, np.float32)
    calls = [lambda: gp.add(f4, f4), lambda: gp.add(i1, 3), lambda: gp.multiply(f4, 2.5, policy="torch"),
             lambda: gp.add(f4, f4, out=o), lambda: gp.where(i1 > 0, i1, 1.5), lambda: gp.negative(f4)]
    assert_all_served(calls)
    # a keyword the compiled side does not read goes to the Python function, which takes it
    assert gp.add(f4, f4, dtype="float64").dtype == np.float64
    assert gp.add(f4, f4, where=np.zeros(10, bool)).tolist() == [0.0] * 10
