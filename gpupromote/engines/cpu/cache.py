"""Numba's disk cache for the CPU engine: what its key covers, where it lives, and what a damaged
or read-only file does.

Numba keys a cached function on its own source file only. A generated kernel module calls helpers
that are compiled into its machine code (the ``_numba_*`` helper modules: ``_numba_narrow.py``,
``_numba_binary.py``, the overloads in ``_numba_elementwise.py``...), so a change to a helper would
leave the old machine code in a warm cache. Hence one folder per
*tag*, ``<cache root>/numba-<tag>/``, where the tag (``cache_tag()``) is a digest of everything that
shapes the machine code besides the kernel's own source:

* the source text of every module whose code is compiled into the kernels (``KERNEL_MODULES``);
* the versions of gpupromote, Python, Numba, llvmlite, NumPy and ml_dtypes;
* the target CPU's name and features, as Numba sees them (``NUMBA_CPU_NAME`` / ``_FEATURES``).

A stale entry can never be found: a different tag is a different folder. The folder holds the
generated ``_gpk_<hash of source>.py`` modules and, beside them, Numba's index (``.nbi``) and data
(``.nbc``) files, for the kernels and for the helpers' own njit functions alike (``_Locator``).

Faults (``_CheckedCache``, installed on each of our dispatchers in place of Numba's cache):

* a damaged or unreadable index or data file is dropped with one ``CacheWarning`` naming it, and the
  function is compiled again (and cached again where the folder is writable);
* a read-only folder is read (a complete read-only cache compiles nothing); what must be compiled
  is cached in ``fallback_dir`` (the per-user cache, else ``<tmp>/gpupromote-<uid>``), which later
  processes read too.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.util
import inspect
import itertools
import os
import pickle
import secrets
import sys
from pathlib import Path

import llvmlite.binding as _llvm
import numpy as np
from numba import njit
from numba.core import config
from numba.core.compiler_lock import global_compiler_lock
from numba.core.bytecode import FunctionIdentity
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator
from numba.core.caching import CacheImpl as _NumbaCacheImpl

from ...kernel import math as _kernel_math
from ..disk_cache import default_root, drop_damaged, fallback_dir, package_version, warn_once, writable

__all__ = ["HELPER_MODULES", "KERNEL_MODULES", "cache_tag", "CACHE_ROOT", "KERNEL_DIR", "WRITE_DIR", "READ_DIRS",
           "claim_dir", "checked", "cached_njit", "memory_njit", "cached_cfunc", "MATH_INTERLEAVE",
           "WIDER_INTERLEAVE", "WIDER_INTERLEAVE_FUNCTIONS", "LEAN_INTERLEAVE",
           "interleaving"]

# Modules whose code ends up in a kernel's machine code (imported by the generated sources, or
# inlined through them), and the rest of the CPU engine (engine, the generator, the compiling and
# launching, threads, pool), covered as a whole: every module of engines/cpu/. Add a module here when
# generated kernels start importing from it.
HELPER_MODULES = ("gpupromote.engines.cpu.intrinsics", "gpupromote.engines.cpu.narrow",
                  "gpupromote.engines.cpu.binary",
                  "gpupromote.engines.cpu.owned_math", "gpupromote.engines.cpu.inline_math",
                  "gpupromote.engines.cpu.unary", "gpupromote.engines.cpu.casts",
                  "gpupromote.engines.cpu.tables")
# The owned math functions the helpers call (every module of kernel/math, and the table of which
# helper calls which): their description is compiled into the kernels.
MATH_MODULES = tuple(f"gpupromote.kernel.math.{p.stem}" for p in sorted(Path(_kernel_math.__file__).parent.glob("*.py"))
                     if p.stem != "__init__") + ("gpupromote.kernel.unary",)
KERNEL_MODULES = ("gpupromote.engines.cpu.helpers", *HELPER_MODULES, "gpupromote.engines.cpu.elementwise",
                  "gpupromote.engines.cpu.engine", "gpupromote.engines.cpu.source",
                  "gpupromote.engines.cpu.kernels", "gpupromote.engines.cpu.modules", "gpupromote.engines.cpu.threads",
                  "gpupromote.engines.cpu.pool", "gpupromote.engines.cpu.cache", "gpupromote.engines.cpu.reduce",
                  "gpupromote.engines.cpu.reduce_columns", "gpupromote.engines.cpu.reduce_tree",
                  "gpupromote.engines.cpu.program", "gpupromote.engines.cpu.plain", "gpupromote.engines.cpu.stream",
                  *MATH_MODULES)


def _module_source(name: str) -> bytes:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return f"<no source for {name}>".encode()
    with open(spec.origin, "rb") as f:
        return f.read()


def _target_cpu() -> tuple[str, str]:
    """The CPU name and features Numba compiles for (its codegen's choice: the environment's
    NUMBA_CPU_NAME / NUMBA_CPU_FEATURES, else the host's)."""
    import llvmlite.binding as llvm
    name = config.CPU_NAME or llvm.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else llvm.get_host_cpu_features().flatten()
    return name, features


def cache_tag(modules=KERNEL_MODULES) -> str:
    """A digest of everything but a kernel's own source that determines its machine code: the
    sources of ``modules``, the versions of gpupromote, Python, Numba, llvmlite, NumPy and
    ml_dtypes, and the target CPU. Kernels cached under one tag are never read under another."""
    import llvmlite
    import ml_dtypes
    import numba
    h = hashlib.sha256()
    parts = [package_version(), sys.implementation.cache_tag or sys.version, numba.__version__,
             llvmlite.__version__, np.__version__, ml_dtypes.__version__, *_target_cpu()]
    for part in parts:
        h.update(str(part).encode() + b"\0")
    for name in modules:
        h.update(name.encode() + b"\0" + _module_source(name) + b"\0")
    return h.hexdigest()[:20]


# Note: Numba's function ids count from 1 in every process, and the id is part of each compiled
# function's symbol (an ABI tag ``v<id>``). Two processes that compile two helpers of one qualname
# with different closures (owned_math's narrow-rounding lambdas for cos and for tan, say) give them
# the same symbol; a third process that loads both kernels from the disk cache links both calls to
# whichever body it loaded first, and tan(bfloat16) returns cosines (numba/numba#10486; found on an
# H100 after 15 worker processes filled a cold cache; tests/engines/test_cache_processes.py makes two
# processes that compile the same steps before cos and tan give them one id).
# Ids here start at a random 96-bit offset per process, so symbols never repeat across processes.
FunctionIdentity._unique_ids = itertools.count(secrets.randbits(96) + 1)

CACHE_ROOT = default_root()
TAG = cache_tag()
KERNEL_DIR = CACHE_ROOT / f"numba-{TAG}"
if writable(KERNEL_DIR):
    WRITE_DIR = KERNEL_DIR
    READ_DIRS = (KERNEL_DIR,)
else:
    # Note: read what is there (a prepared read-only cache compiles nothing); what has to be
    # compiled goes to one stable writable folder that later processes read as well.
    WRITE_DIR = fallback_dir(f"numba-{TAG}")
    READ_DIRS = (KERNEL_DIR, WRITE_DIR) if KERNEL_DIR.is_dir() else (WRITE_DIR,)


# ---------------------------------------------------------------------------------------------
# Where Numba keeps the compiled code of our functions

# directory of a kernel module, or path of a helper module -> the folders its cache is read from
# (in order) and the one it is written to
_CLAIMS: dict = {}


def claim_dir(source_dir: Path) -> None:
    """Let the Numba cache of every module in ``source_dir`` live beside it (kernel folders)."""
    read = (source_dir,) if source_dir == WRITE_DIR else (source_dir, WRITE_DIR)
    _CLAIMS[os.path.abspath(source_dir)] = (read, WRITE_DIR)


def _claim(py_file: str):
    path = os.path.abspath(py_file)
    return _CLAIMS.get(path) or _CLAIMS.get(os.path.dirname(path))


class _Locator(_CacheLocator):
    """Numba's cache locator for gpupromote's own files: the tag folder(s), read-only or not
    (Numba's locators skip a folder they cannot write, and then cannot read it either)."""

    def __init__(self, py_func, py_file, claim):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self.read_dirs, self.write_dir = claim

    def ensure_cache_path(self):
        os.makedirs(self.write_dir, exist_ok=True)

    def get_cache_path(self):
        return str(self.write_dir)

    def get_source_stamp(self):
        return self.source_stamp(self._py_file)

    @staticmethod
    def source_stamp(py_file):
        # why: the content, not the mtime: a copied or restored cache stays valid, an edited file does not
        with open(py_file, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        claim = _claim(py_file)
        return None if claim is None else cls(py_func, py_file, claim)


# Numba builds a cache for every `njit(cache=True)` function when it is decorated; the generated
# modules decorate theirs on import, so the locator must be known to Numba itself (it claims only
# the files above and leaves every other function to Numba's own locators).
if _Locator not in _NumbaCacheImpl._locator_classes:
    _NumbaCacheImpl._locator_classes.insert(0, _Locator)


class _Impl(CompileResultCacheImpl):
    _locator_classes = [_Locator]


@contextlib.contextmanager
def _locked(path: str):
    """An exclusive lock on ``path`` (created if missing) across processes; a no-op where the
    platform or the folder offers none (a lost index update only costs a later compile)."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # closing releases the lock


class _SharedCacheFile(IndexDataCacheFile):
    """Numba's index (.nbi) and data (.nbc) files, safe when several processes save at once.

    Numba names a new data file by the first number its index does not use yet, so two processes
    that compile two signatures of one function at once both write ``<base>.1.nbc``, and the index
    that survives can name the other signature's machine code: a later process then runs it on the
    wrong types. (Found on an H100: 15 CPU-reference workers filled a cold cache, and the next run
    read wrong float16 exp, log, sin, ... from it; tests/engines/test_cache_processes.py makes it
    happen on any machine.) Here a data file is named by a digest of its key and holds the key,
    checked on load, and the index is re-read and updated under a lock."""

    def save(self, key, data):
        name = f"{self._index_name[:-4]}.{hashlib.sha1(pickle.dumps(key, protocol=4)).hexdigest()[:16]}.nbc"
        self._save_data(name, (key, data))      # first the data: an index entry never names a missing file
        with _locked(self._index_path + ".lock"):
            overloads = self._load_index()
            overloads[key] = name
            self._save_index(overloads)


class _CheckedCache(FunctionCache):
    """Numba's function cache, reading from every folder of the claim and writing to the writable
    one; a damaged or unreadable file is dropped (one CacheWarning naming it) and the function is
    compiled again instead of failing in every later process."""

    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        py_file = inspect.getfile(py_func)
        read_dirs, write_dir = _claim(py_file)
        stamp = _Locator.source_stamp(py_file)
        base = self._impl.filename_base
        self._read_files = [_SharedCacheFile(str(d), base, stamp) for d in read_dirs]
        self._write_file = _SharedCacheFile(str(write_dir), base, stamp)

    def load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        target_context.refresh()
        key = self._index_key(sig, target_context.codegen())
        for cache_file in self._read_files:
            cres = self._load_from(cache_file, key, target_context)
            if cres is not None:
                return cres
        return None

    def _load_from(self, cache_file, key, target_context):
        index = cache_file._index_path
        try:
            overloads = cache_file._load_index()
        except Exception as exc:  # noqa: BLE001 - any damage to the index: EOFError, UnpicklingError, ...
            drop_damaged(index, exc)
            return None
        name = overloads.get(key)
        if name is None:
            return None
        data = cache_file._data_path(name)
        try:
            payload = cache_file._load_data(name)
        except FileNotFoundError:
            return None   # removed while the index still refers to it: compiled and saved again
        except Exception as exc:  # noqa: BLE001 - truncated or garbage data file, unreadable file
            drop_damaged(data, exc)
            return None
        if not (isinstance(payload, tuple) and len(payload) == 2 and payload[0] == key):
            drop_damaged(data, "it holds the machine code of another signature")
            return None
        payload = payload[1]
        try:
            return self._impl.rebuild(target_context, payload)
        except Exception as exc:  # noqa: BLE001 - a payload Numba cannot rebuild is as good as damaged
            drop_damaged(data, exc)
            return None

    def save_overload(self, sig, data):
        if not self._enabled or not self._impl.check_cachable(data):
            return
        key = self._index_key(sig, data.codegen)
        payload = self._impl.reduce(data)
        try:
            self._write_file.save(key, payload)
        except OSError as exc:
            warn_once(("unwritable", str(self._write_file._cache_path)),
                      f"gpupromote: cannot write the kernel cache in {self._write_file._cache_path} "
                      f"({exc}); kernels compiled now are kept in memory only", stacklevel=5)
        except Exception as exc:  # noqa: BLE001 - the index there is damaged: drop it, write a new one
            drop_damaged(self._write_file._index_path, exc)
            try:
                self._write_file.save(key, payload)
            except Exception:  # noqa: BLE001 - caching is an optimisation; the kernel is compiled
                pass


def _gc_paused(compile_):
    """``compile_`` with Python's cyclic garbage collector paused while it runs. Numba's compiler makes
    objects by the hundred thousand, and a full collection that falls inside a compile scans every
    object the process holds: about 70 ms with Numba and the library loaded, which is what moved the
    fused GELU's cold compile from 95 to 165 ms when the library grew by 46 functions. Paused, the
    compile is as long as its own work; the collections run after it."""
    @functools.wraps(compile_)
    def compile(*args, **kwargs):
        if not gc.isenabled():
            return compile_(*args, **kwargs)
        gc.disable()
        try:
            return compile_(*args, **kwargs)
        finally:
            gc.enable()
    return compile


def checked(dispatcher, interleave: int | None = None):
    """``dispatcher`` (a Numba function of a claimed file) with ``_CheckedCache`` as its cache, its
    compiles run with the garbage collector paused (``_gc_paused``) and, given ``interleave``, with
    that vector interleave count (``_interleaved``)."""
    dispatcher._cache = _CheckedCache(dispatcher.py_func)
    dispatcher.compile = _gc_paused(_interleaved(dispatcher.compile, interleave))
    return dispatcher


# How many vectors a kernel's loop keeps in flight when it calls the owned math (the generators
# write ``interleave=MATH_INTERLEAVE`` into such modules). LLVM's cost model interleaves those loops
# once or twice, and a float32 function's one long chain of dependent double operations (a tanh:
# about 100 cycles from load to store) then waits on latency; four independent vectors an
# iteration keep the pipes busier. 10**7 float32, one thread, 2-core Zen 4 (2026-11-27): exp 6.02
# -> 5.38 ms, log 9.90 -> 9.16, tanh 10.42 -> 8.59, sigmoid 18.55 -> 15.42, fused GELU 14.10 ->
# 10.28, fused softmax rows 4.67 -> 4.23; 8 was no better, and memory-bound loops gain nothing (an
# add was 7% slower), so plain arithmetic keeps the cost model's choice. The values are the same:
# interleaving orders whole vectors, never an element's operations.
MATH_INTERLEAVE = 4
# The math functions whose elementwise loops keep six vectors in flight instead (a kernel calling
# only these): their double evaluation is one long chain of multiply-adds with little else, and on
# a Zen 5 core four vectors left its two FMA pipes waiting on latency. 10**7 float32 with out=, one
# thread (2026-11-28, medians of two runs each): exp 3.30 -> 2.97 ms, sigmoid 10.0 -> 8.8, expm1 3.57
# -> 3.32, cosh 4.18 -> 3.83, erf 20.9 -> 19.0; float64 exp 9.37 -> 9.01. Not the others: tanh 3.95
# -> 4.06, log 3.52 -> 3.70, exp2 3.85 -> 3.99 (more registers spilled for no shorter chain). Nor the
# reductions' and row maps' loops, whose rows are short.
WIDER_INTERLEAVE = 6
# A loop that is one call of a lean float16 entry (tables.calls_lean_only): a short float32 chain of
# 16 lanes, a dozen constants, no double work; eight vectors in flight fill its FMA pipes best. 10**7
# float16 tanh, one thread (2026-11-29, streaming stores): 4 vectors 0.87, 6 0.81-0.82, 8 0.78-0.79 ms.
LEAN_INTERLEAVE = 8
WIDER_INTERLEAVE_FUNCTIONS = frozenset({"gp_exp", "gp_sigmoid", "gp_expm1", "gp_cosh", "gp_erf"})
_INTERLEAVE_OPTION = "-force-vector-interleave"


@contextlib.contextmanager
def interleaving(count: int | None):
    """LLVM's vector interleave count forced to ``count`` for the compiles inside (None: as it is).
    The option is process-wide, so it is set and put back under Numba's compiler lock, which every
    compile in the process takes: nothing else (a user's own njit code included) is compiled with
    it. Put back to the count of the compile around it (a compile nests the compiles of the
    functions it calls), outside all of ours to 0, LLVM's default (the cost model decides)."""
    if count is None:
        yield
        return
    with global_compiler_lock:
        before = _interleave_now[0]
        _set_interleave(count)
        try:
            yield
        finally:
            _set_interleave(before)


_interleave_now = [0]   # 0: LLVM's cost model decides


def _set_interleave(count: int):
    _llvm.set_option("", f"{_INTERLEAVE_OPTION}={count}")
    _interleave_now[0] = count


def _interleaved(compile_, count: int | None):
    """``compile_`` run with ``interleaving(count)``."""
    if count is None:
        return compile_

    @functools.wraps(compile_)
    def compile(*args, **kwargs):
        with interleaving(count):
            return compile_(*args, **kwargs)
    return compile


def cached_njit(interleave: int | None = None, **options):
    """``njit(**options)`` with the checked disk cache in the tag folder (helper modules and the
    generated kernels); ``interleave``: the vector interleave count its loops compile with."""
    def decorate(fn):
        return checked(njit(**options)(fn), interleave)
    return decorate


def memory_njit(interleave: int | None = None, **options):
    """``njit(**options)`` without a disk cache, for a generated module compiled in memory (no file
    for Numba's cache to key on: modules.py); ``interleave`` as for ``cached_njit``."""
    def decorate(fn):
        dispatcher = njit(**options)(fn)
        dispatcher.compile = _gc_paused(_interleaved(dispatcher.compile, interleave))
        return dispatcher
    return decorate


def cached_cfunc(sig, **options):
    """``numba.cfunc(sig, **options)`` (a C entry point, compiled now) with the checked disk cache:
    its machine code is loaded from, or saved to, the tag folder as the njit kernels' is."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    def decorate(fn):
        compiled = CFunc(fn, sigutils.normalize_signature(sig), locals={}, options=options)
        compiled._cache = _CheckedCache(fn)
        _gc_paused(compiled.compile)()
        return compiled
    return decorate


# the helpers' own compiled code (their cached_njit functions) lives in the tag folders too
for _name in HELPER_MODULES:
    _CLAIMS[os.path.abspath(importlib.util.find_spec(_name).origin)] = (
        tuple(dict.fromkeys(READ_DIRS + (WRITE_DIR,))), WRITE_DIR)
