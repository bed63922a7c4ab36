"""The compiled cache-hit path of gp.result_type (gpupromote/dispatch/fastpath/result_type.c) answers every call as the
Python function does: the same dtype, or the same exception with the same message, on the first
call (a miss) and on every later one (a hit from the plan cache or from the pointer memo)."""
import contextvars
import threading

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import api
from gpupromote.core import caches
from tests.support.refcounts import assert_no_reference_leaked_or_dropped

_fastpath = pytest.importorskip("gpupromote.dispatch._fastpath", reason="the C extension was not built (no C compiler?)")
pytestmark = pytest.mark.skipif(gp.result_type is api._py_result_type,
                                reason="GPUPROMOTE_PURE_PYTHON is set: result_type runs in Python")

DTYPES = ["bool", "uint8", "int8", "int16", "uint32", "int32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "float8_e4m3fn"]
SCALARS = [True, 1, -1, 127, 128, 300, -129, 2**31, 2**40, 2**63 - 1, 2**63, 2**64, -2**63 - 1,
           1.5, 1e300, float("nan"), 1 + 2j]
OPS = ["add", "true_divide", "floor_divide", "bitwise_and", "less", "left_shift", "pow"]


def _answer(fn, *operands, **kwargs):
    try:
        return fn(*operands, **kwargs).name
    except Exception as exc:  # noqa: BLE001 - the exception is the answer being compared
        return f"{type(exc).__name__}: {exc}"


def _operands(dtype):
    """Each way to pass a dtype: a numpy array, a 0-d numpy array, specs of both, a numpy scalar,
    the gp.DType itself (an array of that dtype)."""
    a = np.zeros(3, gp.dtype(dtype).numpy)
    return [a, a[0, ...], gp.spec(dtype), gp.spec(dtype, ndim=0), a[0], gp.dtype(dtype)]


def _assert_same_answers(policy, op, pairs):
    diffs = []
    for a, b in pairs:
        want = _answer(api._py_result_type, a, b, op=op, policy=policy)
        for attempt in ("first", "second", "third"):
            got = _answer(gp.result_type, a, b, op=op, policy=policy)
            if got != want:
                diffs.append(f"{op}({api._show(a)}, {api._show(b)}) [{attempt} call]: C {got} | Python {want}")
    assert not diffs, f"{len(diffs)} calls differ under {policy!r}:\n" + "\n".join(diffs[:30])


@pytest.mark.parametrize("policy", gp.policies())
@pytest.mark.parametrize("op", OPS)
def test_arrays_and_specs(policy, op):
    caches.clear_all()  # why: the first call must be a miss on both paths
    pairs = [(a, b) for da in DTYPES for db in DTYPES[::3] for a in _operands(da) for b in _operands(db)[:2]]
    _assert_same_answers(policy, op, pairs)


@pytest.mark.parametrize("policy", gp.policies())
@pytest.mark.parametrize("op", OPS)
def test_python_scalars_in_and_out_of_bounds(policy, op):
    caches.clear_all()
    # in-range values first, so that the later out-of-range ones meet a cached plan's bounds
    pairs = [pair for dtype in DTYPES for x in _operands(dtype)[::2] for s in SCALARS for pair in ((x, s), (s, x))]
    _assert_same_answers(policy, op, pairs)


def test_where_and_other_arities_take_the_python_path():
    a, b = np.zeros(3, np.int8), np.zeros(3, np.float32)
    assert gp.result_type(a, b, op="where", policy="torch") == api._py_result_type(True, a, b, op="where", policy="torch")
    assert gp.result_type(True, a, b, op="where", policy="numpy") == "float32"
    # three operands promote together (NumPy's n-ary result_type); fewer than two are refused
    assert _answer(gp.result_type, a, b, a, op="add", policy="numpy") == "float32"
    assert _answer(gp.result_type, a, b, a, op="add", policy="paddle").startswith("TypeError: policy 'paddle'")
    for operands in [(a, b, a), (a,), ()]:
        want = _answer(api._py_result_type, *operands, op="add", policy="numpy")
        assert want == "float32" or want.startswith("TypeError: add takes 2 operands")
        assert _answer(gp.result_type, *operands, op="add", policy="numpy") == want


def test_bad_keywords_and_operands_raise_as_python_does():
    a = np.zeros(3, np.int8)
    with pytest.raises(TypeError, match="unexpected keyword argument 'polcy'"):
        gp.result_type(a, a, polcy="numpy")
    with pytest.raises(TypeError, match=r"cannot use <object object at .*> \(object\) as an operand"):
        gp.result_type(a, object(), op="add")
    with pytest.raises(ValueError, match="unknown policy"):
        gp.result_type(a, a, op="add", policy="nmpy")


def test_policy_from_context_and_from_an_equal_string():
    a, s = np.zeros(3, np.int32), 5.5
    name = "".join(["to", "rch"])  # an equal string that is not the interned literal
    assert gp.result_type(a, s, op="add", policy=name) == "float32"
    with gp.use_policy("numpy"):
        assert gp.result_type(a, s, op="add") == "float64"
        with gp.use_policy(name):
            assert gp.result_type(a, s, op="add") == "float32"
        assert gp.result_type(a, s, op="add") == "float64"


def test_each_thread_and_context_keeps_its_policy():
    a = np.zeros(3, np.int32)
    seen = {}

    def worker(name):
        gp.set_policy(name)
        seen[name] = [gp.result_type(a, 5.5, op="add").name for _ in range(1000)]

    threads = [threading.Thread(target=worker, args=(p,)) for p in ("numpy", "torch", "jax-x64")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {k: set(v) for k, v in seen.items()} == {"numpy": {"float64"}, "torch": {"float32"}, "jax-x64": {"float64"}}
    assert contextvars.copy_context().run(lambda: (gp.set_policy("torch"), gp.result_type(a, 5.5))[1]) == "float32"
    assert gp.result_type(a, 5.5) == "float64"  # this thread's context is untouched


def test_the_memo_does_not_keep_a_wrong_answer_for_a_reused_address():
    # a byte-swapped dtype is its own object: arrays of it come and go, and their dtypes may be
    # freed and their addresses reused; the memo holds what it keys on, so no address is reused
    for _ in range(3000):
        swapped = np.zeros(3, np.dtype(">i2")).dtype.newbyteorder("=")
        other = np.zeros(3, np.dtype(np.float32).newbyteorder(">"))
        assert gp.result_type(np.zeros(3, swapped), other, op="add", policy="numpy") == "float32"
        assert gp.result_type(np.zeros(3, swapped), 1, op="add", policy="numpy") == "int16"


def test_specs_are_immutable_and_share_their_key():
    s = gp.spec("int32")
    assert s._key is gp.spec("int32")._key
    assert gp.result_type(s, 1.5) is gp.result_type(gp.int32, 1.5) is gp.float64
    with pytest.raises(AttributeError, match="immutable"):
        s.ndim = 0


def test_no_reference_is_leaked_or_dropped():
    # why: the compiled path borrows and takes references by hand; a leak shows as a growing
    # count on the objects every call touches, a dropped reference as a shrinking one
    a, z = np.ones(3, np.int8), np.ones((), np.float16)
    calls = [((a, z), {}), ((a, 5.5), {"op": "add", "policy": "torch"}), ((gp.spec("int32"), 1), {}),
             ((a, 300), {"policy": "numpy"}), ((a, 2**63), {"policy": "torch"}), ((np.float32(1), a), {"op": "less"}),
             ((np.ma.ones(3), a), {}), ((gp.int8, gp.uint8), {"policy": "".join(["ja", "x"])}), ((a, object()), {})]
    watched = [True, False, int, float, a.dtype, z.dtype, "numpy", "torch", "add"]

    def run(n):
        for _ in range(n):
            for args, kwargs in calls:
                try:
                    gp.result_type(*args, **kwargs)
                except (TypeError, OverflowError):
                    pass

    caches.clear_all()  # why: entries of earlier tests would be evicted from the memo as we go
    assert_no_reference_leaked_or_dropped(run, watched)
