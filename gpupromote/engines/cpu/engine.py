"""The CPU backend: each ir.Kernel (one plan, or a fused chain) becomes a Numba loop kernel.

For a kernel the generator writes one small Python module (``source(kernel)`` shows it):

* ``flat(x0, s1, ..., out[, flags])``: one loop over 1-D operands of the output's length
  (same-shape contiguous inputs are raveled into it); LLVM vectorizes it;
* ``strided1`` .. ``strided4``: nested loops over broadcast / strided / reversed views (the
  dispatcher-side ``_coalesce`` first merges axes and orders them by the output's strides;
  more than 4 remaining axes loop over the leading ones in Python);
* ``buffered1`` .. ``buffered4``: the same layouts for kernels that call the math library:
  stretches of up to 1024 elements of the innermost axis copied into contiguous buffers, ``flat``
  on them (vectorised), and copied out (a fused exp(x - row max): 30.8 -> 5.6 ms for 4096 x 1024);
* ``native(data, n)``: the flat loop as a C function over raw pointers (a Numba cfunc), which the
  compiled dispatcher (dispatch/fastpath/) calls by its address.

Each is compiled on first use. Above a size a call is split over threads (``threads``; in C
for the native entry point); GPUPROMOTE_NUM_THREADS / ``set_num_threads`` say how many.

The loop body is the IR's DAG, one local per node: every input read in its own storage dtype -
float16, bfloat16 and float8 arrays as their uint16 / uint8 bit patterns, widened by the
``narrow`` helpers (F16C where the CPU has it) - cast as the IR says, each op's expression
(core/ops.py, the same text the CUDA generator reads) evaluated, and the value written once in the
output's dtype. Folded scalars are kernel parameters already in the type the IR gives them
(``folding.fold_scalar`` converted them). The generator never sees a plan or a policy.

Caches: in memory per ir.Kernel; on disk by Numba, which needs a real source file, so each
module is filed once as ``<cache>/numba-<tag>/_gpk_<hash of source>.py`` and Numba's compiled code
lies beside it. The tag (``_cache_tag()``) covers what else shapes the machine code: the helper
modules' sources, the package, Python, Numba, llvmlite, NumPy and ml_dtypes versions, and the
target CPU. ``<cache>`` is ``$GPUPROMOTE_CACHE_DIR``, else a folder per Python environment under
``$XDG_CACHE_HOME/gpupromote`` (``~/.cache/gpupromote``). Damaged files are dropped and
recompiled, read-only folders are read (engines/cpu/cache.py).

Modules (engines/cpu/): this one holds the backend object (``BACKEND``) and the fast path's
runners; the generator is ``source``, compiling, the memory cache and launching ``kernels``,
threads ``threads``, the output pool ``pool`` (warm-up is tools/warmup). The names users and
tools read (``source``, ``kernel_for``, ``set_num_threads``, ``alloc``...) are importable from here.
"""
from __future__ import annotations

import numpy as np
from numba.core import errors as numba_errors

from ...core import dtypes as D
# in the order the one-file module ran them: the cache tag, the helpers' overloads, the thread
# count (GPUPROMOTE_NUM_THREADS), the pool's cap (GPUPROMOTE_CPU_POOL_MB)
from .cache import CACHE_ROOT, KERNEL_DIR, WRITE_DIR, cache_tag
from . import elementwise as _numba_elementwise, helpers as _numba_math  # noqa: F401  (register the helpers' overloads)
from .source import TWIN_BLOCKS_AFTER, has_twins, kernel_key, source
from .kernels import compile_stats, kernel_for, no_kernel
from . import threads as _cpu_threads
from .threads import flat_call, get_num_threads, num_threads, set_num_threads
from .pool import POOL_MIN_BYTES, alloc

__all__ = ["BACKEND", "source", "kernel_for", "compile_stats", "kernel_key", "alloc", "CACHE_ROOT",
           "KERNEL_DIR", "WRITE_DIR", "get_num_threads", "set_num_threads", "num_threads"]


