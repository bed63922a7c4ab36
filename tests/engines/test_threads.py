"""Every core: a CPU kernel call above a size runs as one chunk per thread, and its result is the
one-thread result bit for bit, on the compiled dispatcher's path (a C thread pool over the flat
index range) and on the Python path (gp.<op>.__wrapped__: the largest axis over a thread pool),
for every layout: contiguous, strided, reversed, transposed, broadcast, out= into an input.

The chunk size is lowered for most tests (small arrays, many chunks, uneven splits); one test runs
at the real threshold. That the call was split is checked, not assumed: the compiled side counts
its split calls (_fastpath.op_stats), the Python side's splitter is watched.
"""
from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import opfunctions
from gpupromote.engines.cpu import threads as _cpu_threads, engine as cpu_numba

_THREADS = [2, 3, 7]   # more threads than cores is allowed (and must still be exact)


@pytest.fixture
def small_chunks(monkeypatch):
    """Split calls of a few hundred elements: chunks of 64 elements (and uneven last chunks)."""
    monkeypatch.setattr(_cpu_threads, "MIN_CHUNK", 64)
    _cpu_threads.set_num_threads(_cpu_threads.get_num_threads())   # the C pool learns the chunk size too
    yield
    monkeypatch.undo()
    _cpu_threads.set_num_threads(_cpu_threads.get_num_threads())


def _bits(x):
    return (str(x.dtype), x.shape, np.ascontiguousarray(x).tobytes())


def _values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    d = gp.dtype(dtype)
    if d.kind in "ui":
        info = np.iinfo(d.numpy)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(d.numpy)
    v = rng.standard_normal(n) * 100
    v[::17] = np.nan
    v[::23] = -0.0
    return v.astype(d.numpy)


N = 1001   # not a multiple of any chunk


def _cases():
    f32, g32 = _values("float32", N, 1), _values("float32", N, 2)
    f16, bf16 = _values("float16", N, 3), _values("float32", N, 4).astype(ml_dtypes.bfloat16)
    i8, i32 = _values("int8", N, 5), _values("int32", N, 6)
    m = _values("float32", 30 * 40, 7).reshape(30, 40)
    return {
        "f32+f32": ("add", lambda: (f32, g32), {}),
        "i8+f32": ("add", lambda: (i8, g32), {}),
        "i32+Python float": ("add", lambda: (i32, 1.5), {}),
        "f16+f32": ("add", lambda: (f16, g32), {}),
        "bf16+f32": ("add", lambda: (bf16, g32), {}),
        "f16*2.5 torch": ("multiply", lambda: (f16, 2.5), {"policy": "torch"}),
        "i32 // 7": ("floor_divide", lambda: (i32, 7), {}),
        "i32 % i32 jax": ("remainder", lambda: (i32, i32[::-1] + 1001), {"policy": "jax"}),
        "f16 < f32": ("less", lambda: (f16, g32), {}),
        "stride 2": ("add", lambda: (np.repeat(f16, 2)[::2], np.repeat(g32, 2)[::2]), {}),
        "reversed": ("add", lambda: (f16[::-1], g32), {}),
        "2-d transposed": ("add", lambda: (m.T, m.T * 2), {}),
        "2-d Fortran": ("add", lambda: (np.asfortranarray(m), m), {}),
        "broadcast (30, 1) + (40,)": ("add", lambda: (m[:, :1], m[0]), {}),
        "broadcast row + matrix": ("multiply", lambda: (m[0].astype(np.float16), m), {}),
        "where": ("where", lambda: (f32 > 0, i8, g32), {}),
    }


CASES = _cases()


