"""A staged call's kernel launches, recorded once and replayed without the staging.

A gp.fuse function with reductions runs as a few kernels (dispatch/fuse_stages.py), and the
staging around them (the function run again on recording values, pending reductions settled, a
trace looked up per stage: some 700 Python calls) cost about 0.5 ms a call, an eighth of a
4096 x 1024 float32 softmax on one thread. Every kernel those stages launch on the CPU is a Numba
function over a range of rows (reduce.py ``rows``, kernels.py ``apply``), so a call can be
recorded (``recording``: each launch notes its function, its arguments and which arrays it writes)
and kept as a ``Program``: the same launches with the same arguments, on the new call's arrays and
freshly allocated intermediates, a few microseconds of Python each.

Where the launches run over the same rows and each array one writes is read by the others only as
the same rows (a row's max, then the row's exp kept and summed, then the row divided), each thread
runs every launch over its own rows: one fork and join a call instead of one a launch (softmax on
two threads: 2.77 -> 2.04 ms). The functions, their arguments and each row's order of combination
(fixed by K alone) are the staged call's, so the bits are too; ``build`` also replays a program
once on the recorded call and keeps it only if the result equals the staged one byte for byte.
A row-local program may also run its rows a block at a time on each thread, every launch over
one block before the next (``block_rows``: the rows whose bytes, in every array the launches touch,
fill BLOCK_BYTES), so that a row the max read is still in the L2 when the exp reads it again and
when the division rewrites it. Whether that is faster depends on the kernels and the machine: on
a Zen 5 core, one thread, softmax of 4096 x 1024 float32 2.74-2.91 -> 2.49-2.61 ms (its division
reads and writes the L2 instead of memory), layer norm 1.24-1.27 -> 1.32-1.36 ms (little to gain,
and each block's launches cost about a third of a microsecond each in Python). So a program times
its first TRIAL_CALLS replays, alternating the two ways, and keeps the faster: the bits are the
same either way, only the order in which rows are visited changes.

The engine cannot see what the dispatcher computes outside these launches, so a recording is kept
only where it is complete: every array a launch reads is an argument of the call or was written
by an earlier launch of the call, and the result is one a launch wrote. A launch of another kind
(a scan, a column reduction, one long row split over threads, batched columns, an elementwise
kernel of the engine's own) spoils the recording, and so does a stage that folds a 0-d array (a
whole-array reduction's result) into its kernel by value (dispatch/fuse_stages.py): a replay would
use that call's value. The staged path then runs every call, as before.
"""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

from . import threads as _threads
from .pool import alloc

__all__ = ["ROW0", "ROW1", "AHEAD", "active", "note", "spoil", "recording", "Program", "build"]

ROW0, ROW1 = object(), object()     # the placeholders of a launch's first and past-last row
AHEAD = object()   # of a reduction's rows ahead it asks the caches for (the block's rows where blocked, else 0)



class _Recording(threading.local):
    """This thread's recording: ``steps`` (None when none is on) and whether it was spoiled. The
    defaults are class attributes: a thread-local's missing attribute costs getattr an exception
    (0.3 us on every elementwise launch and row map, which ask whether a recording is on)."""
    steps = None
    spoiled = False


_local = _Recording()

# the bytes one block of rows touches across a row-local program's launches (every distinct array
# view's rows): the 1 MB L2 of Zen 4 and 5 and of most x86 cores since Skylake-SP (softmax on Zen 5:
# 512 KB to 2 MB alike within the noise, 128 KB slower than no blocks, from the launches' Python)
BLOCK_BYTES = 1 << 20
TRIAL_CALLS = 6   # the replays timed (half of them in blocks) before a program keeps the faster way


def note(fn, args, rows: int, size: int, writes) -> None:
    """A launch of the Numba function ``fn`` (a module's ``rows`` or ``apply``) over ``rows`` rows,
    ``size`` elements, called as ``fn(*args)`` with ROW0 / ROW1 where its row range goes;
    ``writes``: the indices of the arrays in ``args`` it writes. Nothing unless a recording is on
    in this thread."""
    steps = _local.steps
    if steps is not None:
        steps.append((fn, list(args), rows, size, tuple(writes)))


def active() -> bool:
    """Whether a recording is on in this thread (for callers whose note would cost more than their call)."""
    return _local.steps is not None


def spoil() -> None:
    """A launch the program cannot replay: the recording on this thread is not kept."""
    if _local.steps is not None:
        _local.spoiled = True