def _cache_tag() -> str:
    """The digest every cached kernel is filed under (engines/cpu/cache.py): the sources of the
    helper modules kernels import, the versions of gpupromote, Python, Numba, llvmlite, NumPy and
    ml_dtypes, and the target CPU. Kernels live in ``CACHE_ROOT / f"numba-{_cache_tag()}"``."""
    return cache_tag()


def _broadcast_pair(s, t):
    """The shape two shapes broadcast to, or None (np.broadcast_shapes without its Python layers:
    a few microseconds of a small call)."""
    if s == t:
        return s
    if len(s) < len(t):
        s, t = t, s
    out = list(s)
    pad = len(s) - len(t)
    for i, n in enumerate(t):
        m = s[pad + i]
        if n != m:
            if m == 1:
                out[pad + i] = n
            elif n != 1:
                return None
    return tuple(out)


def _nd_call(k, plan, a, b, v0, v1, vo, res_np):
    """Two arrays of one to many dimensions, beyond the 1-d same-shape case: one flat loop over
    raveled views when they are C-contiguous and of one shape; else (other shapes that broadcast,
    other layouts) the kernel's own call, as the general path makes it (eager._call_on: a plan
    with no folded operand, no checks and no canonical dtypes, which the fast path's plans are);
    None for the general path (0-d arrays, which fold; shapes that do not broadcast, which it
    reports)."""
    shape = a.shape
    if b.shape != shape or not shape or not (a.flags.c_contiguous and b.flags.c_contiguous):
        if not shape or not b.shape:
            return None
        shape = _broadcast_pair(shape, b.shape)
        if shape is None:
            return None
        out = alloc(shape, res_np)
        if 0 not in shape:
            # why: gp.subtract(x, x.max(axis=-1, keepdims=True)) of 1 x 1024 float32 took 27 us
            # through the general path, most of it its Python
            k((a, b), out, plan)
        return out
    out = alloc(shape, res_np)
    a, b, o = a.reshape(-1), b.reshape(-1), out.reshape(-1)
    flat_call(k.contiguous(o.shape[0]), (a if v0 is None else a.view(v0), b if v1 is None else b.view(v1)),
              o if vo is None else o.view(vo))
    return out


def _fast_runner(plan, converters):
    """A callable for dispatch's fast path: (args...) -> a new result array, or None when the
    call needs the general path (shapes differ, non-contiguous n-d arrays)."""
    # Every kernel call below sits in a try block (free in CPython 3.11 until it raises) so that
    # a compile failure reads as a TypeError, never as a Numba traceback.
    k = kernel_for(plan)
    res_np, vo = plan.result.numpy, k.out_view
    loop = k.contiguous   # n -> flat, or blocks for a long call of a kernel with fast twins
    small, np_empty = POOL_MIN_BYTES // res_np.itemsize, np.empty

    def empty(shape, dtype):   # 1-element calls must not pay for the pool's bookkeeping
        return np_empty(shape, dtype) if shape[0] < small else alloc(shape, dtype)
    if len(converters) == 2:
        (c0, c1), (v0, v1) = converters, k.views
        if c0 is None and c1 is None:
            if v0 is None and v1 is None and vo is None:
                def run(a, b):   # the common case, kept to the fewest Python operations
                    shape = a.shape
                    try:
                        if len(shape) == 1 and b.shape == shape:
                            out = np_empty(shape, res_np) if shape[0] < small else alloc(shape, res_np)
                            if shape[0] < 2 * _cpu_threads.MIN_CHUNK:
                                loop(shape[0])(a, b, out)
                            else:
                                flat_call(loop(shape[0]), (a, b), out)
                            return out
                        return _nd_call(k, plan, a, b, None, None, None, res_np)
                    except numba_errors.NumbaError as exc:
                        raise no_kernel(k.kernel, plan, exc) from None
                return run

            def run(a, b):
                shape = a.shape
                try:
                    if len(shape) == 1 and b.shape == shape:
                        out = empty(shape, res_np)
                        flat_call(loop(shape[0]), (a if v0 is None else a.view(v0), b if v1 is None else b.view(v1)),
                                  out if vo is None else out.view(vo))
                        return out
                    return _nd_call(k, plan, a, b, v0, v1, vo, res_np)
                except numba_errors.NumbaError as exc:
                    raise no_kernel(k.kernel, plan, exc) from None
            return run
        if c0 is None or c1 is None:
            arr_first = c0 is None
            conv, va = (c1, v0) if arr_first else (c0, v1)

            def run(a, b):
                x, s = (a, b) if arr_first else (b, a)
                if x.ndim != 1:
                    if x.ndim == 0 or not x.flags.c_contiguous:
                        return None
                    out = empty(x.shape, res_np)
                    x, o = x.reshape(-1), out.reshape(-1)
                else:
                    out = o = empty(x.shape, res_np)
                if va is not None:
                    x = x.view(va)
                if vo is not None:
                    o = o.view(vo)
                try:
                    kargs = (x, conv(s)) if arr_first else (conv(s), x)
                    if k.table_min is not None and o.shape[0] >= k.table_min:
                        k.gather(kargs, o, plan)   # a narrow operand through the math library: its table
                    else:
                        flat_call(loop(o.shape[0]), kargs, o)
                except numba_errors.NumbaError as exc:
                    raise no_kernel(k.kernel, plan, exc) from None
                return out
            return run
        return None

    def run(*args):
        shape = None
        kargs = []
        for x, conv in zip(args, converters):
            if conv is None:
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return None
                kargs.append(x)
            else:
                kargs.append(conv(x))
        if not shape or (len(shape) != 1 and not all(a.flags.c_contiguous for a, c in zip(kargs, converters)
                                                     if c is None)):
            return None   # no array, or 0-d ones (the fast key does not say the rank): the full path
        out = empty(shape, res_np)
        k(kargs, out, plan)
        return out
    return run