def _spy(monkeypatch):
    """The splits of the Python path: elementwise kernels (threads.run_split) and the row maps that
    run 2-d calls with a broadcast operand (engines/cpu/kernels.run_map, by rows: threads.run_ranges)."""
    calls = []
    real, real_ranges = _cpu_threads.run_split, _cpu_threads.run_ranges

    def watched(*args):
        calls.append(args[-1])
        return real(*args)

    def watched_rows(fn, bounds):
        if len(bounds) > 1:
            calls.append(bounds)
        return real_ranges(fn, bounds)
    monkeypatch.setattr(_cpu_threads, "run_split", watched)
    monkeypatch.setattr(_cpu_threads, "run_ranges", watched_rows)
    return calls


def _split_count():
    from gpupromote.dispatch import _fastpath
    return _fastpath.op_stats()["split"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("path", ["compiled", "python"])
def test_results_do_not_depend_on_the_number_of_threads(case, path, small_chunks, monkeypatch):
    op, make, kwargs = CASES[case]
    fn = getattr(gp, op)
    if path == "python":
        fn = getattr(fn, "__wrapped__", fn)
    elif opfunctions._fastpath is None:
        pytest.skip("the compiled dispatcher is not built or GPUPROMOTE_PURE_PYTHON is set")
    with cpu_numba.num_threads(1):
        want = _bits(fn(*make(), **kwargs))
    python_splits = _spy(monkeypatch)
    compiled_splits = _split_count() if opfunctions._fastpath is not None else 0
    for n in _THREADS:
        with cpu_numba.num_threads(n):
            got = _bits(fn(*make(), **kwargs))
        assert got == want, f"{case} with {n} threads differs from one thread"
    split = (_split_count() - compiled_splits) + len(python_splits)
    assert split >= len(_THREADS), "the calls were not split over threads"


@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("how", ["first operand", "second operand", "strided first operand", "2-d transposed"])
def test_out_aliasing_an_input_is_exact_over_threads(path, how, small_chunks):
    if path == "compiled" and opfunctions._fastpath is None:
        pytest.skip("the compiled dispatcher is not built or GPUPROMOTE_PURE_PYTHON is set")
    base = _values("float32", 2 * N, 8)
    other = _values("float16", 2 * N, 9)
    m = _values("float32", 30 * 40, 10).reshape(30, 40)

    def operands():
        if how == "first operand":
            x = base[:N].copy()
            return (x, other[:N].copy()), x
        if how == "second operand":
            x = base[:N].copy()
            return (other[:N].copy(), x), x
        if how == "strided first operand":
            x = base.copy()[::2]
            return (x, other[::2].copy()), x
        x = m.copy().T
        return (x, np.float32(0.5) * x), x

    fn = gp.add if path == "compiled" else getattr(gp.add, "__wrapped__", gp.add)
    with cpu_numba.num_threads(1):
        args, out = operands()
        assert fn(*args, out=out) is out
        want = _bits(out)
    for n in _THREADS:
        with cpu_numba.num_threads(n):
            args, out = operands()
            fn(*args, out=out)
        assert _bits(out) == want


def test_a_fused_chain_with_checks_is_exact_over_threads_and_reports_its_checks(small_chunks):
    # fused kernels set flags (integer division by zero) from every chunk; the flags are or-ed
    f = gp.fuse(lambda a, b, c: a // b + c * 3, policy="numpy")
    a, b, c = _values("int32", N, 11), _values("int32", N, 12), _values("int16", N, 13)
    b[b == 0] = 5
    with cpu_numba.num_threads(1):
        want = _bits(f(a, b, c))
    for n in _THREADS:
        with cpu_numba.num_threads(n):
            assert _bits(f(a, b, c)) == want
    b[N - 3] = 0   # in the last chunk only
    for n in [1, *_THREADS]:
        with cpu_numba.num_threads(n), pytest.warns(RuntimeWarning, match="divide by zero"):
            f(a, b, c)


@pytest.mark.parametrize("path", ["compiled", "python"])
def test_at_the_real_threshold_large_calls_are_split_and_exact(path, monkeypatch):
    if path == "compiled" and opfunctions._fastpath is None:
        pytest.skip("the compiled dispatcher is not built or GPUPROMOTE_PURE_PYTHON is set")
    n = 4 * _cpu_threads.MIN_CHUNK + 13
    a, b = _values("float16", n, 14), _values("float32", n, 15)
    fn = gp.add if path == "compiled" else getattr(gp.add, "__wrapped__", gp.add)
    with cpu_numba.num_threads(1):
        want = _bits(fn(a, b))
    python_splits = _spy(monkeypatch)
    before = _split_count() if opfunctions._fastpath is not None else 0
    with cpu_numba.num_threads(2):
        assert _bits(fn(a, b)) == want
        small = fn(a[:100], b[:100])   # below the threshold: one thread
    assert _bits(small) == _bits(want_small := fn(a[:100], b[:100])) and want_small.shape == (100,)
    after = _split_count() if opfunctions._fastpath is not None else 0
    assert (after - before) + len(python_splits) == 1


def test_the_thread_count_is_set_by_the_environment_and_checked():
    code = "from gpupromote.engines.cpu import engine as cpu_numba; print(cpu_numba.get_num_threads())"
    run = lambda value: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                       env={**os.environ, "GPUPROMOTE_NUM_THREADS": value})
    assert run("3").stdout.strip() == "3"
    bad = run("many")
    assert bad.returncode != 0 and "GPUPROMOTE_NUM_THREADS='many'" in bad.stderr and "whole number" in bad.stderr
    assert run("0").returncode != 0
    default = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if k != "GPUPROMOTE_NUM_THREADS"}
                             | {"NUMBA_NUM_THREADS": "2"})
    assert default.stdout.strip() == "2"   # the cores Numba sees
    with pytest.raises(ValueError, match="whole number of threads"):
        cpu_numba.set_num_threads(0)