@contextlib.contextmanager
def recording():
    """Record the launches on this thread; yields the list they go to (None at the end if spoiled)."""
    if _local.steps is not None:
        yield None   # (a staged call inside a staged call's function: the outer one records)
        return
    steps: list = []
    _local.steps, _local.spoiled = steps, False
    box = [steps]
    try:
        yield box
    finally:
        if _local.spoiled:
            box[0] = None
        _local.steps = None


def _root_of(a: np.ndarray):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class _View:
    """An array argument as its root (an argument of the call, or a buffer the call made) and the
    bytes, shape and strides of the view on it."""
    __slots__ = ("root", "offset", "shape", "strides", "dtype", "writeable")

    def __init__(self, root, offset, a):
        self.root, self.offset = root, offset
        self.shape, self.strides, self.dtype, self.writeable = a.shape, a.strides, a.dtype, a.flags.writeable

    def same(self, other) -> bool:
        return (self.root, self.offset, self.shape, self.strides) == (other.root, other.offset, other.shape,
                                                                      other.strides)

    def on(self, buffers):
        v = np.ndarray(self.shape, self.dtype, buffer=buffers[self.root], offset=self.offset, strides=self.strides)
        if not self.writeable:
            v.flags.writeable = False
        return v


class Program:
    """The recorded launches, and how to rebuild their arguments from a new call's arguments."""

    def __init__(self, n_args, new_roots, steps, result, row_local, arg_specs):
        self.n_args, self.new_roots, self.result, self.row_local = n_args, new_roots, result, row_local
        r = result
        whole = r.root >= n_args and _covers(r, r.shape, r.dtype, new_roots[r.root - n_args])
        self.whole_result = r.root if whole else None
        # each distinct view made once a call; a launch's arguments: its scalars in place, a slot
        # for each view and for the row range
        self.views, index = [], {}
        self.launches = []
        for fn, values, rows, size, _ in steps:
            base, slots = [], []
            for j, v in enumerate(values):
                if isinstance(v, _View):
                    key = (v.root, v.offset, v.shape, v.strides, v.dtype, v.writeable)
                    if key not in index:
                        index[key] = len(self.views)
                        self.views.append(v)
                    slots.append((j, index[key]))
                    base.append(None)
                else:
                    base.append(v)
            ahead = values.index(AHEAD) if any(v is AHEAD for v in values) else None
            self.launches.append([fn, base, tuple(slots), (values.index(ROW0), values.index(ROW1), ahead), rows, size])
        # one launch a block asks for the next block's rows, the last reduction: with the first one
        # asking too, its prefetches (4,000-5,000 lines a block of softmax's) stalled its own reads
        # (softmax's max 0.37 -> 0.47 ms, the exp and sum 1.72 -> 1.80)
        asking = [i for i, launch in enumerate(self.launches) if launch[3][2] is not None][-1:]
        for i, launch in enumerate(self.launches):
            if i not in asking and launch[3][2] is not None:
                launch[1][launch[3][2]] = 0
                launch[3] = (*launch[3][:2], None)
        self._whole_views(arg_specs)
        # row-local programs over more rows than a block: [None, block rows] and each way's best time
        # so far until the trials end, then the faster way alone
        rows = steps[0][2] if steps else 0
        block = _block_rows(self.views, rows) if row_local else rows
        self.ways = [None, block] if block < rows else [None]
        self.best = [float("inf")] * len(self.ways)
        self.trials = TRIAL_CALLS if len(self.ways) > 1 else 0

    def _whole_views(self, arg_specs):
        """``root_specs``: the (shape, dtype) each buffer the call makes is allocated as (a view that
        covers it whole, else bytes); ``direct``: for each view, how a call gets it: _AS_IT_IS where
        it is its buffer itself (an argument, or a buffer allocated as it), _READ_ONLY where it is a
        read-only view of the whole of a writeable one, else _MADE, a new array on the buffer's bytes
        (0.8 us each: a replayed 16 x 1024 softmax made seven)."""
        self.root_specs = [None] * len(self.new_roots)
        if self.whole_result is not None:
            self.root_specs[self.whole_result - self.n_args] = (self.result.shape, self.result.dtype)
        for v in self.views:
            j = v.root - self.n_args
            if j >= 0 and self.root_specs[j] is None and _covers(v, v.shape, v.dtype, self.new_roots[j]):
                self.root_specs[j] = (v.shape, v.dtype)
        # (a read-only view of a whole writeable buffer, as a kernel's operands are recorded: a view
        # of it made read-only, 0.28 us, where a new array on its bytes takes 0.77)
        self.direct = []
        for v in self.views:
            if v.root < self.n_args:
                spec = arg_specs[v.root]
                whole = spec is not None and _covers(v, spec[0], spec[1], spec[2], v.writeable)
                writeable = spec is not None and spec[3]
            else:
                spec = self.root_specs[v.root - self.n_args]
                whole = spec is not None and _covers(v, spec[0], spec[1], self.new_roots[v.root - self.n_args], v.writeable)
                writeable = True
            self.direct.append(_AS_IT_IS if whole and v.writeable == writeable
                               else _READ_ONLY if whole and writeable and not v.writeable else _MADE)

    def __call__(self, args, into=None):
        """The launches on ``args``; the result in a new array, or in ``into`` (an array of the
        result's shape and dtype, C-contiguous, sharing no memory with ``args``) where the result is
        a whole buffer of the call's (``whole_result``)."""
        # the result's buffer is allocated as the result itself where it is the whole buffer: the
        # pool takes a buffer back when the array alloc returned dies, and a view of it (whose
        # base is the pool's raw buffer) would keep it from the pool
        whole = self.whole_result
        if into is not None and whole is None:
            raise ValueError("Program: into= needs a program whose result is a whole buffer")
        buffers = list(args) + [(alloc(self.result.shape, self.result.dtype) if into is None else into)
                                if self.n_args + j == whole else alloc((n,), np.uint8) if spec is None else alloc(*spec)
                                for j, (n, spec) in enumerate(zip(self.new_roots, self.root_specs))]
        made = [buffers[v.root] if d is _AS_IT_IS else _read_only(buffers[v.root]) if d is _READ_ONLY else v.on(buffers)
                for v, d in zip(self.views, self.direct)]
        calls = []
        for fn, base, slots, at, rows, size in self.launches:
            a = list(base)
            for j, i in slots:
                a[j] = made[i]
            calls.append((fn, a, at, rows, size))
        del made
        ways = self.ways   # (read once: another thread's last trial may replace it)
        if len(ways) == 1:
            _launch(calls, self.row_local, ways[0])
        else:
            self._trial(calls, ways)
        # (the views are gone by now: a pooled buffer goes back only when nothing else holds it)
        return buffers[whole] if whole is not None else self.result.on(buffers)

    def _trial(self, calls, ways):
        """One of the first TRIAL_CALLS replays: the next way, timed; after the last, the faster kept."""
        self.trials -= 1
        i = self.trials % len(ways)
        t0 = time.perf_counter()
        _launch(calls, self.row_local, ways[i])
        self.best[i] = min(self.best[i], time.perf_counter() - t0)
        if self.trials <= 0:
            self.ways = [ways[self.best.index(min(self.best))]]


