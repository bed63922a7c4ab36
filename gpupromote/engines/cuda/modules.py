"""Compiling the CUDA engine's kernels and keeping them: the disk cache of compiled modules (cubin
or PTX) and the in-memory table of loaded kernels, per device. Apart from the launcher
(engines/cuda/launch.py), which only asks for a kernel by (kernel, variant, device): how it is
compiled, filed and loaded is this module's business, and none of it is on a call's path once the
kernel is loaded.

    load_module(source, any_complex, device_id)   a cupy.RawModule: from the disk cache, else compiled
    loaded_kernel(kernel, variant, device_id)     one kernel, loaded once per device (through load_module)
    precompile(items, ...)                        many kernels, a translation unit per group
    kernel_cache_dir()                            where the cubins are kept

``loaded_kernel`` and ``precompile`` look ``load_module`` up in this module when they run: the host
tier (tests/hostcuda) sets it here, and every kernel the engine loads comes through it.

Compilation and caches:

* a kernel is compiled once per (plan, variant) and kept in memory per device;
* compiling is _nvrtc.compile_cuda (the function the tests compile every generated source with;
  cuda-bindings' or CuPy's NVRTC binding, whichever imports) and the file name on disk is
  _nvrtc.cache_key (source, headers' text, options, NVRTC and gpupromote versions, arch, and for
  PTX the driver version): the cubin (or PTX) is kept under ``$CUPY_CACHE_DIR/gpupromote`` (default
  ``~/.cupy/kernel_cache/gpupromote``) and loaded with ``cupy.RawModule(path=...)``. A truncated or
  overwritten file (or one the driver refuses as an image) is dropped with a ``CacheWarning`` and
  compiled again; a read-only cache folder is read, and new cubins go to one stable writable folder
  (engines/disk_cache.py); where a cubin cannot be written at all (a full disk), it is loaded from
  memory after one ``CacheWarning`` naming the cause.

Note: kernels are compiled by gpupromote and loaded from the cubin, not through
``cupy.RawModule(code=...)``: CuPy appends ``-ftz=true`` to every NVRTC compile it makes, which
flushes float32 subnormals to zero, and then the GPU could not agree bit for bit with NumPy and the
CPU engine. The disk cache therefore lives beside CuPy's (same root directory), not inside it.
"""
from __future__ import annotations

import os
import threading

from . import source as S
from .. import disk_cache as _disk_cache
from .device import cupy_module

__all__ = ["kernel_cache_dir", "load_module", "loaded_kernel", "forget_kernels", "precompile"]


def kernel_cache_dir() -> str:
    """Where compiled cubins are kept: $CUPY_CACHE_DIR/gpupromote (CuPy's default root otherwise).
    When it cannot be written, it is still read, and new cubins go to ``_disk_cache.fallback_dir``."""
    root = os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")
    return os.path.join(root, "gpupromote")


_targets: dict = {}   # device id -> (arch, cubin)


def _cache_dirs() -> tuple[tuple, str]:
    """(the folders cubins are read from, in order; the folder new ones are written to)."""
    primary = kernel_cache_dir()
    if _disk_cache.writable(primary):
        return (primary,), primary
    fallback = str(_disk_cache.fallback_dir("cuda"))
    return (primary, fallback), fallback


def _target(device_id: int) -> tuple[str, bool]:
    """(arch, cubin): machine code (a cubin) for the device's own arch when NVRTC knows it; else
    PTX for the newest arch NVRTC knows below it, which the driver compiles on load."""
    target = _targets.get(device_id)
    if target is None:
        from .nvrtc import supported_archs
        cc = int(cupy_module().cuda.Device(device_id).compute_capability)
        try:
            archs = supported_archs()
        except Exception:  # noqa: BLE001 - an NVRTC too old to list them: trust the device
            archs = (cc,)
        if cc in archs:
            target = (f"sm_{cc}", True)
        else:
            target = (f"compute_{max([a for a in archs if a <= cc] or [min(archs)])}", False)
        _targets[device_id] = target
    return target


def _cache_path(source: str, any_complex: bool, device_id: int) -> tuple[str, str, bool]:
    """(file in the disk cache, arch, cubin) of ``source`` compiled for device ``device_id``: the
    name is _nvrtc.cache_key, the key the tests use too."""
    from .nvrtc import cache_key
    arch, cubin = _target(device_id)
    driver = None if cubin else int(cupy_module().cuda.runtime.driverGetVersion())
    key = cache_key(source, arch=arch, cubin=cubin, options=S.NVRTC_OPTIONS, include_cupy=any_complex,
                    driver_version=driver)
    return os.path.join(kernel_cache_dir(), key + (".cubin" if cubin else ".ptx")), arch, cubin


def _compile(source: str, any_complex: bool, arch: str, cubin: bool, name: str) -> bytes:
    """NVRTC through _nvrtc.compile_cuda, the compile function the tests use, with the engine's options."""
    from .nvrtc import compile_cuda
    return compile_cuda(source, name=name, arch=arch, cubin=cubin, options=S.NVRTC_OPTIONS, include_cupy=any_complex)


