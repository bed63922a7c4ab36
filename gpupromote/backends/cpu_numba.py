"""The CPU backend: each ir.Kernel (one plan, or a fused chain) becomes a Numba loop kernel.

For a kernel the generator writes one small Python module (``source(kernel)`` shows it):

* ``flat(x0, s1, ..., out[, flags])``: one loop over 1-D operands of the output's length
  (same-shape contiguous inputs are raveled into it); LLVM vectorizes it;
* ``strided1`` .. ``strided4``: nested loops over broadcast / strided / reversed views (the
  dispatcher-side ``_coalesce`` first merges axes and orders them by the output's strides;
  more than 4 remaining axes loop over the leading ones in Python);
* ``native(data, n)``: the flat loop as a C function over raw pointers (a Numba cfunc), which the
  compiled dispatcher (gpupromote/_fastpath.c) calls by its address.

Each is compiled on first use. Above a size a call is split over threads (``_split``; in C for
the native entry point); GPUPROMOTE_NUM_THREADS / ``set_num_threads`` say how many.

The loop body is the IR's DAG, one local per node: every input read in its own storage dtype -
float16, bfloat16 and float8 arrays as their uint16 / uint8 bit patterns, widened by the
``_numba_math`` helpers (F16C where the CPU has it) - cast as the IR says, each op's expression
(ops.py, the same text the CUDA generator reads) evaluated, and the value written once in the
output's dtype. Folded scalars are kernel parameters already in the type the IR gives them
(``folding.fold_scalar`` converted them). The generator never sees a plan or a policy.

Caches: in memory per ir.Kernel; on disk by Numba, which needs a real source file, so each
module is filed once as ``<cache>/numba-<tag>/_gpk_<hash of source>.py`` and Numba's compiled code
lies beside it. The tag (``_cache_tag()``) covers what else shapes the machine code: the helper
modules' sources, the package, Python, Numba, llvmlite, NumPy and ml_dtypes versions, and the
target CPU. ``<cache>`` is ``$GPUPROMOTE_CACHE_DIR``, else a folder per Python environment under
``$XDG_CACHE_HOME/gpupromote`` (``~/.cache/gpupromote``). Damaged files are dropped and
recompiled, read-only folders are read (backends/_numba_cache.py).
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import sys
import threading
import types as _pytypes
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


from ._disk_cache import drop_damaged, warn_once, write_atomically  # noqa: E402
from ._numba_cache import CACHE_ROOT, KERNEL_DIR, READ_DIRS, WRITE_DIR, cache_tag, cached_cfunc, claim_dir  # noqa: E402
from numba import types as _nbtypes  # noqa: E402
from numba.core import errors as numba_errors  # noqa: E402

from .. import dtypes as D  # noqa: E402
from .. import ir  # noqa: E402
from . import _numba_elementwise, _numba_math  # noqa: E402,F401  (register the helpers' overloads)

__all__ = ["BACKEND", "source", "kernel_for", "warmup", "common_plans", "CACHE_ROOT", "KERNEL_DIR",
           "get_num_threads", "set_num_threads", "num_threads"]

GENERATOR_VERSION = 4   # part of every generated source: bump it to regenerate all kernels


def _cache_tag() -> str:
    """The digest every cached kernel is filed under (backends/_numba_cache.py): the sources of the
    helper modules kernels import, the versions of gpupromote, Python, Numba, llvmlite, NumPy and
    ml_dtypes, and the target CPU. Kernels live in ``CACHE_ROOT / f"numba-{_cache_tag()}"``."""
    return cache_tag()


# narrow dtype code -> (widen storage bits to float32, round a float32 / float64 to bits, storage uint)
_NARROW = {
    "f2": ("f16_to_f32", "f32_to_f16", "f64_to_f16", np.uint16),
    "bf": ("bf16_to_f32", "f32_to_bf16", "f64_to_bf16", np.uint16),
    "e4": ("e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3", np.uint8),
    "e5": ("e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2", np.uint8),
}
_REAL_PART = {"c8": D.float32, "c16": D.float64}
# native(data, n): void(char **data, int64 n) in C (gpupromote/_fastpath.c)
_NATIVE_SIGNATURE = _nbtypes.void(_nbtypes.CPointer(_nbtypes.voidptr), _nbtypes.int64)
_MAX_STRIDED_NDIM = 4


# ---------------------------------------------------------------------------------------------
# Source generation: an ir.Kernel becomes a small Python module of njit loops. Values live in
# Numba scalars of their carrier type (float32 for narrow floats); every node is one local.

def _np(d: D.DType) -> str:
    return f"np.{d.numpy.type.__name__}"


def _no_cpu_storage(d: D.DType):
    return TypeError(f"{d.name} has no numpy storage, so the CPU engine has no kernel for it: cast to "
                     f"{'complex64' if d.kind == 'c' else 'float32'} first, or run on a CUDA device")


def _cast(expr: str, src: D.DType, dst: D.DType) -> str:
    """Source converting ``expr`` (a value of ``src`` in its carrier type) to ``dst`` (its carrier
    type), as NumPy / ml_dtypes astype converts."""
    if src is dst:
        return expr
    if src.numpy is None or dst.numpy is None:
        raise _no_cpu_storage(src if src.numpy is None else dst)
    if dst.kind == "b":
        return f"gp_truth({expr})"
    if dst.is_narrow_float:
        widen, from_f32, from_f64, _ = _NARROW[dst.code]
        return f"{widen}({_round_to_narrow(expr, src, from_f32, from_f64)})"
    if src.is_narrow_float and dst is D.float32:
        return expr   # the carrier already is float32
    if src.kind == "c" and dst.kind != "c":
        expr, src = f"({expr}).real", _REAL_PART[src.code]
    return f"{_np(dst)}({expr})"


def _round_to_narrow(expr: str, src: D.DType, from_f32: str, from_f64: str) -> str:
    """The narrow bit pattern nearest ``expr``: one rounding from float32 or float64 (ints and
    bools through float64, where they are exact up to 2**53)."""
    if src.kind == "c":
        expr, src = f"({expr}).real", _REAL_PART[src.code]
    if src.is_narrow_float or src is D.float32:
        return f"{from_f32}({expr})"
    if src is D.float64:
        return f"{from_f64}({expr})"
    return f"{from_f64}(np.float64({expr}))"


def _apply(node, args) -> str:
    expr = node.expr
    for k in reversed(range(len(args))):   # why: in1 before in10 never matters with <= 3 operands, but be safe
        expr = expr.replace(f"in{k}", args[k])
    d = node.dtype
    return f"bool({expr})" if d.kind == "b" else f"{_np(d)}({expr})"


def _const(node) -> str:
    d = node.dtype
    if d.kind == "b":
        return "True" if node.value else "False"
    return f"{_np(d)}({node.value!r})"


def _param_names(kernel):
    return [f"s{p.index}" if p.folded else f"x{p.index}" for p in kernel.params]


def _body(kernel, index: str, indent: str) -> list[str]:
    """One element: every step of the DAG once, the store and the checks."""
    def param(p):
        if p.folded:
            return f"s{p.index}"
        elem = f"x{p.index}[{index}]"
        return f"{_NARROW[p.dtype.code][0]}({elem})" if p.dtype.is_narrow_float else elem

    names, steps, direct = ir.lower(kernel, param, _cast, _apply, _const)
    lines = [f"{indent}{name} = {value}" for name, _, value in steps]
    out = kernel.out
    if out.numpy is None:
        raise _no_cpu_storage(out)
    if out.is_narrow_float:
        _, from_f32, from_f64, _ = _NARROW[out.code]
        src = direct if direct is not None else kernel.value
        stored = _round_to_narrow(names[src], src.dtype, from_f32, from_f64)
    else:
        stored = names[kernel.value]
    lines.append(f"{indent}out[{index}] = {stored}")
    for k, check in enumerate(kernel.checks):
        lines.append(f"{indent}if {names[check.cond]}:")
        lines.append(f"{indent}    flags[{k}] = 1")
    return lines


def source(kernel) -> str:
    """The generated Python/Numba source of an ir.Kernel (or of a Plan's one-node kernel): print
    it to read or debug a kernel."""
    kernel = _as_kernel(kernel)
    params = ", ".join(_param_names(kernel) + ["out"] + (["flags"] if kernel.checks else []))
    listing = "\n".join(f"    {line}" for line in kernel.text.splitlines())
    lines = [
        f'"""gpupromote CPU kernel (generator v{GENERATOR_VERSION}) of the IR:',
        listing,
        'Written once by gpupromote.backends.cpu_numba and imported from here so that Numba can cache',
        'the compiled code on disk. Do not edit."""',
        "import numpy as np",
        "from numba import carray",
        "from gpupromote.backends._numba_cache import cached_njit",
        "from gpupromote.backends._numba_math import *  # noqa: F401,F403",
        "from gpupromote.backends._numba_elementwise import *  # noqa: F401,F403",
        "",
        "# error_model='numpy': float x / 0 is inf or nan, never a ZeroDivisionError. Cached in the",
        "# tag folder beside this file, where a damaged cache file is dropped, not fatal.",
        "_jit = cached_njit(nogil=True, error_model='numpy', boundscheck=False)",
        "",
        "",
        "@_jit",
        f"def flat({params}):",
        "    for i in range(out.shape[0]):",
        *_body(kernel, "i", "        "),
    ]
    for nd in range(1, _MAX_STRIDED_NDIM + 1):
        idx = ", ".join(f"i{d}" for d in range(nd))
        # Not decorated here: _Compiled.strided() jits it on first use (a cheaper module import).
        lines += ["", "", f"def strided{nd}({params}):"]
        for d in range(nd):
            lines.append(f"{'    ' * (d + 1)}for i{d} in range(out.shape[{d}]):")
        lines += _body(kernel, idx, "    " * (nd + 1))
    if not kernel.checks:
        lines += _native_lines(kernel)
    return "\n".join(lines) + "\n"