class _CpuBackend:
    name = "cpu"

    def empty(self, shape, dtype: D.DType):
        if dtype.numpy is None:
            raise TypeError(f"{dtype.name} has no numpy storage: no CPU array can hold it")
        return alloc(shape, dtype.numpy)

    def run(self, plan, args, out):
        kernel_for(plan)(args, out, plan)

    def run_kernel(self, kernel, args, out, flags=None, context=None):
        kernel_for(kernel)(args, out, context, flags)

    def copyto(self, dst, src):
        np.copyto(dst, src, casting="unsafe")

    def asarray(self, x):
        return np.asarray(x)

    fast_runner = staticmethod(_fast_runner)

    @staticmethod
    def native_kernel(plan):
        """The plan's kernel C entry point (a Numba CFunc: ``.address``), for the compiled
        dispatcher; None where it has none (kernels with checks). Compile failures are None too:
        the Python path then reports them as the TypeError users see."""
        try:
            return kernel_for(plan).native()
        except numba_errors.NumbaError:
            return None

    @staticmethod
    def native_max_n(plan):
        """The most elements the compiled dispatcher should run through ``native``; None: no limit.
        A tabulated kernel's longer calls are faster by table lookup on the Python path (tables.py),
        and plain arithmetic's calls too long for the caches by its streaming loop (kernels.stream_min)."""
        compiled = kernel_for(plan)
        first = compiled.table_min if compiled.table_min is not None else compiled.stream_min()
        if first is not None:
            return first - 1
        # a kernel with fast twins runs them in its blocks loop only (source._twin_lines): longer
        # calls take the Python path there
        return TWIN_NATIVE_MAX if has_twins(compiled.kernel) else None

    alloc = staticmethod(alloc)
    pool_min_bytes = POOL_MIN_BYTES


# the longest call the compiled dispatcher runs on a kernel with fast twins (native has none)
TWIN_NATIVE_MAX = TWIN_BLOCKS_AFTER

BACKEND = _CpuBackend()
# The thread count now, as when this engine was one module: a bad GPUPROMOTE_NUM_THREADS fails
# the first op, and the compiled dispatcher's pool (a sink of threads) learns the count.
get_num_threads()