def test_a_forked_child_computes_on_its_own_threads(small_chunks):
    # the parent's worker threads do not exist in a child: both pools start again there
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    a, b = _values("float16", N, 16), _values("float32", N, 17)
    with cpu_numba.num_threads(2):
        want = _bits(gp.add(a, b))
        gp.add.__wrapped__(a, b)
        pid = os.fork()
        if pid == 0:
            ok = _bits(gp.add(a, b)) == want and _bits(gp.add.__wrapped__(a, b)) == want
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_ops_called_from_many_python_threads_at_once_give_each_its_answer(small_chunks):
    # several callers share the C pool (a caller that finds it busy runs its call alone) and the
    # entry memo (keys of every dtype and policy, evicting one another)
    import threading
    dtypes = ["int8", "uint8", "int16", "int32", "float16", "float32", "float64", "bfloat16"]
    arrays = {d: _values(d, N, i) for i, d in enumerate(dtypes)}
    policies = ["numpy", "torch", "jax", "paddle"]
    want = {}
    with cpu_numba.num_threads(1):
        for p in policies:
            for da in dtypes:
                for db in dtypes[::3]:
                    try:
                        want[p, da, db] = _bits(gp.multiply(arrays[da], arrays[db], policy=p))
                    except TypeError:
                        pass
    failures = []

    def worker(policy, seed):
        gp.set_policy(policy)
        rng = np.random.default_rng(seed)
        keys = [k for k in want if k[0] == policy]
        for _ in range(150):
            p, da, db = keys[rng.integers(len(keys))]
            a, b = arrays[da], arrays[db]
            if rng.integers(2):
                a, b = a[:77], b[:77]   # small calls between the split ones
                if _bits(gp.multiply(a, b)) != _bits(gp.multiply.__wrapped__(a, b)):
                    failures.append((p, da, db, "small"))
            elif _bits(gp.multiply(a, b)) != want[p, da, db]:
                failures.append((p, da, db))

    with cpu_numba.num_threads(2):
        threads = [threading.Thread(target=worker, args=(p, i)) for i, p in enumerate(policies * 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:10]
