"""Launching the kernels of a loaded module from Python with little host time (the reductions'
sequences of launches, engines/cuda/reduce.py).

A call through CuPy's RawKernel costs ~10 us of host time (an H200's host, 2026-11-27): five of
them were most of a 10^7-element ``gp.sum``. Where the compiled dispatcher is built and the
driver's cuLaunchKernel was found, a launch is ``_fastpath.launch`` instead (dispatch/fastpath/
device.c; dispatch/opfunctions.py hands it in, as engines may not import the dispatcher): the
parameters packed as a format string says, one cuLaunchKernel from C. Elsewhere (a source tree
without the extension) the same launches go through CuPy.

    run = Launches(module, device_id)      once per call: the current stream, the context
    bufs = run.scratch([n0, n1], dtype)    scratch arrays (one allocation on the fast path)
    run("kernel_name", grid, "qqdQ", M, K, div, out)
"""
from __future__ import annotations

import threading

import numpy as np

from .device import cupy_module, launch_kernel_address

__all__ = ["BLOCK", "Launches", "scalar_format", "set_launch"]

BLOCK = 128

# The format character of each C parameter type (device.c's launch); a pointer is "Q", and "O" a
# value CuPy's launcher packs as it is (a complex scalar: such a call never takes the fast path).
_FORMATS = {"bool": "?", "signed char": "b", "short": "h", "int": "i", "long long": "q", "unsigned char": "B",
            "unsigned short": "H", "unsigned int": "I", "unsigned long long": "Q", "float": "f", "double": "d"}
_TYPED = {"?": np.bool_, "b": np.int8, "h": np.int16, "i": np.int32, "q": np.int64, "B": np.uint8, "H": np.uint16,
          "I": np.uint32, "Q": np.uint64, "f": np.float32, "d": np.float64}

_handles: dict = {}            # (id(module), name) -> (module, RawKernel, CUfunction)
_contexts = threading.local()  # .ready: the devices whose context this thread has made current


def scalar_format(ctype: str) -> str | None:
    """The format character of a by-value parameter of C type ``ctype``; None for a type the fast
    launch does not pack (complex: the call then goes through CuPy)."""
    return _FORMATS.get(ctype)


_fast: list = [None]   # the compiled dispatcher's launch(), which dispatch/opfunctions.py hands in


def set_launch(launch) -> None:
    """Use ``launch`` (``_fastpath.launch``, or None for CuPy's launcher) from now on."""
    _fast[0] = launch


class Launches:
    """The launches of one call: kernels of ``module`` (loaded on ``device_id``, the current
    device) on the current stream, in order. ``fast=False`` forces CuPy's launcher."""

    def __init__(self, module, device_id: int, fast: bool = True):
        self.cp = cupy_module()
        self.module = module
        self._keep = None   # the scratch allocation of this call
        launch = _fast[0] if fast else None
        self.address = launch_kernel_address() if launch is not None else 0
        self.fast = launch if self.address else None
        if self.fast is not None:
            ready = getattr(_contexts, "ready", None)
            if ready is None:
                ready = _contexts.ready = set()
            if device_id not in ready:   # cuLaunchKernel needs the context current on this thread
                self.cp.cuda.runtime.memGetInfo()
                ready.add(device_id)
            self.stream = self.cp.cuda.get_current_stream().ptr
            self.array_type = self.cp.ndarray

    def _kernel(self, name):
        """(module, the RawKernel, its CUfunction handle)."""
        key = (id(self.module), name)
        hit = _handles.get(key)
        if hit is None or hit[0] is not self.module:   # why: the entry holds the module, so its id is not reused
            k = self.module.get_function(name)
            hit = _handles[key] = (self.module, k, int(k.kernel.ptr))
        return hit

    def scratch(self, counts, dtype):
        """Arrays (or, on the fast path, device addresses into one allocation) of ``counts[i]``
        elements of ``dtype`` each, alive while this object is."""
        counts = [max(int(c), 1) for c in counts]
        if self.fast is None:
            return [self.cp.empty(c, dtype) for c in counts]
        size = np.dtype(dtype).itemsize
        offsets, total = [], 0
        for c in counts:
            offsets.append(total)
            total += -(-c * size // 256) * 256   # each buffer 256-byte aligned, as CuPy's allocations
        self._keep = self.cp.empty(total, np.uint8)
        base = self._keep.data.ptr
        return [base + o for o in offsets]

    def __call__(self, name: str, grid: int, fmt: str, *values):
        _, kernel, handle = self._kernel(name)
        if self.fast is not None:
            nd = self.array_type
            self.fast(self.address, handle, grid, BLOCK, self.stream, fmt,
                      *[v.data.ptr if isinstance(v, nd) else v for v in values])
        else:
            kernel((grid,), (BLOCK,), tuple(v if f in "QO" else _TYPED[f](v) for f, v in zip(fmt, values)))
