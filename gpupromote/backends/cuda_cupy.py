"""The CUDA engine: executes Plans on CuPy arrays with kernels from _cuda_source.

    run(plan, args, out)        the backend interface (see gpupromote/backends/__init__.py)
    storage_dtype(dtype)        the numpy dtype of the CuPy array that stores a gpupromote DType
    BACKEND                     the object the backend registry loads (empty, run, copyto, asarray)

Storage (what ``storage_dtype`` returns, and what the kernels read and write):

    bool, ints, float16/32/64, complex64/128   their own numpy dtype
    bfloat16                                   ml_dtypes.bfloat16 when this CuPy supports it (CuPy 14
                                               with ml_dtypes does: cupy arrays of dtype bfloat16),
                                               else uint16 holding the bit patterns
    float8_e4m3fn, float8_e5m2                 uint8 bit patterns (CuPy has no float8 arrays; a
                                               gp.Array carries the logical dtype)
    complex32                                  uint32: the two float16 bit patterns of an element,
                                               real part in the low half (little-endian memory order:
                                               [re, im] as torch.chalf lays it out)

The kernels never look at the CuPy dtype: they read storage bits through the plan's dtypes, so a
bfloat16 array and its uint16 view give the same result.

Launch paths (per call, from the arrays' layout):

* contiguous: every array operand and ``out`` contiguous in the same order (C, or all
  Fortran) with ``out``'s size: the vectorized kernel, N elements per thread per step read with
  16-byte loads. Each data pointer's alignment is checked at launch; a misaligned view (a[1:])
  takes the same loop with N = 1.
* strided: broadcast, strided, negative strides, overlapping-free ``out`` of any layout. Shapes
  and byte strides are coalesced on the host (dimensions of extent 1 dropped, contiguous runs
  merged) and passed as kernel parameters to a kernel specialized on the remaining rank, in 32-bit
  index math when every offset fits, else 64-bit.

Compilation and caches:

* a kernel is compiled once per (plan, variant) and kept in memory per device;
* compiling is _nvrtc.compile_cuda (the function the tests compile every generated source with;
  cuda-bindings' or CuPy's NVRTC binding, whichever imports) and the file name on disk is
  _nvrtc.cache_key (source, headers' text, options, NVRTC and gpupromote versions, arch, and for
  PTX the driver version): the cubin (or PTX) is kept under ``$CUPY_CACHE_DIR/gpupromote`` (default
  ``~/.cupy/kernel_cache/gpupromote``) and loaded with ``cupy.RawModule(path=...)``. A truncated or
  overwritten file (or one the driver refuses as an image) is dropped with a ``CacheWarning`` and
  compiled again; a read-only cache folder is read, and new cubins go to one stable writable folder
  (backends/_disk_cache.py).

Note: kernels are compiled by gpupromote and loaded from the cubin, not through
``cupy.RawModule(code=...)``: CuPy appends ``-ftz=true`` to every NVRTC compile it makes, which
flushes float32 subnormals to zero, and then the GPU could not agree bit for bit with NumPy and the
CPU engine. The disk cache therefore lives beside CuPy's (same root directory), not inside it.

Devices: a call runs on the device its device operands (and ``out``) live on, whichever is
current, and allocates its result there; operands on two devices are refused (ValueError). Host
NumPy arrays (other than 0-d ones, which are folded as scalars) are refused beside device
operands, as CuPy refuses them (TypeError): copy them with ``cupy.asarray`` first.

Nothing here imports cupy at module import: the package works on a machine without CUDA.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .. import dtypes as D
from . import _cuda_source as S
from . import _disk_cache

__all__ = ["run", "storage_dtype", "empty", "copyto", "asarray", "device_index", "on_device", "available",
           "precompile", "kernel_cache_dir", "clear_memory_cache", "set_launch_config", "BACKEND", "CudaUnavailable"]

_BLOCK = int(os.environ.get("GP_CUDA_BLOCK", "256"))
# Blocks per SM resident at once (2048 threads / SM on sm_80+) times this many waves: the grid of
# the grid-stride loops. One full wave keeps every SM busy without re-launch overhead.
_WAVES = int(os.environ.get("GP_CUDA_WAVES", "1"))


class CudaUnavailable(RuntimeError):
    """CuPy or a CUDA device is missing: the message says which and what to do."""


_cp = None


def _cupy():
    global _cp
    if _cp is None:
        try:
            import cupy
        except ImportError as exc:
            raise CudaUnavailable(
                "gpupromote's CUDA engine needs CuPy (pip install cupy-cuda13x, or cupy-cuda12x for a "
                f"CUDA 12 driver) and an NVIDIA GPU; CuPy is not importable here: {exc}") from exc
        _cp = cupy
    return _cp


def available() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and sees a CUDA device, else (False, why not)."""
    try:
        cp = _cupy()
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CudaUnavailable, CUDARuntimeError (no driver), ...
        return False, f"{type(exc).__name__}: {exc}"
    if n == 0:
        return False, "CuPy sees no CUDA device"
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    name = props["name"]
    return True, name.decode() if isinstance(name, bytes) else str(name)


