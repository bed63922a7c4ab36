"""The CPU engine's generated kernel modules on disk: each source filed once as
``<kernel dir>/_gpk_<hash>.py`` (the file Numba's disk cache is keyed on), executed from memory, with
its compiled twin (the module's code object beside it), and compiled in memory where the cache
cannot be written. kernels.py (the elementwise kernels), reduce.py (the reductions) and the row maps
load their modules here.
"""
from __future__ import annotations

import hashlib
import importlib.util
import linecache
import marshal
import sys
import threading
import types as _pytypes
from pathlib import Path

from ..disk_cache import drop_damaged, warn_once, why_unwritable, write_error
from .cache import KERNEL_DIR, READ_DIRS, WRITE_DIR, claim_dir

__all__ = ["load_module", "load_lock"]


# Loading a module (filing it, executing it) and compiling an entry point happen once per process
# however many threads ask at once: a module is published in sys.modules and _modules only after it
# has run to its end (a thread that found it half-executed would see no ``flat``).
load_lock = threading.RLock()
_modules: dict = {}     # name -> a fully executed kernel module


def load_module(src: str):
    """The module for ``src``, executed from the in-memory text and filed as
    ``<kernel dir>/_gpk_<hash>.py``, the file Numba's disk cache is keyed on (written once,
    atomically; a copy that differs from ``src`` is damaged and is written again). Where that file
    cannot be written (a full disk, a directory in its place) the module is compiled in memory,
    without a disk cache, after one CacheWarning naming the cause."""
    name = "_gpk_" + hashlib.sha1(src.encode()).hexdigest()[:24]
    mod = _modules.get(name)
    if mod is not None:
        return mod
    with load_lock:
        mod = _modules.get(name)
        if mod is not None:
            return mod
        path = _module_file(name, src)
        if path is None:
            mod = _in_memory_module(name, src)
        else:
            claim_dir(path.parent)
            mod = _pytypes.ModuleType(name)
            mod.__file__ = str(path)
            exec(_code_of(src, path), mod.__dict__)
        sys.modules[name] = _modules[name] = mod
    return mod



# The compiled twin of a kernel module: its code object (marshal, this Python's format) after a
# digest that binds it to the module's source. Compiling the source again took 2 of the 7 ms a new
# process spends on a cached 5-step fused chain; reading the twin takes about 0.1.
_TWIN = f".{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}.code"


def _code_of(src: str, path: Path):
    """``src`` compiled (as the file ``path``), read from its twin beside ``path`` where the twin's
    digest matches ``src`` and its bytes, else compiled and the twin written (or not, on any error:
    it is an optimisation). A damaged or foreign twin fails the digest: only code compiled from
    ``src`` ever runs."""
    twin = path.with_name(path.stem + _TWIN)
    key = (str(path) + "\0" + src).encode()     # the path too: tracebacks name the file the code came from
    try:
        blob = twin.read_bytes()
        if hashlib.sha256(key + blob[32:]).digest() == blob[:32]:
            return marshal.loads(blob[32:])
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(src, str(path), "exec")
    payload = marshal.dumps(code)
    write_error(twin, hashlib.sha256(key + payload).digest() + payload)
    return code


# The generated module's import of the cached decorator; a module compiled in memory takes Numba's
# own decorator instead, without the disk cache (no file: nothing for Numba's cache to key on).
_CACHED_IMPORT = "from gpupromote.engines.cpu.cache import cached_njit"


def _in_memory_module(name: str, src: str):
    if _CACHED_IMPORT not in src:
        raise OSError(f"gpupromote: cannot write the kernel module {name}.py, and the generated source has no "
                      f"{_CACHED_IMPORT!r} to compile it in memory instead")
    filename = f"<gpupromote kernel {name} (in memory)>"
    text = src.replace(_CACHED_IMPORT, "from gpupromote.engines.cpu.cache import memory_njit as cached_njit")
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)   # tracebacks show the code
    mod = _pytypes.ModuleType(name)
    mod.__file__ = filename
    mod.__gp_in_memory__ = True
    exec(compile(text, filename, "exec"), mod.__dict__)
    return mod


def _module_file(name: str, src: str) -> Path | None:
    """Where the kernel module ``name`` lives: the first folder of READ_DIRS holding an intact copy;
    else it is written (again) to WRITE_DIR; None when it cannot be written there (the caller then
    compiles it in memory; one CacheWarning says why)."""
    for folder in READ_DIRS:
        path = folder / f"{name}.py"
        try:
            with open(path, encoding="utf-8") as f:
                on_disk = f.read()
        except FileNotFoundError:
            continue
        except IsADirectoryError:
            continue   # not a damaged file: the write below fails and says so
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
    failure = write_error(path, src)
    if failure is None:
        return path
    # the key Numba's own failed saves into WRITE_DIR warn under (cache.py): one warning for both
    warn_once(("unwritable", str(WRITE_DIR)),
              f"gpupromote: cannot write the kernel cache in {WRITE_DIR}: {why_unwritable(failure)}; kernels "
              f"that are not cached yet are compiled in memory and kept for this process only (a later process "
              f"writes the cache again once it can)", at_caller=True)
    return None