def _storage_np(d: D.DType) -> str:
    """The numpy type an array of ``d`` is read and written as (narrow floats: their bits)."""
    return f"np.{_NARROW[d.code][3].__name__}" if d.is_narrow_float else _np(d)


def _native_lines(kernel) -> list[str]:
    """``native(data, n)``: the kernel's C entry point (a Numba cfunc, compiled by
    _Compiled.native), which the compiled dispatcher (gpupromote/_fastpath.c) calls with raw
    pointers and no Python object in between: ``data[k]`` is the address of element 0 of
    parameter k (of its value, in its carrier type, for a folded scalar), ``data[len(params)]``
    that of the output; every array is contiguous; ``n`` >= 1 elements."""
    # Note: contiguous arrays only: a second, strided loop doubled the compile time (~190 ms
    # instead of ~100); strided and broadcast layouts take the Python path and its strided kernels.
    params = kernel.params
    nout = len(params)
    lines = ["", "", "def native(data, n):"]
    for p in params:
        if p.folded:
            carrier = "np.float32" if p.dtype.is_narrow_float else _np(p.dtype)
            lines.append(f"    s{p.index} = carray(data[{p.index}], (1,), {carrier})[0]")
        else:
            lines.append(f"    x{p.index} = carray(data[{p.index}], (n,), {_storage_np(p.dtype)})")
    lines.append(f"    out = carray(data[{nout}], (n,), {_storage_np(kernel.out)})")
    lines.append("    for i in range(n):")
    lines += _body(kernel, "i", "        ")
    return lines