# ---------------------------------------------------------------------------------------------
# Storage

_bf16_native = None


def _cupy_has_bfloat16() -> bool:
    """Whether CuPy arrays can have dtype ml_dtypes.bfloat16 (CuPy 14 with ml_dtypes)."""
    global _bf16_native
    if _bf16_native is None:
        try:
            from cupy._core import _scalar  # why: the one place CuPy says which dtypes it maps to C
            _bf16_native = _scalar.get_typename(D.bfloat16.numpy) == "bfloat16"
        except Exception:
            _bf16_native = False
    return _bf16_native


def storage_dtype(dtype) -> np.dtype:
    """The numpy dtype of the CuPy array holding elements of ``dtype`` (see the module docstring)."""
    dt = D.dtype(dtype)
    if dt.is_float8:
        return np.dtype(np.uint8)
    if dt.code == "bf":
        return dt.numpy if _cupy_has_bfloat16() else np.dtype(np.uint16)
    if dt.code == "c4":
        return np.dtype(np.uint32)
    return dt.numpy


def device_index(device=None) -> int:
    """The CUDA device number of ``device``: None or "cuda" is the current device, "cuda:N" or N is
    N, a CuPy array or a cupy.cuda.Device is the device it lives on / names."""
    cp = _cupy()
    if device is None or (isinstance(device, str) and device == "cuda"):
        return int(cp.cuda.runtime.getDevice())
    if isinstance(device, int):
        index = device
    elif isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        index = int(device[5:])
    elif isinstance(device, cp.ndarray):
        return int(device.device.id)
    elif hasattr(device, "id"):
        return int(device.id)
    else:
        raise ValueError(f"not a CUDA device: {device!r}; use 'cuda', 'cuda:N' or N")
    count = int(cp.cuda.runtime.getDeviceCount())
    if not 0 <= index < count:
        raise ValueError(f"no CUDA device {index}: this machine has {count} (cuda:0 to cuda:{count - 1})")
    return index


def on_device(device):
    """A context manager making ``device`` (anything device_index takes) the current CUDA device:
    allocations and launches inside it happen there."""
    return _cupy().cuda.Device(device_index(device))


def empty(shape, dtype, device=None):
    """A new, uninitialized device array for ``dtype`` in its storage dtype, on ``device``
    (default: the current device)."""
    cp = _cupy()
    with cp.cuda.Device(device_index(device)):
        return cp.empty(shape, storage_dtype(dtype))


