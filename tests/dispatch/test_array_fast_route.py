"""A host gp.Array's calls take its storage's fast path (dispatch/host_arrays.host_storages), and
two NumPy arrays of different shapes take the fast runner's broadcast (engines/cpu/engine._nd_call):
the same values, dtypes, result types and errors as the general path, which each case below runs
too (by a call the fast routes decline: an out= array)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import caches
from gpupromote.dispatch import eager, host_arrays, opfunctions
from gpupromote.dispatch.array import Array

_RNG = np.random.default_rng(7)


def _data(dtype, shape):
    if np.dtype(dtype).kind == "b":
        return _RNG.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return _RNG.integers(1, 50, shape).astype(dtype)
    return (_RNG.standard_normal(shape) * 3).astype(dtype)


def _general(op, args, policy):
    """The general path's answer: the call with out= of the result's dtype and shape."""
    want_dtype = gp.result_type(*args, op=op, policy=policy)
    shape = np.broadcast_shapes(*(np.shape(a.storage if isinstance(a, Array) else a) for a in args))
    out = np.empty(shape, want_dtype.numpy)
    getattr(gp, op)(*args, out=out, policy=policy)
    return out


def _same(got, want):
    got = got.storage if isinstance(got, Array) else got
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.fixture
def no_general_path(monkeypatch):
    """Fails a call that reaches the general (eager) path."""
    def refuse(*args, **kwargs):
        raise AssertionError("the call took the general path")
    monkeypatch.setattr(opfunctions, "_eager_call", refuse)


CASES = [  # (op, dtypes): binary ops on two host Arrays, or an Array and a NumPy array
    ("add", ("float32", "float32")), ("multiply", ("int8", "float32")), ("true_divide", ("int32", "int32")),
    ("subtract", ("float16", "float64")), ("maximum", ("uint8", "int8")), ("less", ("int64", "float32")),
]


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax", "paddle"])
@pytest.mark.parametrize("op, dtypes", CASES, ids=[f"{op}-{'-'.join(d)}" for op, d in CASES])
def test_binary_calls_on_host_arrays_equal_the_general_path(policy, op, dtypes):
    a, b = (_data(d, (3, 5)) for d in dtypes)
    try:
        want = _general(op, [gp.asarray(a), gp.asarray(b)], policy)
    except (gp.PromotionError, TypeError) as exc:
        with pytest.raises(type(exc)):
            getattr(gp, op)(gp.asarray(a), gp.asarray(b), policy=policy)
        return
    for x, y in ((gp.asarray(a), gp.asarray(b)), (gp.asarray(a), b), (a, gp.asarray(b))):
        got = getattr(gp, op)(x, y, policy=policy)
        assert type(got) is Array
        _same(got, want)


def test_host_arrays_take_the_compiled_path(no_general_path):
    a, b = gp.asarray(_data("float32", 64)), gp.asarray(_data("float32", 64))
    for _ in range(2):   # (the first call builds the entry; both must stay off the general path)
        _same(gp.add(a, b), np.add(a.storage, b.storage))
        _same(a * b, np.multiply(a.storage, b.storage))
        _same(gp.exp(a), np.asarray(gp.exp(a.storage)))
        _same(gp.sum(a), np.asarray(gp.sum(a.storage)))
        _same(gp.max(gp.asarray(a.storage.reshape(8, 8)), axis=-1), np.max(a.storage.reshape(8, 8), axis=-1))


_OPERATORS = {"add": lambda x, y: x + y, "multiply": lambda x, y: x * y, "true_divide": lambda x, y: x / y,
              "subtract": lambda x, y: x - y, "maximum": None, "less": lambda x, y: x < y}


@pytest.mark.parametrize("policy", gp.policies())
@pytest.mark.parametrize("op, dtypes", CASES + [("add", ("bfloat16", "float16")), ("less", ("float8_e4m3fn", "int8"))],
                         ids=[f"{op}-{'-'.join(d)}" for op, d in CASES] + ["add-bfloat16-float16", "less-float8-int8"])
def test_operators_on_host_arrays_are_compiled_calls_with_the_general_paths_answer(policy, op, dtypes):
    """x + y on Arrays (and on an Array and a NumPy array, either side) is the compiled op on their
    storages (fastpath/host_array.c), an Array of the general path's bits; or its error."""
    from gpupromote.dispatch import _fastpath
    a, b = (np.asarray(_data("float32", (3, 5))).astype(gp.dtype(d).numpy) for d in dtypes)
    operator = _OPERATORS[op]
    try:
        want = _general(op, [gp.asarray(a), gp.asarray(b)], policy)
    except (gp.PromotionError, TypeError) as exc:
        with gp.use_policy(policy), pytest.raises(type(exc)) as got:
            operator(gp.asarray(a), gp.asarray(b)) if operator else getattr(gp, op)(gp.asarray(a), gp.asarray(b))
        assert str(got.value) == str(exc)
        return
    from gpupromote.promotion.policies import get_policy
    compiled = not set(dtypes) & set(get_policy(policy).rules.canonical)   # JAX x32 casts 64-bit arrays first: Python
    with gp.use_policy(policy):
        for x, y in ((gp.asarray(a), gp.asarray(b)), (gp.asarray(a), b), (a, gp.asarray(b))):
            for _ in range(2):   # the entry's miss, then its hit
                before = _fastpath.op_stats()["served"]
                got = operator(x, y) if operator and type(x) is Array else getattr(gp, op)(x, y)
                assert _fastpath.op_stats()["served"] == before + compiled
                assert type(got) is Array and got.device == "cpu"
                _same(got, want)


