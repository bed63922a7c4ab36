"""Arguments an op cannot compute on, and the conditions around a call that used to fail obscurely:
each gives a clear exception naming what is wrong (or NumPy's own behaviour where NumPy accepts
it), and arrays that arrive with fresh dtype objects neither leak nor slow the fast path."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import opfunctions

A = np.array([1.0, 2.0, 3.0], np.float32)


# --- operands an op refuses ------------------------------------------------------------------------

# (what, operand, what the message says)
BAD_OPERANDS = [
    ("None", None, "is None"),
    ("numpy dtype", np.dtype("float32"), "is the dtype 'float32', not an array"),
    ("numpy scalar type", np.float32, "is the dtype 'float32', not an array"),
    ("gp dtype", gp.float16, "is the dtype 'float16', not an array"),
    ("dtype name", "int8", "is the string 'int8', not an array"),
    ("spec", gp.spec("int8"), "an abstract array without data"),
    ("masked array", np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]), "is a masked array"),
    ("list", [1.0, 2.0, 3.0], "is not an array (type list: [1.0, 2.0, 3.0]); pass np.asarray(...)"),
    ("object", object(), "is not an array (type object: <object object at"),
]


@pytest.mark.parametrize("position", [1, 2])
@pytest.mark.parametrize("what, bad, says", BAD_OPERANDS, ids=[b[0] for b in BAD_OPERANDS])
def test_an_operand_that_is_no_array_is_refused_by_name(what, bad, says, position):
    args = (bad, A) if position == 1 else (A, bad)
    with pytest.raises(TypeError) as refused:
        gp.add(*args)
    message = str(refused.value)
    assert message.startswith(f"add: operand {position} ") and says in message, message


def test_a_masked_array_is_refused_rather_than_computed_on_its_masked_values():
    m = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"masked-out values .* np\.ma\.multiply .* m\.filled\(value\)"):
        gp.multiply(m, 2.0)
    with pytest.raises(TypeError, match="out= is a masked array"):
        gp.add(A, A, out=np.ma.masked_array(np.zeros(3, np.float32)))
    assert gp.result_type(m, 1.0) == gp.float64      # its dtype alone is fine to ask about


def test_result_type_refuses_none_instead_of_reading_it_as_float64():
    for operands in [(A, None), (None, A), (None, 1.0)]:
        with pytest.raises(TypeError, match="cannot use None as an operand"):
            gp.result_type(*operands)


@pytest.mark.parametrize("out_dtype", [">f4", ">f8", "<f8"])
@pytest.mark.parametrize("inputs", ["native", "big-endian"])
def test_an_out_array_in_the_other_byte_order_is_written_as_numpy_writes_it(out_dtype, inputs):
    a = np.array([1.5, -2.0, 3.25], ">f4" if inputs == "big-endian" else "<f4")
    b = np.array([0.5, 4.0, -1.0], np.float32)
    got, want = np.zeros(3, out_dtype), np.zeros(3, out_dtype)
    assert gp.add(a, b, out=got) is got
    np.add(a, b, out=want)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


# --- integer division by zero: one condition, one exception class -----------------------------------

# (policy, divisor): a Python int, one that wraps to 0 in the compute dtype, a 0-d array, an array
DIVISION_BY_ZERO = [
    ("torch", 0), ("torch", 2**32), ("torch", np.int32(0)), ("torch", np.array([1, 0, 2], np.int32)),
    ("paddle", 0), ("paddle", np.array([0, 1, 2], np.int32)),
    ("tf-all", 0), ("tf-all", np.array([3, 0, 1], np.int32)),
]


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("policy, divisor", DIVISION_BY_ZERO,
                         ids=[f"{p}-{type(d).__name__}-{d if np.ndim(d) == 0 else 'array'}" for p, d in DIVISION_BY_ZERO])
def test_integer_division_by_zero_is_one_exception_class(op, policy, divisor):
    x = np.array([7, -7, 9], np.int32)
    with pytest.raises(gp.IntegerDivisionByZero, match=rf"policy '{policy}', {op}: integer division by .*int32.*np\.where"):
        getattr(gp, op)(x, divisor, policy=policy)
    assert issubclass(gp.IntegerDivisionByZero, ZeroDivisionError)
    assert issubclass(gp.IntegerDivisionByZero, RuntimeError)   # as PyTorch raises it
    try:
        getattr(gp, op)(x, divisor, policy=policy)
    except RuntimeError:   # the clause the torch documentation promises works for every form
        pass


def test_result_type_refuses_a_python_int_divisor_of_zero_with_the_same_class():
    with pytest.raises(gp.IntegerDivisionByZero, match=r"by 4294967296, which is 0 as int32"):
        gp.result_type(gp.spec("int32"), 2**32, op="floor_divide", policy="torch")


def test_numpy_divides_by_zero_with_a_warning_not_an_exception():
    x = np.array([7, -7, 9], np.int32)
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in floor_divide"):
        assert gp.floor_divide(x, np.array([1, 0, 2], np.int32)).tolist() == [7, 0, 4]


# --- the CPU output pool ----------------------------------------------------------------------------

@pytest.mark.parametrize("value, ok", [("256", True), ("0", True), (" 64 ", True), ("lots", False), ("-1", False),
                                       ("1.5", False)])
def test_the_pool_size_variable_is_checked_with_a_message_naming_it(value, ok):
    code = "import numpy as np, gpupromote as gp; print(gp.add(np.ones(3), 1.0).tolist())"
    env = dict(os.environ, GPUPROMOTE_CPU_POOL_MB=value)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if ok:
        assert done.returncode == 0 and done.stdout.strip() == "[2.0, 2.0, 2.0]", done.stderr
    else:
        assert done.returncode != 0
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("ValueError: GPUPROMOTE_CPU_POOL_MB=") and repr(value) in last and "e.g. 256" in last


def test_a_buffer_made_read_only_is_not_handed_out_again():
    a = np.ones(2**20)                       # 8 MiB results come from the pool
    r = gp.add(a, 1.0)
    r.base.flags.writeable = False           # the pooled buffer behind the result
    del r
    again = gp.add(a, 2.0)                   # same size: the pool must not give that buffer back
    assert again.flags.writeable and again[:3].tolist() == [3.0, 3.0, 3.0]
    assert gp.add(a, 3.0)[-1] == 4.0


# --- the fast path's cache: fresh-but-equal dtypes ---------------------------------------------------

def _fresh(how, x):
    if how == "pickle":
        return pickle.loads(pickle.dumps(x))
    if how == "deepcopy":
        return copy.deepcopy(x)
    if how == "metadata":
        return x.astype(np.dtype(x.dtype.str, metadata={"unit": "m"}))
    raise ValueError(how)


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "metadata"])
def test_arrays_with_fresh_equal_dtypes_share_one_runner(how):
    w = np.arange(8, dtype=np.float32)
    template = np.ones(8, np.float32)
    gp.add(template, w)
    cache = gp.add._fast_cache
    size = len(cache)
    for _ in range(300):
        x = _fresh(how, template)
        assert x.dtype is not template.dtype or how == "deepcopy"
        assert gp.add(x, w).tolist() == (w + 1).tolist()
    assert len(cache) == size


def test_the_fast_path_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(opfunctions, "_FAST_CACHE_LIMIT", 4)
    cache = gp.multiply._fast_cache
    cache.clear()   # (entries earlier tests made are hits here: no insert, so no eviction to see)
    for dtype in ["int8", "int16", "int32", "int64", "uint8", "uint16", "float32", "float64"]:
        x = np.ones(3, dtype)
        assert gp.multiply(x, x).dtype == dtype
        assert len(cache) <= 4


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident set size from /proc")
def test_100000_calls_with_fresh_dtypes_keep_memory_flat_and_time_near_the_plain_call():
    """The acceptance measurement: pickled arrays (a new dtype object each) through gp.add."""
    w = np.arange(16, dtype=np.float32)
    blob = pickle.dumps(np.ones(16, np.float32))
    for _ in range(2000):                   # warm: kernel, runner, allocator
        gp.add(pickle.loads(blob), w)
    before = _rss_mib()
    for _ in range(100_000):
        gp.add(pickle.loads(blob), w)
    grown = _rss_mib() - before
    assert grown < 5, f"RSS grew by {grown:.1f} MiB over 100,000 calls"

    # per call, without the unpickling: 1,000 fresh arrays against 1,000 of one dtype object
    fresh = [pickle.loads(blob) for _ in range(1000)]
    plain = [np.ones(16, np.float32) for _ in range(1000)]

    def per_call(arrays):
        best = float("inf")
        for _ in range(7):
            start = time.perf_counter()
            for x in arrays:
                gp.add(x, w)
            best = min(best, (time.perf_counter() - start) / len(arrays))
        return best
    per_call(plain)
    ratio = per_call(fresh) / per_call(plain)
    assert ratio < 2, f"a call with a fresh dtype costs {ratio:.2f}x a plain one"


def test_the_fast_path_still_refuses_what_the_full_path_refuses():
    """A dtype with metadata must not slip past a check the plain dtype takes (same key)."""
    x = np.array([1, 2, 3], np.int32)
    meta = x.astype(np.dtype("i4", metadata={"unit": "m"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(gp.IntegerDivisionByZero):
            gp.floor_divide(meta, 0, policy="torch")
        assert gp.floor_divide(meta, 2, policy="torch").tolist() == [0, 1, 1]


def test_a_0d_condition_after_a_1d_one_takes_the_full_path():
    """where's fast-path key is the dtypes: a 1-d call's runner must not take a 0-d condition."""
    assert gp.where(np.array([True, False]), 1, 127).tolist() == [1, 127]
    assert gp.where(np.array(True), 100, 3).tolist() == 100
    assert gp.where(np.array(False), np.array(2.5), np.array(-1.0)).tolist() == -1.0