def asarray(x, dtype=None, device=None):
    """Device storage of ``dtype`` (default: x's own) for an array-like, on ``device`` (default: the
    current device, or where a CuPy ``x`` lives).

    Host data is converted on the host (NumPy / ml_dtypes casts; complex32 packed as two float16
    bit patterns; narrow floats kept as bit patterns where CuPy has no such dtype) and copied to
    the device. A CuPy array is returned as it is when it already is on that device in that
    dtype; on another device it is copied across (as cupy.asarray does); of another dtype it is
    cast on the device with copyto (its CuPy dtype taken as its logical dtype)."""
    cp = _cupy()
    if isinstance(x, cp.ndarray):
        dev = x.device.id if device is None else device_index(device)
        with cp.cuda.Device(dev):
            x = cp.asarray(x)  # a copy only when x lives on another device
        have = D.dtype(x.dtype)
        if dtype is None or D.dtype(dtype) is have:
            return x
        out = empty(x.shape, dtype, dev)
        copyto(out, x, dtype, have)
        return out
    a = np.asarray(x)
    dt = D.dtype(dtype if dtype is not None else a.dtype)
    if dt.code == "c4":  # complex32: both parts rounded to float16, packed [re, im] in a uint32
        z = a.astype(np.complex64) if a.dtype.kind == "c" else a.astype(np.float32).astype(np.complex64)
        with np.errstate(all="ignore"):
            re = z.real.astype(np.float16).view(np.uint16).astype(np.uint32)
            im = z.imag.astype(np.float16).view(np.uint16).astype(np.uint32)
        a = re | (im << np.uint32(16))
    else:
        if a.dtype != dt.numpy:
            with np.errstate(all="ignore"):
                a = a.astype(dt.numpy)
        st = storage_dtype(dt)
        if a.dtype != st:
            a = a.view(st)
    with cp.cuda.Device(device_index(device)):
        return cp.asarray(a)


def copyto(dst, src, dst_dtype=None, src_dtype=None):
    """``dst[...] = src`` cast as NumPy / ml_dtypes astype does (same shape, any layouts), with a
    kernel on dst's device (src must live there too).

    ``dst_dtype`` / ``src_dtype`` give the logical dtypes when the storage dtype does not say it
    (uint8 storage holds float8, uint32 complex32)."""
    dd = D.dtype(dst_dtype if dst_dtype is not None else dst.dtype)
    sd = D.dtype(src_dtype if src_dtype is not None else src.dtype)
    if tuple(dst.shape) != tuple(src.shape):
        raise ValueError(f"copyto: shapes differ: {tuple(dst.shape)} and {tuple(src.shape)}")
    if dst.size:
        with _cupy().cuda.Device(dst.device.id):
            run(S.cast_plan(sd, dd), [src], dst)
    return dst


# ---------------------------------------------------------------------------------------------
# Compiling and caching kernels

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
        from ._nvrtc import supported_archs
        cc = int(_cupy().cuda.Device(device_id).compute_capability)
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
    from ._nvrtc import cache_key
    arch, cubin = _target(device_id)
    driver = None if cubin else int(_cupy().cuda.runtime.driverGetVersion())
    key = cache_key(source, arch=arch, cubin=cubin, options=S.NVRTC_OPTIONS, include_cupy=any_complex,
                    driver_version=driver)
    return os.path.join(kernel_cache_dir(), key + (".cubin" if cubin else ".ptx")), arch, cubin


def _compile(source: str, any_complex: bool, arch: str, cubin: bool, name: str) -> bytes:
    """NVRTC through _nvrtc.compile_cuda, the compile function the tests use, with the engine's options."""
    from ._nvrtc import compile_cuda
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
    except FileNotFoundError:
        return None
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
    cp = _cupy()
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
    if not _write_atomically(path, binary):
        raise OSError(f"gpupromote: cannot write the compiled kernel to {path}")
    with cp.cuda.Device(device_id):
        return cp.RawModule(path=path), "compiled"


_lock = threading.RLock()
_kernels: dict = {}     # (device, kernel name) -> cupy.RawKernel
_launchers: dict = {}   # (device, plan.key) -> _Launcher