def test_the_operator_form_with_a_python_scalar_keeps_its_own_rules():
    """paddle.add(x, 1) raises and x + 1 runs: the route passes the function form only."""
    a = gp.asarray(np.arange(3, dtype=np.int32))
    with gp.use_policy("paddle"):
        with pytest.raises(gp.PromotionError):
            gp.add(a, 1)
        got = a + 1
        assert type(got) is Array and got.dtype == gp.dtype("int32")
        np.testing.assert_array_equal(got.storage, np.arange(1, 4))


def test_bit_pattern_storage_is_not_routed():
    """An Array whose storage is not of its dtype (bfloat16 held as uint16 bits) keeps the general path."""
    bits = np.array([0x3F80, 0x4000], dtype=np.uint16)   # bfloat16 1.0, 2.0
    a = Array(bits, "bfloat16")
    assert host_arrays.host_storages([a]) is None
    got = gp.add(a, a)
    assert got.dtype == gp.dtype("bfloat16")
    np.testing.assert_array_equal(np.asarray(got.numpy(), np.float32), [2.0, 4.0])


SHAPES = [((4, 6), (4, 1)), ((4, 6), (1, 6)), ((4, 6), (6,)), ((2, 3, 4), (3, 1)), ((1, 5), (3, 1)),
          ((0, 6), (1, 6)), ((5,), (1,)), ((2, 1, 4), (1, 3, 1))]


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float16", "float16"), ("int8", "float32")],
                         ids=["f4-f4", "f2-f2", "i1-f4"])
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
def test_broadcasting_numpy_arrays_take_the_fast_runner(monkeypatch, dtypes, shapes):
    caches.clear_all()
    a, b = _data(dtypes[0], shapes[0]), _data(dtypes[1], shapes[1])
    want = _general("subtract", [a, b], "numpy")
    calls = []
    original = eager.call
    monkeypatch.setattr(opfunctions, "_eager_call", lambda *x, **k: (calls.append(1), original(*x, **k))[1])
    for _ in range(2):
        _same(gp.subtract(a, b), want)
        _same(gp.subtract(b, a), _general("subtract", [b, a], "numpy"))
    assert len(calls) <= 2   # the first call of each order may build the runner through the general path


def test_non_contiguous_operands_of_one_shape():
    a = _data("float32", (6, 8))[:, ::2]    # a strided view
    b = _data("float32", (4, 6)).T          # Fortran order
    assert a.shape == b.shape == (6, 4) and not (a.flags.c_contiguous or b.flags.c_contiguous)
    _same(gp.multiply(a, b), _general("multiply", [a, b], "numpy"))


def test_shapes_that_do_not_broadcast_raise_the_general_paths_error():
    a, b = _data("float32", (4, 6)), _data("float32", (5, 6))
    with pytest.raises(ValueError) as fast:
        gp.add(a, b)
    with pytest.raises(ValueError) as general:
        gp.add(a, b, out=np.empty((4, 6), np.float32))
    assert str(fast.value) == str(general.value)


def test_zero_dim_operands_fold_as_before():
    a = _data("int8", (3,))
    got = gp.add(a, np.array(2, dtype=np.int64))
    _same(got, _general("add", [a, np.array(2, dtype=np.int64)], "numpy"))


