"""The CPU engine's compiled kernels: each ir.Kernel's generated module (filed on disk and
imported by modules.py), its entry points compiled on first use (``_Compiled``: flat, strided,
native), and calls on arrays of any layout launched, over threads where they are long
(``_cpu_threads``); 2-d calls with broadcast rows or columns as the row map (``run_map``).

Apart from the generator (source.py, text only), the module files (modules.py) and the backend
object (engine.py): this is what turns source into machine code and runs it, with the in-memory
cache (``kernel_for``).
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from pathlib import Path

import numpy as np
from numba import cfunc, types as _nbtypes
from numba.core import errors as numba_errors

from ...kernel import ir
from . import tables as _tables
from . import pool as _pool
from . import program as _program
from . import threads as _cpu_threads
from .cache import MATH_INTERLEAVE, cached_cfunc, interleaving
from .modules import load_lock as _load_lock, load_module
from .plain import PLAIN, plain_conversions
from .source import (GENERATOR_VERSION, HELPER_IMPORTS, MAX_STRIDED_NDIM, NARROW_HELPERS as _NARROW, TWIN_BLOCKS_AFTER,
                     as_kernel, jit_line, lower_lines as _lower, vector_width_lines, source, storage_view,
                     store_text as _store_text)
from .stream import streams

__all__ = ["kernel_for", "no_kernel", "compile_stats", "load_module", "map_source", "run_map"]

# native(data, n): void(char **data, int64 n) in C (gp_kernel in gpupromote/dispatch/fastpath/fastpath.h)
_NATIVE_SIGNATURE = _nbtypes.void(_nbtypes.CPointer(_nbtypes.voidptr), _nbtypes.int64)


# ---------------------------------------------------------------------------------------------
# Kernels and launching

def _coalesce(ins, out):
    """Views of ``ins`` (already broadcast to out.shape) and ``out`` with the fewest axes: size-1
    axes dropped, axes ordered by the output's strides (largest first, so the inner loop walks
    memory in order), reversed where the output's stride is negative, and adjacent axes merged
    where every operand allows it."""
    arrays = [out, *ins]
    shape = out.shape
    keep = [d for d in range(out.ndim) if shape[d] != 1]
    if len(keep) != out.ndim:
        sel = tuple(slice(None) if shape[d] != 1 else 0 for d in range(out.ndim))
        arrays = [a[sel] for a in arrays]
    o = arrays[0]
    order = sorted(range(o.ndim), key=lambda d: -abs(o.strides[d]))
    if order != list(range(o.ndim)):
        arrays = [a.transpose(order) for a in arrays]
    o = arrays[0]
    if any(s < 0 for s in o.strides):
        flip = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in o.strides)
        arrays = [a[flip] for a in arrays]
    o = arrays[0]
    new_shape = list(o.shape[:1])
    new_strides = [list(a.strides[:1]) for a in arrays]
    for d in range(1, o.ndim):
        n = o.shape[d]
        if all(st[-1] == a.strides[d] * n for st, a in zip(new_strides, arrays)):
            new_shape[-1] *= n
            for st, a in zip(new_strides, arrays):
                st[-1] = a.strides[d]
        else:
            new_shape.append(n)
            for st, a in zip(new_strides, arrays):
                st.append(a.strides[d])
    if len(new_shape) != o.ndim:
        arrays = [np.lib.stride_tricks.as_strided(a, tuple(new_shape), tuple(st), writeable=(i == 0))
                  for i, (a, st) in enumerate(zip(arrays, new_strides))]
    return arrays[1:], arrays[0]


class _Compiled:
    """The compiled functions of one ir.Kernel, and how to call them on arrays of any layout."""

    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self.source = source(kernel)
        self.module = load_module(self.source)
        self.flat = self.module.flat
        # a kernel with fast twins: calls longer than TWIN_BLOCKS_AFTER take blocks (source._twin_lines)
        self.blocks = getattr(self.module, "blocks", None)
        self._strided = {}
        self.arrays = kernel.arrays
        self.views = [None if p.folded else storage_view(p.dtype) for p in kernel.params]
        self.out_view = storage_view(kernel.out)
        self.nflags = len(kernel.checks)
        self._native = None
        self._stream = None
        # the bytes a contiguous call reads and writes an element: calls of stream_min_bytes() or more
        # take the streaming loop (stream.py), where the module has one
        self.element_bytes = sum(np.dtype(self.views[i] or kernel.params[i].dtype.numpy).itemsize for i in self.arrays) \
            + np.dtype(self.out_view or kernel.out.numpy).itemsize if streams(kernel) else None
        self._lock = threading.Lock()
        # one narrow operand and a call to the owned math: long calls gather from a table (tables.py)
        a = kernel.arrays[0] if len(kernel.arrays) == 1 else None
        storage = None if a is None else np.dtype(self.views[a] or kernel.params[a].dtype.numpy)
        # why: a math function on a strided operand runs one element at a time, 4-6x its vector speed
        self.buffered = _tables.calls_math(kernel)
        self.table_bits = _tables.table_bits(kernel, storage)
        self.table_min = None if self.table_bits is None else _tables.min_elements(self.table_bits)
        self._tables = None if self.table_bits is None else _tables.Tables(
            self.flat, self.table_bits, a, storage, np.dtype(self.out_view or kernel.out.numpy))

    def strided(self, ndim):
        """The loop for ``ndim``-d strided or broadcast layouts: ``buffered<ndim>`` (copies through
        contiguous buffers, so that ``flat`` vectorises) for kernels that call the math library,
        ``strided<ndim>`` for the others (source.py)."""
        fn = self._strided.get(ndim)
        if fn is None:
            with self._lock:   # one dispatcher per function, however many threads ask first
                fn = self._strided.get(ndim)
                if fn is None:
                    name = f"{'buffered' if self.buffered else 'strided'}{ndim}"
                    fn = self._strided[ndim] = self.module._jit(getattr(self.module, name))
        return fn

    def native(self):
        """The kernel's C entry point ``native(data, n)`` (see _native_lines), compiled
        (or loaded from the disk cache) on first use: a Numba CFunc whose ``address`` the
        compiled dispatcher calls. None for kernels with checks (their flags need the Python
        path)."""
        if self._native is None and not self.nflags:
            with self._lock:
                if self._native is None:
                    # a module compiled in memory (no file to key a disk cache on) gets Numba's own cfunc
                    make = cfunc if getattr(self.module, "__gp_in_memory__", False) else cached_cfunc
                    with interleaving(_tables.math_interleave(self.kernel)):
                        self._native = make(_NATIVE_SIGNATURE, error_model="numpy", boundscheck=False)(self.module.native)
        return self._native

    def compile_stats(self) -> dict:
        """How this process got each compiled entry point's machine code: ``compiled`` (a
        disk-cache miss) and ``loaded`` (a hit), over the flat, strided and native functions."""
        compiled = loaded = 0
        for dispatcher in (self.flat, *self._strided.values()):
            stats = dispatcher.stats
            compiled += sum(stats.cache_misses.values())
            loaded += sum(stats.cache_hits.values())
        if self._native is not None:
            loaded += self._native.cache_hits
            compiled += 1 - self._native.cache_hits
        return {"compiled": compiled, "loaded": loaded}

    def __call__(self, args, out, context=None, flags=None):
        """Evaluate into ``out``. ``context``: the caller's plan (or any object with a
        ``describe()``-able label), named in compile errors; ``flags``: a uint8 array of
        len(kernel.checks) the checks set (kernels with checks only)."""
        # an elementwise launch of its own (gp.fuse's one-kernel call, an eager op): a staged call's
        # recording does not replay it, whose operands may hold values folded from this call's data
        _program.spoil()
        tail = (flags,) if self.nflags else ()
        args = list(args)
        for i in self.arrays:
            v = self.views[i]
            if v is not None:
                args[i] = args[i].view(v)
        o = out if self.out_view is None else out.view(self.out_view)
        shape = o.shape
        arrays = [args[i] for i in self.arrays]
        if all(a.shape == shape for a in arrays):
            if o.ndim == 1:
                if self.table_min is not None and o.shape[0] >= self.table_min:
                    return self.gather(args, o, context)
                return _launch(self, self.contiguous(o.shape[0]), args, o, tail, context)
            if all(a.flags.c_contiguous for a in arrays) and o.flags.c_contiguous:
                for i in self.arrays:
                    args[i] = args[i].reshape(-1)
                if self.table_min is not None and o.size >= self.table_min:
                    return self.gather(args, o.reshape(-1), context)
                return _launch(self, self.contiguous(o.size), args, o.reshape(-1), tail, context)
        if o.size == 1:   # why: also (1, 1) from broadcast operands, which _coalesce would make 0-d
            for i in self.arrays:
                args[i] = args[i].reshape(1)
            return _launch(self, self.flat, args, o.reshape(1), tail, context)
        if o.ndim == 2 and not self.nflags:
            lean = _lean_map_operands(arrays, o)
            if lean is not None:
                # (M, K) rows with (M, 1) / (1, K) / (K,) operands: the row map, its operands
                # classified from their shapes (np.broadcast_to and _coalesce cost ~10 us a call)
                kargs, kinds = list(args), ["scalar"] * len(args)
                for i, kind, read in zip(self.arrays, *lean):
                    kargs[i], kinds[i] = read, kind
                return _run_map_kinds(self.kernel, tuple(kinds), kargs, o)
        ins = [np.broadcast_to(a, shape) for a in arrays]
        ins, o = _coalesce(ins, o)
        for i, a in zip(self.arrays, ins):
            args[i] = a
        if o.ndim == 2 and not self.nflags and _rows_and_columns(ins, o):
            # why: a stride-0 operand (x - x.max(axis=-1, keepdims=True), x * w) keeps the strided
            # loop from vectorizing; the row map reads it once per row or as one row
            return run_map(self.kernel, args, o)
        if o.ndim <= MAX_STRIDED_NDIM:
            return _launch(self, self.strided(o.ndim), args, o, tail, context)
        fn, lead = self.strided(MAX_STRIDED_NDIM), o.ndim - MAX_STRIDED_NDIM
        for idx in itertools.product(*(range(n) for n in o.shape[:lead])):
            sub = list(args)
            for i in self.arrays:
                sub[i] = args[i][idx]
            _launch(self, fn, sub, o[idx], tail, context)

    def contiguous(self, n: int):
        """The loop over ``n`` contiguous elements: blocks (fast twins) for long calls, stream where
        the call's bytes would not stay in the caches anyway (stream_min_bytes), else flat."""
        if self.element_bytes is not None and n * self.element_bytes >= stream_min_bytes():
            return self._stream_or_flat
        return self.blocks if self.blocks is not None and n > TWIN_BLOCKS_AFTER else self.flat

    def _stream_or_flat(self, *args):
        """stream, or flat into an output whose pages the OS has just given (pool.fresh: there an
        ordinary store is faster); ``args`` end with the output."""
        if not _pool.fresh(args[-1]):
            self.stream()(*args)
            return
        self.flat(*args)
        if self._stream is None:
            # why: the first long call into a fresh output also loads (or compiles) stream, on
            # empty views, so the next long call does not pay it (4-5 ms on a warm disk cache)
            self.stream()(*[a[:0] if isinstance(a, np.ndarray) else a for a in args])

    def stream_min(self):
        """The fewest elements a contiguous call takes the streaming loop for; None: never."""
        return None if self.element_bytes is None else -(-stream_min_bytes() // self.element_bytes)

    def stream(self):
        """``stream`` (stream.py), jitted on first use."""
        if self._stream is None:
            with self._lock:
                if self._stream is None:
                    self._stream = self.module._jit(self.module.stream)
        return self._stream

    def gather(self, args, out, context):
        """out = the kernel of args (its array 1-d, out's length), by table lookup."""
        try:
            with self._lock:
                table = self._tables.get(args)
        except numba_errors.NumbaError as exc:
            raise no_kernel(self.kernel, context, exc) from None
        index = args[self._tables.position].view(np.uint8 if self.table_bits == 8 else np.uint16)
        return _launch(self, functools.partial(_tables.gather, table), [index], out, (), context)


def _lean_map_operands(arrays, out):
    """(kinds, what the row map reads) of the arrays of a 2-d call whose output is C-contiguous
    (M, K), K >= 2, when each is such rows ("full", C-contiguous), one value per row ((M, 1):
    "row", read as its column) or one row for all ((1, K) or (K,), unit stride: "col") and one at
    least is not full: what _rows_and_columns accepts after broadcasting, found without it. None
    otherwise (the general route decides)."""
    M, K = out.shape
    if K < 2 or not out.flags.c_contiguous:
        return None
    kinds, reads = [], []
    for a in arrays:
        shape = a.shape
        if shape == (M, K) and a.flags.c_contiguous:
            kinds.append("full")
            reads.append(a)
        elif shape == (M, 1):
            kinds.append("row")
            reads.append(a[:, 0])
        elif (shape == (1, K) or shape == (K,)) and a.strides[-1] == a.itemsize:
            kinds.append("col")
            reads.append(a.reshape(K))
        else:
            return None
    return (kinds, reads) if any(k != "full" for k in kinds) else None


def _rows_and_columns(ins, out) -> bool:
    """Whether a 2-d call is C-contiguous rows and operands that are such rows, one value per row
    (stride 0 along the rows) or one row for all (stride 0 down the columns), with at least one
    broadcast: what run_map (below) runs as vector loops."""
    M, K = out.shape
    if not out.flags.c_contiguous or K < 2:
        return False
    kinds = [_map_kind(a, M, K) for a in ins]
    for a, kind in zip(ins, kinds):
        if (kind == "full" and not a.flags.c_contiguous) or (kind == "col" and a.strides[1] != a.itemsize):
            return False
    return any(kind != "full" for kind in kinds)


def _map_kind(a, M: int, K: int) -> str:
    """How the row map reads the 2-d (M, K) operand ``a``: "row" (one value per row: stride 0 along
    it), "col" (one row for all: stride 0 down the columns) or "full"."""
    if K > 1 and a.strides[1] == 0:
        return "row"
    if M > 1 and a.strides[0] == 0:
        return "col"
    return "full"


def _launch(compiled, fn, args, out, tail, context):
    try:
        split = _cpu_threads.split_for(out)
        if split is None:
            fn(*args, out, *tail)
        else:
            _cpu_threads.run_split(fn, args, out, tail, split)
    except numba_errors.NumbaError as exc:
        raise no_kernel(compiled.kernel, context, exc) from None


def no_kernel(kernel, context, exc):
    """A Numba compile failure as the clear TypeError users see (never a raw Numba traceback)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    why = next((ln for ln in lines if "TypingError:" in ln or "unsupported" in ln), lines[0] if lines else "")
    what = (f"policy {context.policy!r}, {context.op}: " if hasattr(context, "policy") else "") + \
        f"the CPU engine has no kernel for {kernel.label} on inputs {[p.dtype.name for p in kernel.params]}"
    return TypeError(f"{what} -> {kernel.out.name} ({why[:200]}). Print gpupromote.engines.cpu.engine.source(...) "
                     f"of the kernel for the generated code:\n{kernel.text}")


_kernels: dict = {}


def _last_level_cache_bytes() -> int:
    """The largest CPU cache's size in bytes (Linux sysfs); 32 MiB where it cannot be read."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = entry.read_text().strip().upper()
            sizes.append(int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[text[-1]] if text[-1] in "KMG"
                         else int(text))
        except (OSError, ValueError):
            continue
    return max(sizes, default=32 << 20)


# Streaming stores pay off where the call's bytes would leave the caches anyway: reads and writes
# together at least the largest cache. A shorter call's result is likely still cached when the
# next op reads it, and a streaming store would have sent it to memory.
_STREAM_MIN_BYTES = [None]


def stream_min_bytes() -> int:
    """The bytes (operands read and result written) from which a contiguous call of plain
    arithmetic streams its stores: GPUPROMOTE_STREAM_MIN_BYTES, else the largest cache's size."""
    if _STREAM_MIN_BYTES[0] is None:
        text = os.environ.get("GPUPROMOTE_STREAM_MIN_BYTES", "").strip()
        if not text:
            _STREAM_MIN_BYTES[0] = _last_level_cache_bytes()
        elif not text.isdigit():
            raise ValueError(f"GPUPROMOTE_STREAM_MIN_BYTES={text!r} is not a whole number of bytes >= 0: set it to the "
                             f"bytes (operands and result) from which a long call streams its stores, e.g. 33554432, "
                             f"or unset it for the largest CPU cache's size")
        else:
            _STREAM_MIN_BYTES[0] = int(text)
    return _STREAM_MIN_BYTES[0]


def kernel_for(kernel) -> _Compiled:
    """The compiled kernel of an ir.Kernel or a Plan (memory cache by the IR; compiled lazily per
    layout)."""
    kernel = as_kernel(kernel)
    k = _kernels.get(kernel)
    if k is None:
        with _load_lock:
            k = _kernels.get(kernel)
            if k is None:
                k = _kernels[kernel] = _Compiled(kernel)
    return k


def compile_stats() -> dict:
    """This process's CPU kernels and how Numba got their machine code: ``compiled`` (a disk-cache
    miss: compiled here) and ``loaded`` (read from the disk cache), counted per kernel entry point
    and signature."""
    stats = [k.compile_stats() for k in list(_kernels.values())]
    return {"kernels": len(stats), "compiled": sum(s["compiled"] for s in stats),
            "loaded": sum(s["loaded"] for s in stats)}


# ---------------------------------------------------------------------------------------------
# The row map: an elementwise kernel over (rows, K), its operands read per element, per row or per
# column. 2-d calls with such a broadcast operand run as it (_Compiled.__call__), and so does the last
# stage of a staged gp.fuse function (softmax's exp(x - max) / sum): as stride-0 2-d views those
# operands would keep the inner loop from vectorizing.

_KIND_INDEX = {"full": "[m, k]", "row": "[m]", "col": "[k]"}


def map_source(kernel: ir.Kernel, kinds: tuple, inplace: int | None = None) -> str:
    """The generated module of ``kernel`` as ``apply(operands, out, m0, m1)`` over the rows m0..m1
    of a 2-d ``out``; ``kinds[i]``: "full", "row", "col" or "scalar" for operand i. ``inplace``:
    the "full" operand that is ``out`` itself, stored through its own name (one array to LLVM,
    so the loop needs no overlap test, which it would fail, and stays vectorized)."""
    args = ", ".join(f"s{p.index}" if p.folded else f"x{p.index}" for p in kernel.params)
    # a "row" operand reaches the row's loop as its row's value (a scalar)
    row_args = ", ".join(f"s{p.index}" if p.folded else f"x{p.index}[m]" if kinds[p.index] == "row"
                         else f"x{p.index}" for p in kernel.params)

    plain_params, plain_store, round_trips = plain_conversions(kernel, ir.direct_store(kernel))

    def param(p):
        if p.folded:
            return f"s{p.index}"
        e = f"x{p.index}" if kinds[p.index] == "row" else f"x{p.index}{_KIND_INDEX[kinds[p.index]]}"
        if p in plain_params:
            return f"{PLAIN[p.dtype.code][0]}({e})"
        return f"{_NARROW[p.dtype.code][0]}({e})" if p.dtype.is_narrow_float else e
    names, lines, direct = _lower(kernel, param, "        ", round_trips)
    src = direct if direct is not None else kernel.value
    listing = "\n".join(f"    {line}" for line in kernel.text.splitlines())
    return "\n".join([
        f'"""gpupromote CPU row-map kernel (generator v{GENERATOR_VERSION}) of the IR:', listing,
        f"operand kinds: {list(kinds)}{'' if inplace is None else f', written in place of operand {inplace}'}",
        'Written by gpupromote.engines.cpu.kernels. Do not edit."""',
        "import numpy as np",
        "from gpupromote.engines.cpu.cache import cached_njit",
        *HELPER_IMPORTS,
        "",
        jit_line(MATH_INTERLEAVE if _tables.calls_math(kernel) else None),
        # why: the row's loop is a function of its own. Inside the loop over rows, LLVM's register
        # allocator reloaded a math function's constants on every vector iteration (exp(x - max)
        # rows: 2.95 -> 2.67 ms for 4096 x 1024 float32)
        "", "", "@_jit", f"def row({args}, out, m):", *vector_width_lines(kernel),
        "    for k in range(out.shape[1]):",
        *lines,
        f"        {'out' if inplace is None else f'x{inplace}'}[m, k] = "
        f"{_store_text(names[src], src.dtype, kernel.out, plain_store)}",
        "", "", "@_jit", f"def apply({args}, out, m0, m1):",
        "    for m in range(m0, m1):",
        f"        row({row_args}, out, m)",
    ]) + "\n"


_maps: dict = {}
_maps_lock = threading.Lock()


def run_map(kernel: ir.Kernel, args, out, inplace: int | None = None):
    """``kernel`` over ``args`` ((rows, K) views or folded scalars) into the 2-d ``out`` (its
    dtype's storage), over threads by rows. ``inplace``: the index of an operand that is ``out``
    itself (the same (rows, K) array: each element is read, then written, by one step)."""
    M, K = out.shape
    if inplace is not None and (args[inplace] is not out or kernel.params[inplace].dtype is not kernel.out):
        raise ValueError(f"run_map: operand {inplace} is not the output array of {kernel.label}")
    kinds, kargs = [], []
    for p, a in zip(kernel.params, args):
        if p.folded:
            kinds.append("scalar")
            kargs.append(a)
            continue
        view = storage_view(p.dtype)
        a = a if view is None else a.view(view)
        kind = _map_kind(a, M, K)
        kinds.append(kind)
        kargs.append(a[:, 0] if kind == "row" else a[0] if kind == "col" else a)
    return _run_map_kinds(kernel, tuple(kinds), kargs, out, inplace)


def _run_map_kinds(kernel: ir.Kernel, kinds: tuple, kargs, out, inplace: int | None = None):
    """run_map's work once each operand's kind is known: ``kargs`` as the row map reads them (full
    operands (M, K), row ones (M,), column ones (K,), in their storage dtype; folded scalars)."""
    M, K = out.shape
    key = (kernel, kinds, inplace)
    mod = _maps.get(key)
    if mod is None:
        with _maps_lock:
            mod = _maps.get(key)
            if mod is None:
                mod = _maps[key] = load_module(map_source(kernel, tuple(kinds), inplace))
    view = storage_view(kernel.out)
    o = out if view is None else out.view(view)
    if _program.active():   # (a staged call's recording; the check alone on small calls)
        _program.note(mod.apply, [*kargs, o, _program.ROW0, _program.ROW1], M, M * K, (len(kargs),))
    try:
        if M * K < 2 * _cpu_threads.MIN_CHUNK:   # one thread: no ranges to make (a small call, ~0.7 us)
            mod.apply(*kargs, o, 0, M)
            return out
        # split as the elementwise kernels split (threads.MIN_CHUNK elements a thread at least), by rows
        _cpu_threads.run_ranges(lambda m0, m1: mod.apply(*kargs, o, m0, m1), _cpu_threads.row_ranges(M, M * K))
    except numba_errors.NumbaError as exc:
        raise TypeError(f"the CPU engine has no row-map kernel for {kernel.label} "
                        f"({str(exc).splitlines()[0][:200]}):\n{kernel.text}") from None
    return out
