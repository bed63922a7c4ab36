"""The CPU engine's threads: how many a kernel call may use (GPUPROMOTE_NUM_THREADS,
``set_num_threads``), told to whoever registered for it (``add_sink``: the compiled dispatcher's C
pool), and how the Python path splits a call into chunks over a ThreadPoolExecutor.

Apart from the kernels because this is process-wide state (the thread count, the executor), kept
in this one module: everything that reads it reads it here, at call time.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["MIN_CHUNK", "add_sink", "get_num_threads", "set_num_threads", "num_threads", "split_for", "run_split", "flat_call",
           "executor", "thread_count", "split_range", "row_ranges", "run_ranges"]

# ---------------------------------------------------------------------------------------------
# Threads
#
# Above a size a kernel call is split into one chunk per thread, run at once: the kernels are
# nogil, and each element depends on its own inputs only, so the result is the one-thread result
# bit for bit, whatever the split (tests/engines/test_threads.py). The compiled dispatcher splits the flat
# index range in C (dispatch/fastpath/pool.c, a pthread pool); the Python path splits the largest axis of the
# kernel's (coalesced) output over a ThreadPoolExecutor. GPUPROMOTE_NUM_THREADS sets how many
# threads (default: the cores Numba sees, NUMBA_NUM_THREADS); set_num_threads changes it.

MIN_CHUNK = 1 << 16   # elements per thread at least: below it, waking a thread costs what it saves


def _threads_from_environment() -> int:
    """GPUPROMOTE_NUM_THREADS (default: Numba's NUMBA_NUM_THREADS, the cores it sees); a value that
    is not a whole number >= 1 is an error naming the variable, raised by the first op."""
    text = os.environ.get("GPUPROMOTE_NUM_THREADS")
    if text is None or not text.strip():
        from numba.core import config
        return max(1, int(config.NUMBA_NUM_THREADS))
    try:
        n = int(text.strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"GPUPROMOTE_NUM_THREADS={text!r} is not a whole number >= 1: set it to the number of "
                         f"threads a CPU kernel may use, e.g. {os.cpu_count() or 2}, or 1 for one thread")
    return n


_threads: list = []   # [the count], read from the environment on first use (numba is imported then)
_sinks: list = []


def _count() -> int:
    if not _threads:
        _threads.append(_threads_from_environment())
        _tell_sinks()
    return _threads[0]


def _tell_sinks():
    for sink in _sinks:
        sink(_threads[0], MIN_CHUNK)


def add_sink(sink) -> None:
    """Call ``sink(threads, min_chunk)`` whenever the thread count is set, and now if it is known:
    how the compiled dispatcher's C pool (dispatch/fastpath) learns it without this engine
    importing the dispatcher."""
    _sinks.append(sink)
    if _threads:
        sink(_threads[0], MIN_CHUNK)


def get_num_threads() -> int:
    """How many threads a CPU kernel call may use (GPUPROMOTE_NUM_THREADS, set_num_threads)."""
    return _count()


def set_num_threads(n: int) -> int:
    """Let CPU kernel calls use ``n`` threads (>= 1) from now on, in every thread of the process;
    returns the previous number. Results do not depend on it."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads({n!r}): pass a whole number of threads >= 1")
    previous = _count()
    _threads[0] = n
    _tell_sinks()
    return previous


@contextlib.contextmanager
def num_threads(n: int):
    """``with num_threads(1): ...``: the number of threads for a block (process-wide while it runs)."""
    previous = set_num_threads(n)
    try:
        yield n
    finally:
        set_num_threads(previous)


_executor_lock = threading.Lock()
_executor_state = [None, 0, 0]   # executor, its workers, the process it belongs to


def _executor(workers: int):
    with _executor_lock:
        ex, have, pid = _executor_state
        if ex is None or have < workers or pid != os.getpid():
            if ex is not None and pid == os.getpid():
                ex.shutdown(wait=False)
            # why the pid: a forked child has the executor object but none of its threads
            ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpupromote-cpu")
            _executor_state[:] = [ex, workers, os.getpid()]
        return ex


def executor(workers: int):
    """The engine's thread pool with at least ``workers`` threads (reductions split their work on it)."""
    return _executor(workers)


def thread_count() -> int:
    """The thread count kernels run with now."""
    return _count()


def split_for(out):
    """(axis, [(lo, hi), ...]): the chunks a kernel call into ``out`` runs as, one per thread,
    along out's longest axis; None for one thread."""
    threads, size = _count(), out.size
    if threads < 2 or size < 2 * MIN_CHUNK:
        return None
    axis = max(range(out.ndim), key=out.shape.__getitem__)
    n = out.shape[axis]
    parts = min(threads, size // MIN_CHUNK, n)
    if parts < 2:
        return None
    step = -(-n // parts)
    return axis, [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def run_split(fn, args, out, tail, split):
    """fn over the chunks of ``split``: the first in this thread, the others on the executor. The
    arrays among ``args`` have out's shape; ``tail`` (a checks' flags array) is given to each chunk
    as a copy and the copies are or-ed back."""
    axis, bounds = split
    lead = (slice(None),) * axis
    flags = [tuple(f.copy() for f in tail) for _ in bounds]

    def chunk(lo, hi, chunk_flags):
        sel = lead + (slice(lo, hi),)
        fn(*[a[sel] if isinstance(a, np.ndarray) and a.ndim == out.ndim else a for a in args], out[sel], *chunk_flags)

    ex = _executor(len(bounds) - 1)
    futures = [ex.submit(chunk, lo, hi, f) for (lo, hi), f in zip(bounds[1:], flags[1:])]
    try:
        chunk(*bounds[0], flags[0])
    finally:
        done = [f.exception() for f in futures]   # all of them finish before anything is raised
    for exc in done:
        if exc is not None:
            raise exc
    for copies in flags:
        for f, c in zip(tail, copies):
            np.bitwise_or(f, c, out=f)


def flat_call(flat, args, out):
    """flat(*args, out) on 1-d arrays of out's length and scalars, over threads when it is long."""
    split = None if out.shape[0] < 2 * MIN_CHUNK else split_for(out)
    if split is None:
        flat(*args, out)
    else:
        run_split(flat, args, out, (), split)


def split_range(n: int, parts: int):
    """[(lo, hi), ...]: 0..n in ``parts`` ranges of equal length (the last shorter)."""
    step = -(-n // parts)
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def row_ranges(rows: int, size: int):
    """The row ranges of a call over ``rows`` rows, ``size`` elements in all: one a thread, each
    thread MIN_CHUNK elements at least (the row maps' and the recorded programs' split)."""
    parts = min(thread_count(), rows, max(1, size // MIN_CHUNK))
    return split_range(rows, parts) if parts > 1 else [(0, rows)]


def run_ranges(fn, bounds):
    """``fn(lo, hi)`` for each range of ``bounds``: the first in this thread, the others on the
    executor; the first exception is raised once all have ended (the reductions' rows and chunks,
    the row maps' rows)."""
    if len(bounds) == 1:
        fn(*bounds[0])
        return
    ex = executor(len(bounds) - 1)
    futures = [ex.submit(fn, lo, hi) for lo, hi in bounds[1:]]
    try:
        fn(*bounds[0])
    finally:
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