def _as_kernel(k) -> ir.Kernel:
    """An ir.Kernel, or the one-node kernel of a Plan."""
    return k if isinstance(k, ir.Kernel) else ir.from_plan(k)


def kernel_key(plan):
    """What the generated code depends on: the IR kernel (equal for plans of different policies
    that compute the same thing: numpy's and torch's float32 add are one)."""
    return _as_kernel(plan)


def _load_module(src: str):
    """The module for ``src``, executed from the in-memory text and filed as
    ``<kernel dir>/_gpk_<hash>.py``, the file Numba's disk cache is keyed on (written once,
    atomically; a copy that differs from ``src`` is damaged and is written again)."""
    name = "_gpk_" + hashlib.sha1(src.encode()).hexdigest()[:24]
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    path = _module_file(name, src)
    claim_dir(path.parent)
    mod = _pytypes.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod
    try:
        # why: compiled from `src`, not read back: a damaged file can never become the code that runs
        exec(compile(src, str(path), "exec"), mod.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _module_file(name: str, src: str) -> Path:
    """Where the kernel module ``name`` lives: the first folder of READ_DIRS holding an intact copy;
    else it is written (again) to WRITE_DIR."""
    for folder in READ_DIRS:
        path = folder / f"{name}.py"
        try:
            with open(path, encoding="utf-8") as f:
                on_disk = f.read()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            drop_damaged(path, exc)
            continue
        if on_disk == src:
            return path
        drop_damaged(path, f"{len(on_disk)} characters where the generated module has {len(src)}, "
                           "or other text")
    path = WRITE_DIR / f"{name}.py"
    if WRITE_DIR != KERNEL_DIR:
        warn_once(("unwritable", str(KERNEL_DIR)),
                  f"gpupromote: the kernel cache {KERNEL_DIR} cannot be written; it is read, and new kernels "
                  f"are cached in {WRITE_DIR}")
    # a concurrent writer writes the same text, and the rename is atomic: any winner is right
    if not write_atomically(path, src):
        raise OSError(f"gpupromote: cannot write the kernel module {path}")
    return path


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
        self.module = _load_module(self.source)
        self.flat = self.module.flat
        self._strided = {}
        self.arrays = kernel.arrays
        self.views = [None if p.folded else _storage_view(p.dtype) for p in kernel.params]
        self.out_view = _storage_view(kernel.out)
        self.nflags = len(kernel.checks)
        self._native = None

    def strided(self, ndim):
        fn = self._strided.get(ndim)
        if fn is None:
            fn = self._strided[ndim] = self.module._jit(getattr(self.module, f"strided{ndim}"))
        return fn

    def native(self):
        """The kernel's C entry point ``native(data, n)`` (see _native_lines), compiled
        (or loaded from the disk cache) on first use: a Numba CFunc whose ``address`` the
        compiled dispatcher calls. None for kernels with checks (their flags need the Python
        path)."""
        if self._native is None and not self.nflags:
            self._native = cached_cfunc(_NATIVE_SIGNATURE, error_model="numpy", boundscheck=False)(self.module.native)
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
                return _launch(self, self.flat, args, o, tail, context)
            if all(a.flags.c_contiguous for a in arrays) and o.flags.c_contiguous:
                for i in self.arrays:
                    args[i] = args[i].reshape(-1)
                return _launch(self, self.flat, args, o.reshape(-1), tail, context)
        if o.size == 1:   # why: also (1, 1) from broadcast operands, which _coalesce would make 0-d
            for i in self.arrays:
                args[i] = args[i].reshape(1)
            return _launch(self, self.flat, args, o.reshape(1), tail, context)
        ins = [np.broadcast_to(a, shape) for a in arrays]
        ins, o = _coalesce(ins, o)
        for i, a in zip(self.arrays, ins):
            args[i] = a
        if o.ndim <= _MAX_STRIDED_NDIM:
            return _launch(self, self.strided(o.ndim), args, o, tail, context)
        fn, lead = self.strided(_MAX_STRIDED_NDIM), o.ndim - _MAX_STRIDED_NDIM
        for idx in itertools.product(*(range(n) for n in o.shape[:lead])):
            sub = list(args)
            for i in self.arrays:
                sub[i] = args[i][idx]
            _launch(self, fn, sub, o[idx], tail, context)


def _storage_view(d: D.DType):
    narrow = _NARROW.get(d.code)
    return None if narrow is None else np.dtype(narrow[3])


def _launch(compiled, fn, args, out, tail, context):
    try:
        split = _split(out)
        if split is None:
            fn(*args, out, *tail)
        else:
            _run_split(fn, args, out, tail, split)
    except numba_errors.NumbaError as exc:
        raise _no_kernel(compiled.kernel, context, exc) from None


# ---------------------------------------------------------------------------------------------
# Threads
#
# Above a size a kernel call is split into one chunk per thread, run at once: the kernels are
# nogil, and each element depends on its own inputs only, so the result is the one-thread result
# bit for bit, whatever the split (tests/test_threads.py). The compiled dispatcher splits the flat
# index range in C (_fastpath.c, a pthread pool); the Python path splits the largest axis of the
# kernel's (coalesced) output over a ThreadPoolExecutor. GPUPROMOTE_NUM_THREADS sets how many
# threads (default: the cores Numba sees, NUMBA_NUM_THREADS); set_num_threads changes it.

_MIN_CHUNK = 1 << 16   # elements per thread at least: below it, waking a thread costs what it saves


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


_threads = [_threads_from_environment()]


def _tell_native():
    try:
        from .. import _fastpath
    except ImportError:
        return
    if hasattr(_fastpath, "set_threads"):
        _fastpath.set_threads(_threads[0], _MIN_CHUNK)


def get_num_threads() -> int:
    """How many threads a CPU kernel call may use (GPUPROMOTE_NUM_THREADS, set_num_threads)."""
    return _threads[0]


def set_num_threads(n: int) -> int:
    """Let CPU kernel calls use ``n`` threads (>= 1) from now on, in every thread of the process;
    returns the previous number. Results do not depend on it."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads({n!r}): pass a whole number of threads >= 1")
    previous, _threads[0] = _threads[0], n
    _tell_native()
    return previous


@contextlib.contextmanager
def num_threads(n: int):
    """``with num_threads(1): ...``: the number of threads for a block (process-wide while it runs)."""
    previous = set_num_threads(n)
    try:
        yield n
    finally:
        set_num_threads(previous)


_tell_native()
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


def _split(out):
    """(axis, [(lo, hi), ...]): the chunks a kernel call into ``out`` runs as, one per thread,
    along out's longest axis; None for one thread."""
    threads, size = _threads[0], out.size
    if threads < 2 or size < 2 * _MIN_CHUNK:
        return None
    axis = max(range(out.ndim), key=out.shape.__getitem__)
    n = out.shape[axis]
    parts = min(threads, size // _MIN_CHUNK, n)
    if parts < 2:
        return None
    step = -(-n // parts)
    return axis, [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _run_split(fn, args, out, tail, split):
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


def _flat_call(flat, args, out):
    """flat(*args, out) on 1-d arrays of out's length and scalars, over threads when it is long."""
    split = None if out.shape[0] < 2 * _MIN_CHUNK else _split(out)
    if split is None:
        flat(*args, out)
    else:
        _run_split(flat, args, out, (), split)


def _no_kernel(kernel, context, exc):
    """A Numba compile failure as the clear TypeError users see (never a raw Numba traceback)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    why = next((ln for ln in lines if "TypingError:" in ln or "unsupported" in ln), lines[0] if lines else "")
    what = (f"policy {context.policy!r}, {context.op}: " if hasattr(context, "policy") else "") + \
        f"the CPU engine has no kernel for {kernel.label} on inputs {[p.dtype.name for p in kernel.params]}"
    return TypeError(f"{what} -> {kernel.out.name} ({why[:200]}). Print gp.backends.cpu_numba.source(...) "
                     f"of the kernel for the generated code:\n{kernel.text}")


_kernels: dict = {}


def kernel_for(kernel) -> _Compiled:
    """The compiled kernel of an ir.Kernel or a Plan (memory cache by the IR; compiled lazily per
    layout)."""
    kernel = _as_kernel(kernel)
    k = _kernels.get(kernel)
    if k is None:
        k = _kernels[kernel] = _Compiled(kernel)
    return k


# ---------------------------------------------------------------------------------------------
# Output buffers
#
# A fresh output of 10**7 float64 costs as much as the arithmetic: the kernel (the OS) zeroes
# every new page on first touch. Large outputs therefore come from a small pool of buffers that
# earlier results gave back when they died, the way CuPy's memory pool works on the GPU. A
# buffer goes back only when nothing else refers to it: any view of a result keeps the result's
# base buffer referenced, so a view never sees its memory reused. GPUPROMOTE_CPU_POOL_MB sets
# the most memory kept (default 256; 0 turns the pool off).

_POOL_MIN_BYTES = 1 << 22          # 4 MiB: below it, np.empty is cheap (and NumPy caches)


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


def alloc(shape, dtype):
    """A new (uninitialized) output array; large ones reuse a pooled buffer."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < _POOL_MIN_BYTES or not _POOL_CAP:
        return np.empty(shape, dtype)
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
    out = raw.view(dtype).reshape(shape)
    weakref.finalize(out, _give_back, raw)
    return out


def _nd_same_shape(flat, a, b, v0, v1, vo, res_np):
    """Same-shape C-contiguous n-d arrays: one flat loop over raveled views (else None)."""
    shape = a.shape
    if b.shape != shape or not shape or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    out = alloc(shape, res_np)
    a, b, o = a.reshape(-1), b.reshape(-1), out.reshape(-1)
    _flat_call(flat, (a if v0 is None else a.view(v0), b if v1 is None else b.view(v1)), o if vo is None else o.view(vo))
    return out


def _fast_runner(plan, converters):
    """A callable for dispatch's fast path: (args...) -> a new result array, or None when the
    call needs the general path (shapes differ, non-contiguous n-d arrays)."""
    # Every kernel call below sits in a try block (free in CPython 3.11 until it raises) so that
    # a compile failure reads as a TypeError, never as a Numba traceback.
    k = kernel_for(plan)
    flat, res_np, vo = k.flat, plan.result.numpy, k.out_view
    small, np_empty = _POOL_MIN_BYTES // res_np.itemsize, np.empty

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
                            if shape[0] < 2 * _MIN_CHUNK:
                                flat(a, b, out)
                            else:
                                _flat_call(flat, (a, b), out)
                            return out
                        return _nd_same_shape(flat, a, b, None, None, None, res_np)
                    except numba_errors.NumbaError as exc:
                        raise _no_kernel(k.kernel, plan, exc) from None
                return run

            def run(a, b):
                shape = a.shape
                try:
                    if len(shape) == 1 and b.shape == shape:
                        out = empty(shape, res_np)
                        _flat_call(flat, (a if v0 is None else a.view(v0), b if v1 is None else b.view(v1)),
                                   out if vo is None else out.view(vo))
                        return out
                    return _nd_same_shape(flat, a, b, v0, v1, vo, res_np)
                except numba_errors.NumbaError as exc:
                    raise _no_kernel(k.kernel, plan, exc) from None
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
                    _flat_call(flat, (x, conv(s)) if arr_first else (conv(s), x), o)
                except numba_errors.NumbaError as exc:
                    raise _no_kernel(k.kernel, plan, exc) from None
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

    alloc = staticmethod(alloc)
    pool_min_bytes = _POOL_MIN_BYTES


BACKEND = _CpuBackend()


# ---------------------------------------------------------------------------------------------
# Warm-up: compile a policy's common kernels ahead of time

_WARM_OPS = ("add", "subtract", "multiply", "true_divide", "maximum", "minimum", "equal", "less", "where")
_WARM_DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_WARM_PAIRS = (("int8", "float32"), ("int32", "float32"), ("int64", "float64"), ("float16", "float32"),
               ("bfloat16", "float32"), ("int32", "int64"), ("uint8", "int32"), ("float32", "float64"))


def common_plans(policy: str):
    """The plans ``warmup`` compiles: same-dtype pairs, common mixed pairs (both orders) and
    array-with-Python-scalar forms of the main ops; plans the policy refuses are skipped."""
    from ..api import spec
    from ..resolve import resolve
    from ..api import describe
    pairs = [(d, d) for d in _WARM_DTYPES] + list(_WARM_PAIRS) + [(b, a) for a, b in _WARM_PAIRS]
    seen, plans = set(), []
    for op in _WARM_OPS:
        combos = []
        for a, b in pairs:
            combos.append((spec(a), spec(b)))
        for d in _WARM_DTYPES:
            combos += [(spec(d), 2), (spec(d), 2.5)]
        for combo in combos:
            args = (spec("bool"), *combo) if op == "where" else combo
            try:
                plan = resolve(policy, op, [describe(x) for x in args])
            except (TypeError, ValueError, OverflowError):
                continue
            if kernel_key(plan) in seen or any(d.numpy is None for d in (*plan.inputs, plan.result)):
                continue
            seen.add(kernel_key(plan))
            plans.append(plan)
    return plans


def warmup(policy: str, progress=None, plans=None) -> int:
    """Compile (or load from the disk cache) the flat kernels of ``plans`` (default:
    ``common_plans(policy)``). ``progress(done, total, plan)`` is called after each one.
    Returns the number of kernels."""
    plans = common_plans(policy) if plans is None else plans
    for n, plan in enumerate(plans, 1):
        k = kernel_for(plan)
        args = []
        for d, f in zip(plan.inputs, plan.folded):
            target = D.bool_ if plan.op == "where" and not args else plan.compute
            args.append(target.numpy.type(1) if f else np.ones(4, d.numpy))
        out = np.empty(4, plan.result.numpy)
        k(args, out)
        if progress is not None:
            progress(n, len(plans), plan)
    return len(plans)


def _cmd_warmup(args) -> int:
    """``python -m gpupromote warmup --policy P``: compile with a progress bar."""
    import time

    from ..policies import get_policy
    get_policy(args.policy)   # an unknown policy is an error, not "0 kernels ready"
    width, start = 30, time.perf_counter()

    def bar(done, total, plan):
        filled = width * done // total
        label = f"{plan.op}({', '.join(d.name for d in plan.inputs)}) -> {plan.result.name}"
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:50]:<50}")
        sys.stderr.flush()

    n = warmup(args.policy, progress=bar)
    sys.stderr.write("\n")
    print(f"{n} kernels ready for policy {args.policy!r} in {time.perf_counter() - start:.1f} s "
          f"(cache: {WRITE_DIR})")
    return 0