def clear_memory_cache() -> None:
    """Forget loaded kernels (the disk cache stays): the next call loads from disk."""
    with _lock:
        _kernels.clear()
        _launchers.clear()
        _by_id.clear()


def _kernel(kernel, variant, device_id: int):
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
    cp = _cupy()
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


# ---------------------------------------------------------------------------------------------
# Launching

_device_info: dict = {}


def _max_blocks(device_id: int) -> int:
    m = _device_info.get(device_id)
    if m is None:
        attrs = _cupy().cuda.Device(device_id).attributes
        per_sm = max(1, attrs.get("MaxThreadsPerMultiProcessor", 2048) // _BLOCK)
        m = _device_info[device_id] = attrs["MultiProcessorCount"] * per_sm * max(1, _WAVES)
    return m


def set_launch_config(block: int | None = None, waves: int | None = None) -> tuple[int, int]:
    """Set threads per block and waves of resident blocks for later launches (the defaults come
    from GP_CUDA_BLOCK / GP_CUDA_WAVES); returns the previous (block, waves)."""
    global _BLOCK, _WAVES
    old = (_BLOCK, _WAVES)
    with _lock:
        _BLOCK = int(block or _BLOCK)
        _WAVES = int(waves or _WAVES)
        _device_info.clear()
        _launchers.clear()
        _by_id.clear()
    return old


_SCALAR_TYPES = {"bool": np.bool_, "signed char": np.int8, "short": np.int16, "int": np.int32,
                 "long long": np.int64, "unsigned char": np.uint8, "unsigned short": np.uint16,
                 "unsigned int": np.uint32, "unsigned long long": np.uint64, "float": np.float32,
                 "double": np.float64}


def _coalesce(shape, strides_list):
    """Drop extent-1 dimensions and merge dimensions that are contiguous in every operand.
    Returns (extents, [strides per operand]) outermost first, at least one dimension."""
    dims = [(n, [s[d] for s in strides_list]) for d, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides_list]
    out = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = out[-1]
        if all(ps == s * n for ps, s in zip(pst, st)):
            out[-1] = (pn * n, st)
        else:
            out.append((n, st))
    extents = [n for n, _ in out]
    return extents, [[st[k] for _, st in out] for k in range(len(strides_list))]


def _broadcast_strides(a, shape):
    """Byte strides of ``a`` broadcast to ``shape`` (0 where it is broadcast)."""
    pad = len(shape) - a.ndim
    strides = [0] * pad
    for d, (n, s) in enumerate(zip(a.shape, a.strides)):
        strides.append(0 if n == 1 and shape[pad + d] != 1 else s)
    return strides


def _check_element_alignment(kernel, positions, arrays, out):
    """Refuse arrays whose elements are not aligned to their size: a view that starts mid-element
    or strides by a non-multiple of the item size (cupy allows ``a[1:].view(cupy.float32)`` of a
    uint8 array, or a complex128 view 8 bytes into a buffer). The kernels load whole elements, so
    on a GPU such a view fails with 'misaligned address' and leaves the CUDA context unusable."""
    for what, a in (("out", out), *((f"operand {i}", x) for i, x in zip(positions, arrays))):
        size = a.dtype.itemsize
        if size == 1:
            continue
        offset = a.data.ptr % size
        strides = [st for st, extent in zip(a.strides, a.shape) if extent > 1 and st % size]
        if offset or strides:
            where = (f"starts {offset} bytes past a {size}-byte boundary" if offset else
                     f"has a byte stride of {strides[0]}, not a multiple of its {size}-byte elements")
            raise ValueError(
                f"{kernel.label} ({', '.join(p.dtype.name for p in kernel.params)} -> {kernel.out.name}): "
                f"{what}, a {a.dtype} view, {where}; a GPU cannot load misaligned "
                f"{size}-byte elements (the kernel would fail with 'misaligned address'). Copy it into "
                f"a new array first: cupy.ascontiguousarray(x) or x.copy()")


class _Launcher:
    """Everything about an ir.Kernel that does not change between calls, so a call is a few
    checks and one kernel launch."""

    def __init__(self, kernel, device_id):
        why = S.unsupported(kernel)
        if why:
            raise S.UnsupportedPlan(why)
        self.kernel, self.device = kernel, device_id
        self.arrays = kernel.arrays
        self.width = S.vector_width(kernel)
        self.itemsizes = [kernel.params[i].dtype.itemsize for i in self.arrays]
        self.out_itemsize = kernel.out.itemsize
        self.aligns = [S.vector_alignment(kernel.params[i].dtype, self.width) for i in self.arrays]
        self.out_align = S.vector_alignment(kernel.out, self.width)
        self.scalars = [(i, _SCALAR_TYPES[ctype], split) for i, ctype, split in S.scalar_parameters(kernel)]
        self.nflags = len(kernel.checks)
        self.max_blocks = _max_blocks(device_id)
        self.vec = None      # kernels, loaded on first use
        self.flat = None
        self.strided: dict = {}

    def scalar_args(self, args):
        out = []
        for i, t, split in self.scalars:
            v = args[i]
            if split:
                v = complex(v)
                out += [t(v.real), t(v.imag)]
            else:
                out.append(v if type(v) is t else t(v))  # the dispatcher already converted it
        return out

    def __call__(self, args, out, flags=None):
        n = out.size
        if n == 0:
            return out
        arrays = [args[i] for i in self.arrays]
        k = self.kernel
        for a, size in zip(arrays, self.itemsizes):
            if a.dtype.itemsize != size:
                raise TypeError(f"{k.label}: an operand has item size {a.dtype.itemsize}, the kernel reads "
                                f"{size}-byte elements ({', '.join(p.dtype.name for p in k.params)})")
        if out.dtype.itemsize != self.out_itemsize:
            raise TypeError(f"{k.label}: out has item size {out.dtype.itemsize}, the kernel writes "
                            f"{k.out.name} ({self.out_itemsize} bytes)")
        scalars = self.scalar_args(args)
        tail = (flags,) if self.nflags else ()
        if self._flat(arrays, out, n):
            aligned = out.data.ptr % self.out_align == 0 and all(
                a.data.ptr % al == 0 for a, al in zip(arrays, self.aligns))
            if aligned and self.width > 1:
                k = self.vec or self._load_vec()
                work = -(-n // self.width)
            else:
                _check_element_alignment(self.kernel, self.arrays, arrays, out)
                k = self.flat or self._load_flat()
                work = n
            grid = min(-(-work // _BLOCK), self.max_blocks)
            k((grid,), (_BLOCK,), (np.int64(n), *scalars, out, *arrays, *tail))
            return out
        return self._launch_strided(arrays, scalars, out, n, tail)

    @staticmethod
    def _flat(arrays, out, n):
        """All arrays laid out like ``out`` element for element, in one contiguous run."""
        of = out.flags
        if of.c_contiguous:
            return all(a.size == n and a.flags.c_contiguous for a in arrays)
        if of.f_contiguous:
            return all(a.shape == out.shape and a.flags.f_contiguous for a in arrays)
        return False

    def _load_vec(self):
        self.vec = _kernel(self.kernel, ("contig", self.width), self.device)
        return self.vec

    def _load_flat(self):
        self.flat = _kernel(self.kernel, ("contig", 1), self.device)
        return self.flat

    def _launch_strided(self, arrays, scalars, out, n, tail=()):
        _check_element_alignment(self.kernel, self.arrays, arrays, out)
        shape = out.shape
        strides_list = [list(out.strides)] + [_broadcast_strides(a, shape) for a in arrays]
        extents, strides = _coalesce(shape, strides_list)
        ndim = len(extents)
        reach = max(sum(abs(s) * (e - 1) for s, e in zip(st, extents)) for st in strides)
        bits = 32 if n + _BLOCK * self.max_blocks < 2**31 and reach < 2**31 else 64
        key = (ndim, bits)
        k = self.strided.get(key)
        if k is None:
            k = self.strided[key] = _kernel(self.kernel, ("strided", ndim, bits), self.device)
        grid = min(-(-n // _BLOCK), self.max_blocks)
        params = [np.int64(e) for e in extents] + [np.int64(s) for st in strides for s in st]
        k((grid,), (_BLOCK,), (np.int64(n), *scalars, out, *arrays, *tail, *params))
        return out


_by_id: dict = {}       # (id(plan), device) -> (plan, _Launcher): the hot path, no hashing of the plan


def _launcher(plan):
    """The launcher of a plan's one-node kernel, or of an ir.Kernel."""
    dev = _cupy().cuda.runtime.getDevice()
    hit = _by_id.get((id(plan), dev))
    if hit is not None and hit[0] is plan:  # why: the entry holds the plan, so its id is not reused
        return hit[1]
    key = (dev, S.as_kernel(plan))  # plans that compute the same thing share one kernel
    L = _launchers.get(key)
    if L is None:
        L = _launchers[key] = _Launcher(key[1], dev)
    if len(_by_id) > 4096:  # plans rebuilt per call (Python int range checks) must not pile up
        _by_id.clear()
    _by_id[(id(plan), dev)] = (plan, L)
    return L


def run(plan, args, out, flags=None):
    """Evaluate ``plan`` (a Plan or an ir.Kernel) into ``out`` (a CuPy array of the broadcast shape
    in the result's storage dtype). ``args[i]``: a CuPy array (any strides, broadcastable) unless
    operand i is folded, then the scalar already converted to the type the kernel takes it in
    (``np.bool_`` for where's condition). ``flags``: a device uint8 array, one byte per check."""
    return _launcher(plan)(args, out, flags)


def fast_runner(plan, converters):
    """A runner for the dispatcher's cache: ``runner(*args)`` folds the scalars with
    ``converters[i]`` (None for array operands), allocates the output and launches, or returns
    None when the arrays are not all contiguous and of one shape (the full path handles those)."""
    cp = _cupy()
    L = _launcher(plan)
    store = storage_dtype(plan.result)
    empty_ = cp.empty
    folded = [(i, c) for i, c in enumerate(converters) if c is not None]

    def runner(*args):
        shape = None
        for i in L.arrays:
            a = args[i]
            if shape is None:
                shape = a.shape
                if a.device.id != L.device:
                    return None   # arrays on another device than this runner's: the full path
            elif a.shape != shape:
                return None
        if shape is None:
            return None
        if folded:
            args = list(args)
            for i, c in folded:
                args[i] = c(args[i])
        out = empty_(shape, store)
        if out.size:
            L(args, out)
        return out
    return runner


class _CudaBackend:
    """The object gpupromote.backends.get_backend("cuda") returns."""
    name = "cuda"

    @staticmethod
    def empty(shape, dtype, device=None):
        return empty(shape, dtype, device)

    @staticmethod
    def run(plan, args, out):
        run(plan, args, out)

    @staticmethod
    def run_kernel(kernel, args, out, flags=None, context=None):
        run(kernel, args, out, flags)

    @staticmethod
    def copyto(dst, src, dst_dtype=None, src_dtype=None):
        copyto(dst, src, dst_dtype, src_dtype)

    @staticmethod
    def asarray(x, dtype=None, device=None):
        return asarray(x, dtype, device)

    device_index = staticmethod(device_index)
    on_device = staticmethod(on_device)

    storage_dtype = staticmethod(storage_dtype)
    fast_runner = staticmethod(fast_runner)


BACKEND = _CudaBackend()
