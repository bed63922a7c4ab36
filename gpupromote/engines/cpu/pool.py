"""The CPU engine's output pool: large outputs reuse buffers that earlier results gave back when
they died (``alloc``), up to GPUPROMOTE_CPU_POOL_MB.

Apart from the kernels because it is process-wide state (the pooled buffers and their byte
count), kept in this one module, and because any output, of any kernel, comes from it.
"""
from __future__ import annotations

import os
import sys
import weakref

import numpy as np

__all__ = ["POOL_MIN_BYTES", "alloc", "fresh"]

# ---------------------------------------------------------------------------------------------
# Output buffers
#
# A fresh output of 10**7 float64 costs as much as the arithmetic: the kernel (the OS) zeroes
# every new page on first touch. Large outputs therefore come from a small pool of buffers that
# earlier results gave back when they died, the way CuPy's memory pool works on the GPU. A
# buffer goes back only when nothing else refers to it: any view of a result keeps the result's
# base buffer referenced, so a view never sees its memory reused. GPUPROMOTE_CPU_POOL_MB sets
# the most memory kept (default 256; 0 turns the pool off).

POOL_MIN_BYTES = 1 << 22          # 4 MiB: below it, np.empty is cheap (and NumPy caches)


def _pool_cap_from_environment() -> int:
    """GPUPROMOTE_CPU_POOL_MB in bytes (default 256 MiB); a value that is not a whole number >= 0
    is an error naming the variable, raised by the first op."""
    text = os.environ.get("GPUPROMOTE_CPU_POOL_MB", "256")
    try:
        mib = int(text.strip())
    except ValueError:
        mib = -1
    if mib < 0:
        raise ValueError(f"GPUPROMOTE_CPU_POOL_MB={text!r} is not a whole number of MiB >= 0: set it to the "
                         f"most memory the CPU output pool may keep, e.g. 256 (the default), or 0 to turn it off")
    return mib << 20


_POOL_CAP = _pool_cap_from_environment()
_pool: dict = {}                   # nbytes -> [uint8 buffers]
_pool_bytes = [0]


def _refs_in_finalizer():
    """How many references a buffer has inside its finalizer when nothing else holds it (the
    finalizer's bookkeeping; measured rather than assumed, it differs between Pythons)."""
    seen = []
    raw = np.empty(1, np.uint8)
    out = raw.view(np.uint8)
    weakref.finalize(out, lambda r: seen.append(sys.getrefcount(r)), raw)
    del raw, out
    return seen[0] if seen else 0


_FINALIZER_REFS = _refs_in_finalizer()


def _give_back(raw):
    if sys.getrefcount(raw) > _FINALIZER_REFS or _pool_bytes[0] + raw.nbytes > _POOL_CAP:
        return
    if not raw.flags.writeable:
        return   # why: made read-only through a view's .base: it cannot be an output again
    _pool.setdefault(raw.nbytes, []).append(raw)
    _pool_bytes[0] += raw.nbytes


# The addresses [start, end) of the newest large output np.empty gave: pages the OS zeroes on first
# touch, which leaves their lines in the cache, where an ordinary store finds them. A streaming
# store (stream.py) sends them to memory once more: 10**7 float32 a + b with the pool off, one Zen 5
# thread, 3.9 ms with ordinary stores, 4.3 streaming. kernels._Compiled.contiguous asks fresh().
_fresh = [0, 0]


def _mark_fresh(raw):
    start = raw.ctypes.data
    _fresh[:] = [start, start + raw.nbytes]


def fresh(out) -> bool:
    """Whether ``out`` lies in the newest large output np.empty gave (its pages not yet written;
    also after the first write, until another fresh output or the pool hands the buffer out again)."""
    start, end = _fresh
    return start <= out.ctypes.data < end


def alloc(shape, dtype):
    """A new (uninitialized) output array; large ones reuse a pooled buffer."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < POOL_MIN_BYTES:
        return np.empty(shape, dtype)
    if not _POOL_CAP:
        out = np.empty(shape, dtype)
        _mark_fresh(out)
        return out
    raw = None
    bucket = _pool.get(nbytes)
    if bucket:
        try:
            raw = bucket.pop()
            _pool_bytes[0] -= nbytes
        except IndexError:   # another thread took the last one
            raw = None
    if raw is None:
        raw = np.empty(nbytes, np.uint8)
        _mark_fresh(raw)
    elif fresh(raw):
        _fresh[:] = [0, 0]    # written once already, and reused
    out = raw.view(dtype).reshape(shape)
    weakref.finalize(out, _give_back, raw)
    return out