# how a call gets a view: the buffer as it is, a read-only view of it, a new array on its bytes
_AS_IT_IS, _READ_ONLY, _MADE = "as it is", "read-only", "made"


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _covers(v, shape, dtype, nbytes, writeable=True) -> bool:
    """Whether the view ``v`` is the whole of a buffer of ``nbytes`` bytes seen as a C-contiguous
    array of ``shape`` and ``dtype`` (writeable as ``writeable``)."""
    return (v.offset == 0 and v.shape == shape and v.dtype == dtype and v.writeable == writeable
            and v.strides == _c_strides(shape, dtype.itemsize) and nbytes == dtype.itemsize * int(np.prod(shape)))


def _block_rows(views, rows: int) -> int:
    """The rows of one block (BLOCK_BYTES over the bytes a row spans in every view of ``rows`` rows)."""
    row_bytes = sum(v.dtype.itemsize * int(np.prod(v.shape[1:])) for v in views if len(v.shape) >= 1 and v.shape[0] == rows)
    return max(1, BLOCK_BYTES // max(1, row_bytes))


def _launch(calls, row_local, block_rows):
    """The launches: row-local ones over each thread's rows (in blocks of ``block_rows`` where it
    is not None), one fork and join a call; the others launch by launch."""
    if row_local:
        ranges = _threads.row_ranges(calls[0][3], max(c[4] for c in calls))
        if len(ranges) == 1:
            _blocks(calls, *ranges[0], block_rows)
        else:
            _threads.run_ranges(lambda m0, m1: _blocks(calls, m0, m1, block_rows), ranges)
        return
    for call in calls:
        ranges = _threads.row_ranges(call[3], call[4])
        if len(ranges) == 1:
            _over((call,), *ranges[0])
        else:
            _threads.run_ranges(lambda m0, m1, call=call: _over((call,), m0, m1), ranges)


def _blocks(calls, m0, m1, block_rows):
    """The launches ``calls`` over rows m0 .. m1, every launch over a block of rows before the next
    block (all at once where ``block_rows`` is None). The launch with an ``ahead`` slot (the last
    reduction: Program.__init__) asks, on every block of the thread's but its last, for the next
    block's rows of what it reads (intrinsics.prefetch_row): the first launch of a block then reads
    them from the cache, not from memory (softmax 4096 x 1024 float32: its max 0.58 -> 0.37 ms, the
    three launches 2.72 -> 2.43)."""
    if block_rows is None:
        _over(calls, m0, m1)
        return
    # (each launch's argument list copied once for this thread, its rows set in place a block)
    mine = [(fn, list(a), *at) for fn, a, at, _, _ in calls]
    for b0 in range(m0, m1, block_rows):
        b1 = min(m1, b0 + block_rows)
        for fn, b, at0, at1, at_ahead in mine:
            b[at0], b[at1] = b0, b1
            if at_ahead is not None:
                b[at_ahead] = block_rows if b1 < m1 else 0
            fn(*b)


def _over(calls, m0, m1):
    """The launches ``calls`` over rows m0 .. m1 (a copy of each argument list: threads share them)."""
    for fn, a, (at0, at1, at_ahead), _, _ in calls:
        b = list(a)
        b[at0], b[at1] = m0, m1
        if at_ahead is not None:
            b[at_ahead] = 0
        fn(*b)


def _c_strides(shape, itemsize) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def build(steps, args, result):
    """The Program of a recording (``recording``'s list) of a call on ``args`` (C-contiguous
    ndarrays and Python scalars) that returned ``result``, or None where the recording is not
    complete (the module docstring) or its replay differs from ``result``."""
    if not steps or not isinstance(result, np.ndarray):
        return None
    spans = [(_address(a), _address(a) + a.nbytes, i) for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    new: dict = {}       # id(buffer) -> root index, for the buffers the call made
    roots: list = []     # those buffers (alive while this runs: their ids stay theirs)
    written: dict = {}   # root index -> the views launches wrote it through

    def view(a):
        if a.size and any(st < 0 for st in a.strides):
            return None
        lo = _address(a)
        hi = lo + (a.itemsize + sum((n - 1) * st for n, st in zip(a.shape, a.strides)) if a.size else 0)
        for slo, shi, i in spans:
            if slo <= lo and hi <= shi:
                return _View(i, lo - slo, a)
        root = _root_of(a)
        if not root.flags.c_contiguous:
            return None
        if id(root) not in new:
            new[id(root)] = len(args) + len(roots)
            roots.append(root)
        return _View(new[id(root)], lo - _address(root), a)

    recorded = []
    for fn, values, rows, size, writes in steps:
        out = []
        for j, v in enumerate(values):
            if isinstance(v, np.ndarray):
                w = view(v)
                if w is None:
                    return None
                if j in writes:
                    written.setdefault(w.root, []).append(w)
                elif w.root >= len(args) and w.root not in written:
                    return None   # read before a launch wrote it: made by something not recorded
                out.append(w)
            else:
                out.append(v)
        recorded.append((fn, out, rows, size, writes))
    result_view = view(result)
    if result_view is None or result_view.root not in written:
        return None
    specs = [(a.shape, a.dtype, a.nbytes, a.flags.writeable) if isinstance(a, np.ndarray) and a.flags.c_contiguous else None
             for a in args]
    program = Program(len(args), [r.nbytes for r in roots], recorded, result_view, _row_local(recorded, written), specs)
    again = program(args)
    if again.dtype != result.dtype or again.shape != result.shape or again.tobytes() != result.tobytes():
        return None
    return program


def _row_local(recorded, written) -> bool:
    """Whether each thread may run every launch over its own rows: the launches run over the same
    rows, and every access to a buffer a launch writes is the one view it is written through, with
    those rows as its first axis (a row's max, then the row's exp kept, then the row divided)."""
    rows = {r for _, _, r, _, _ in recorded}
    if len(rows) != 1:
        return False
    M = rows.pop()
    for ws in written.values():
        if len({(w.offset, w.shape, w.strides) for w in ws}) != 1:
            return False
    for _, values, _, _, _ in recorded:
        for v in values:
            if isinstance(v, _View) and v.root in written:
                if not (v.same(written[v.root][0]) and len(v.shape) >= 1 and v.shape[0] == M):
                    return False
    return True