def _write_atomically(path: str, data: bytes) -> bool:
    return _disk_cache.write_atomically(path, data)


# CUDA driver statuses that say a file is no loadable image (damaged, or built for something
# else): INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX, UNSUPPORTED_PTX_VERSION, INVALID_SOURCE,
# FILE_NOT_FOUND.
_BAD_IMAGE_STATUSES = {200, 209, 218, 222, 300, 301}


def _intact(data: bytes, ext: str) -> str | None:
    """None when ``data`` looks like a whole cubin (ELF) or PTX file, else what is wrong with it:
    a truncated or overwritten file is compiled again, never handed to the driver."""
    if ext == ".ptx":
        text = data.rstrip(b"\0").decode("ascii", errors="replace")
        if ".version" not in text or ".target" not in text:
            return "no .version / .target directive"
        if text.count("{") != text.count("}") or not text.rstrip().endswith("}"):
            return "it ends before its last function does (truncated)"
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return f"not a 64-bit little-endian ELF file ({len(data)} bytes)"
    field = lambda at, size: int.from_bytes(data[at:at + size], "little")  # noqa: E731
    # Note: one byte of slack: CuPy's nvrtc.getCUBIN drops a cubin's final byte (a NUL, as if the
    # ELF were a C string); the driver loads such files, and a cut of one more byte is caught.
    end = len(data) + 1
    phoff, shoff = field(0x20, 8), field(0x28, 8)
    phentsize, phnum, shentsize, shnum = field(0x36, 2), field(0x38, 2), field(0x3A, 2), field(0x3C, 2)
    if phoff + phentsize * phnum > end or shoff + shentsize * shnum > end or shentsize < 0x28:
        return f"its header tables end past the end of the file ({len(data)} bytes: truncated)"
    for i in range(shnum):
        entry = shoff + i * shentsize
        kind, offset, size = field(entry + 4, 4), field(entry + 0x18, 8), field(entry + 0x20, 8)
        if kind != 8 and offset + size > end:   # 8 is SHT_NOBITS: no bytes in the file
            return f"section {i} ends past the end of the file ({len(data)} bytes: truncated)"
    return None


def _load_cached(cp, path: str, ext: str, device_id: int):
    """The module in ``path``, loaded on ``device_id``; None when there is none, or when it is
    damaged (it is then dropped, with one CacheWarning naming it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None   # a directory in the file's place is no damaged file: the write then fails and says so
    except OSError as exc:
        _disk_cache.drop_damaged(path, exc)
        return None
    problem = _intact(data, ext)
    if problem is not None:
        _disk_cache.drop_damaged(path, problem)
        return None
    with cp.cuda.Device(device_id):
        module = cp.RawModule(path=path)
        try:
            module.compile()   # why: load it now, so that a file the driver refuses is caught here
        except cp.cuda.driver.CUDADriverError as exc:
            if getattr(exc, "status", None) not in _BAD_IMAGE_STATUSES:
                raise
            _disk_cache.drop_damaged(path, exc)
            return None
    return module


def load_module(source: str, any_complex: bool, device_id: int):
    """A cupy.RawModule for ``source``: from the disk cache, else compiled and stored there.
    Returns (module, how) with how in ("disk", "compiled") for the benchmark.

    A cached file that is damaged (or that the driver refuses as an image) is dropped with one
    CacheWarning naming it, and the source is compiled again."""
    cp = cupy_module()
    path, arch, cubin = _cache_path(source, any_complex, device_id)
    name, ext = os.path.basename(path), (".cubin" if cubin else ".ptx")
    read_dirs, write_dir = _cache_dirs()
    for folder in read_dirs:
        module = _load_cached(cp, os.path.join(folder, name), ext, device_id)
        if module is not None:
            return module, "disk"
    binary = _compile(source, any_complex, arch, cubin, f"gp_{name[:16]}.cu")
    path = os.path.join(write_dir, name)
    if write_dir != read_dirs[0]:
        _disk_cache.warn_once(("unwritable", read_dirs[0]),
                              f"gpupromote: the CUDA kernel cache {read_dirs[0]} cannot be written; it is read, "
                              f"and new kernels are cached in {write_dir}")
    failure = _disk_cache.write_error(path, binary)
    if failure is not None:
        # a full disk (or a directory where the file should be): load this module from memory,
        # after one warning naming the cause; a later process on a freed disk caches it again
        _disk_cache.warn_once(("unwritable", write_dir),
                              f"gpupromote: cannot write the CUDA kernel cache in {write_dir}: "
                              f"{_disk_cache.why_unwritable(failure)}; kernels that are not cached yet are loaded "
                              f"from memory and kept for this process only", at_caller=True)
        return _load_from_memory(cp, binary, name, device_id, failure), "compiled"
    with cp.cuda.Device(device_id):
        return cp.RawModule(path=path), "compiled"


# The anonymous files (memfd) or temporary files behind modules loaded from memory: CuPy reads a
# RawModule's file when it first loads a function of it, so the file stays as long as the process.
_memory_files: list = []


def _load_from_memory(cp, binary: bytes, name: str, device_id: int, failure: OSError):
    """A module loaded from ``binary`` without the cache folder: through an anonymous in-memory file
    (memfd, Linux), which the driver reads by its /proc path, else through a private temporary
    file removed when the process exits."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(f"gpupromote-{name}")
        os.write(fd, binary)
        _memory_files.append(fd)   # never closed: its /proc path must keep naming this file
        path = f"/proc/self/fd/{fd}"
    else:
        import atexit
        import tempfile
        try:
            handle, path = tempfile.mkstemp(prefix="gpupromote-", suffix=os.path.splitext(name)[1])
            with os.fdopen(handle, "wb") as f:
                f.write(binary)
        except OSError as exc:
            raise OSError(f"gpupromote: cannot write the compiled kernel {name} anywhere: the cache folder "
                          f"({_disk_cache.why_unwritable(failure)}) nor a temporary file ({exc})") from None
        _memory_files.append(path)
        atexit.register(lambda p=path: os.path.exists(p) and os.unlink(p))
    with cp.cuda.Device(device_id):
        module = cp.RawModule(path=path)
        module.compile()
    return module