_SCALAR_OPERATORS = {"add": lambda x, y: x + y, "multiply": lambda x, y: x * y, "bitwise_and": lambda x, y: x & y,
                     "less": lambda x, y: x < y, "power": lambda x, y: x ** y}


@pytest.mark.parametrize("policy", gp.policies())
@pytest.mark.parametrize("op, scalar", [("add", 1), ("multiply", 2.5), ("bitwise_and", 1), ("maximum", 2.0),
                                        ("less", 0.5), ("power", 2), ("add", 300), ("add", 2**70), ("less", 2**64)])
def test_operators_with_a_python_scalar_answer_as_the_general_path(policy, op, scalar):
    """An operator with a Python scalar takes the function's fast path only where the policy's
    refusals are the same in both forms; either way the answer (or the error) is the general path's."""
    from gpupromote.core.kinds import Form
    x = np.arange(1, 5, dtype=np.int32 if op == "bitwise_and" else np.float32)
    a = gp.asarray(x)

    def general():
        return eager.call(op, (a, scalar), policy, form=Form.OPERATOR)

    def routed():
        return opfunctions.call(op, (a, scalar), policy, form=Form.OPERATOR)

    def operator(x, y):   # the operator itself (Array.__add__, or __radd__ with the scalar first)
        with gp.use_policy(policy):
            return _SCALAR_OPERATORS[op](x, y)

    def general_reflected():
        return eager.call(op, (scalar, a), policy, form=Form.OPERATOR)
    has = op in _SCALAR_OPERATORS
    reflects = has and op != "less"   # (2 < a is a > 2 in Python: greater, not a reflected less)
    for want_fn, got_fns in ((general, [routed, lambda: operator(a, scalar)] if has else [routed]),
                             (general_reflected, [lambda: operator(scalar, a)] if reflects else [])):
        for got_fn in got_fns:
            try:
                want = want_fn()
            except Exception as exc:  # noqa: BLE001 - the error is the answer compared
                with pytest.raises(type(exc)) as got:
                    got_fn()
                assert str(got.value) == str(exc)
                continue
            got = got_fn()
            assert type(got) is type(want) and got.dtype == want.dtype
            assert got.storage.tobytes() == want.storage.tobytes()


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax", "jax-x64", "tf-none", "array-api"])
@pytest.mark.parametrize("src, dst", [("float32", "float16"), ("float64", "int32"), ("int8", "bfloat16"),
                                      ("float32", float), ("uint8", "bool"), ("float16", np.float32)],
                         ids=["f4-f2", "f8-i4", "i1-bf16", "f4-float", "u1-b1", "f2-np.float32"])
def test_astype_fast_path_equals_the_general_path(policy, src, dst):
    """gp.astype and Array.astype through the fast path (x's dtype and the dtype as given) against
    the general path (into out=): the same bits, NaN, inf and out-of-range values included."""
    x = (_data("float64", (3, 7)) * 40).astype(src)
    if np.dtype(src).kind == "f":
        x[0, :3] = [np.nan, np.inf, -1e9 if np.dtype(src).itemsize > 2 else -6e4]
    from gpupromote.dispatch import conventions
    try:   # the general path: opfunctions.call, as gp.astype reaches it without the runner
        general = opfunctions.call("astype", (x, conventions.dtype_of(dst)), policy)
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        with pytest.raises(type(exc)):
            gp.astype(x, dst, policy=policy)
        return
    for _ in range(2):   # the miss, then the runner
        got = gp.astype(x, dst, policy=policy)
        assert type(got) is np.ndarray and got.dtype == general.dtype
        assert got.tobytes() == general.tobytes()
        with gp.use_policy(policy):
            arr = gp.asarray(x).astype(dst)
        assert type(arr) is Array and arr.storage.tobytes() == general.tobytes()


def test_the_runners_broadcast_of_two_shapes_is_numpys():
    import itertools
    from gpupromote.engines.cpu.engine import _broadcast_pair
    shapes = [(), (1,), (3,), (1, 3), (3, 1), (2, 3), (2, 1, 3), (4, 2, 3), (0, 3), (1, 0), (3, 0), (5,)]
    for s, t in itertools.product(shapes, repeat=2):
        try:
            want = np.broadcast_shapes(s, t)
        except ValueError:
            want = None
        assert _broadcast_pair(s, t) == want, (s, t)