_lock = threading.RLock()
_kernels: dict = {}     # (device, kernel name) -> cupy.RawKernel


def forget_kernels() -> None:
    """Forget the loaded kernels (the disk cache stays); the launcher's clear_memory_cache calls this."""
    with _lock:
        _kernels.clear()


def loaded_kernel(kernel, variant, device_id: int):
    name = S.kernel_name(kernel, variant)
    k = _kernels.get((device_id, name))
    if k is None:
        with _lock:
            k = _kernels.get((device_id, name))
            if k is None:
                module, _ = load_module(S.kernel_source(kernel, variant), S.needs_complex(kernel), device_id)
                k = _kernels[(device_id, name)] = module.get_function(name)
    return k


def _compile_to_cache(job) -> str | None:
    """Worker of precompile: compile one translation unit into the disk cache; the error text
    when NVRTC refuses it (the unit's kernels are then compiled one by one on first use)."""
    source, any_complex, arch, cubin, path = job
    if os.path.isfile(path):
        return None
    try:
        _write_atomically(path, _compile(source, any_complex, arch, cubin, os.path.basename(path)[:16] + ".cu"))
    except Exception as exc:  # noqa: BLE001 - reported by precompile, not fatal
        return f"{type(exc).__name__}: {exc}"[:2000]
    return None


def precompile(items, device_id: int | None = None, group: int = 256, workers: int = 1) -> int:
    """Compile (or load) the kernels of many (kernel or plan, variant) pairs, ``group`` kernels per NVRTC
    translation unit, so a test sweep or a warm-up pays one compile per group, not per kernel;
    with ``workers`` > 1 the translation units are compiled in that many spawned processes
    (NVRTC holds the GIL) into the disk cache first. Plans without a CUDA kernel are skipped.
    Returns the number of kernels loaded."""
    cp = cupy_module()
    dev = cp.cuda.runtime.getDevice() if device_id is None else device_id
    todo, seen = [], set()
    for plan, variant in items:
        plan = S.as_kernel(plan)
        name = S.kernel_name(plan, variant)
        if name in seen or (dev, name) in _kernels or S.unsupported(plan):
            continue
        seen.add(name)
        todo.append((plan, variant, name))
    # complex and real kernels in separate units: only the complex ones need CuPy's headers
    todo.sort(key=lambda t: (S.needs_complex(t[0]), t[2]))
    units = []
    for start in range(0, len(todo), group):
        chunk = todo[start:start + group]
        units.append((S.translation_unit([(p, v) for p, v, _ in chunk]),
                      any(S.needs_complex(p) for p, _, _ in chunk), chunk))
    if workers > 1 and len(units) > 1:
        import concurrent.futures as cf
        import multiprocessing
        jobs = []
        for src, cplx, _ in units:
            path, arch, cubin = _cache_path(src, cplx, dev)
            if not os.path.isfile(path):
                jobs.append((src, cplx, arch, cubin, path))
        if jobs:
            ctx = multiprocessing.get_context("spawn")  # why: a forked child of a CUDA process is unusable
            with cf.ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx) as ex:
                list(ex.map(_compile_to_cache, jobs))
    loaded = 0
    for src, cplx, chunk in units:
        try:
            module, _ = load_module(src, cplx, dev)
        except Exception as exc:  # noqa: BLE001 - one bad kernel must not cost the others
            import warnings
            warnings.warn(f"precompile: a unit of {len(chunk)} kernels failed ({str(exc)[:500]}); "
                          f"they will be compiled one by one on first use", RuntimeWarning, stacklevel=2)
            continue
        with _lock:
            for _, _, name in chunk:
                _kernels[(dev, name)] = module.get_function(name)
        loaded += len(chunk)
    return loaded
