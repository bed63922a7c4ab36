"""Compile CUDA C++ with NVRTC; needs no GPU and no driver. The one compile path and the one
disk-cache key of gpupromote: the CUDA engine (engines/cuda/modules.py) and the tests use these.

    ptx = compile_cuda(source)                      # PTX for sm_90 (H100)
    cubin = compile_cuda(source, cubin=True)        # SASS for sm_90
    compile_cuda(source, include_cupy=True)         # also CuPy's headers (cupy/complex.cuh, ...)
    key = cache_key(source, arch="sm_90", cubin=True)   # what a compiled binary is filed under

NVRTC is reached through whichever binding is importable: cuda-bindings (``cuda.bindings.nvrtc``,
what CI installs) or CuPy's own (``cupy_backends.cuda.libs.nvrtc``, always there beside CuPy on a
GPU machine); GP_NVRTC_BINDING=cuda-bindings|cupy picks one. Both load the same libnvrtc.

Include path, in order: CuPy's bundled CCCL and its headers (only with include_cupy=True, the
order CuPy itself uses), this package's kernels/ folder (gpupromote_math.cuh), the CUDA
headers of the nvidia-cuda-runtime wheel (or $CUDA_PATH/include), then ``options``.
Failures raise CudaCompileError with the NVRTC log and the source lines around the first error.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re

__all__ = [
    "CudaCompileError",
    "compile_cuda",
    "cache_key",
    "compile_options",
    "supported_archs",
    "nvrtc_binding",
    "nvrtc_available",
    "nvrtc_version",
    "cuda_include_dir",
    "kernels_dir",
    "cupy_include_dirs",
    "include_options",
]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # .../gpupromote


class CudaCompileError(RuntimeError):
    """NVRTC rejected a source; ``log`` holds NVRTC's log, ``options`` the options used."""

    def __init__(self, message: str, log: str = "", options: tuple = ()):
        super().__init__(message)
        self.log = log
        self.options = tuple(options)


# ---------------------------------------------------------------------------------------------
# Locating NVRTC and headers


class _CudaBindings:
    """NVRTC through cuda-bindings: calls return (status, *values)."""
    name = "cuda-bindings"

    def __init__(self):
        from cuda.bindings import nvrtc  # imported lazily: importing gpupromote must not need it
        self.nvrtc = nvrtc

    def _check(self, result, what: str):
        status, *values = result
        if status != self.nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, msg = self.nvrtc.nvrtcGetErrorString(status)
            raise CudaCompileError(f"{what} failed: {msg.decode(errors='replace')}")
        return values[0] if len(values) == 1 else tuple(values)

    def version(self) -> tuple[int, int]:
        return tuple(self._check(self.nvrtc.nvrtcVersion(), "nvrtcVersion"))

    def supported_archs(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self._check(self.nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))

    def compile(self, source: str, name: str, options: tuple, cubin: bool):
        """(error text or None, log, binary)."""
        nv = self.nvrtc
        prog = self._check(nv.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
        try:
            (status,) = nv.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
            size = self._check(nv.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            buf = _writable_bytes(size)
            self._check(nv.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
            log = buf.rstrip(b"\0").decode(errors="replace").strip()
            if status != nv.nvrtcResult.NVRTC_SUCCESS:
                _, what = nv.nvrtcGetErrorString(status)
                return what.decode(), log, b""
            get_size, get = (nv.nvrtcGetCUBINSize, nv.nvrtcGetCUBIN) if cubin else (nv.nvrtcGetPTXSize, nv.nvrtcGetPTX)
            out = _writable_bytes(self._check(get_size(prog), "size of the output"))
            self._check(get(prog, out), "the output")
            return None, log, out if cubin else out.rstrip(b"\0")
        finally:
            nv.nvrtcDestroyProgram(prog)


def _writable_bytes(size: int) -> bytes:
    """A new bytes object of ``size`` bytes (at least 2) for cuda-bindings to write a C string into.
    Never ``b" " * size`` as such: for a size of 0 or 1 (an empty log is 1 byte, its NUL) that is
    CPython's shared empty or one-byte object, and NVRTC's NUL written into it turned every b" " of
    the process into b"\\x00" (spaces printed as NULs, torch unable to parse its own schemas)."""
    return b" " * max(size, 2)


class _CupyBindings:
    """NVRTC through CuPy's binding: calls raise NVRTCError."""
    name = "cupy"

    def __init__(self):
        from cupy_backends.cuda.libs import nvrtc
        self.nvrtc = nvrtc

    def version(self) -> tuple[int, int]:
        return tuple(self.nvrtc.getVersion())

    def supported_archs(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self.nvrtc.getSupportedArchs())

    def compile(self, source: str, name: str, options: tuple, cubin: bool):
        nv = self.nvrtc
        prog = nv.createProgram(source, name, (), ())
        try:
            try:
                nv.compileProgram(prog, list(options))
            except nv.NVRTCError as exc:
                return str(exc), nv.getProgramLog(prog).strip(), b""
            log = nv.getProgramLog(prog).strip()
            return None, log, nv.getCUBIN(prog) if cubin else nv.getPTX(prog).rstrip(b"\0")
        finally:
            nv.destroyProgram(prog)


_BINDINGS = {"cuda-bindings": _CudaBindings, "cupy": _CupyBindings}


@functools.lru_cache(maxsize=None)
def _binding():
    wanted = os.environ.get("GP_NVRTC_BINDING")
    if wanted and wanted not in _BINDINGS:
        raise ValueError(f"GP_NVRTC_BINDING must be one of {', '.join(_BINDINGS)}, not {wanted!r}")
    errors = []
    for name in [wanted] if wanted else list(_BINDINGS):
        try:
            return _BINDINGS[name]()
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
    raise ImportError("no NVRTC binding is importable (pip install cuda-bindings nvidia-cuda-nvrtc, or CuPy): "
                      + "; ".join(errors))


def nvrtc_binding() -> str:
    """Which binding compile_cuda uses: "cuda-bindings" or "cupy"."""
    return _binding().name


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library that the binding loads."""
    return _binding().version()


@functools.lru_cache(maxsize=None)
def supported_archs() -> tuple[int, ...]:
    """The compute capabilities this NVRTC generates code for (75, 80, ..., 90, ...)."""
    return _binding().supported_archs()


@functools.lru_cache(maxsize=None)
def nvrtc_available() -> tuple[bool, str]:
    """(True, "NVRTC 13.5 ...") if a trivial program compiles, else (False, why not)."""
    try:
        major, minor = nvrtc_version()
    except ImportError as exc:
        return False, str(exc)
    except Exception as exc:  # library missing, wrong version, ...
        return False, f"NVRTC could not be loaded: {type(exc).__name__}: {exc}"
    try:
        compile_cuda('extern "C" __global__ void gp_probe(int* p) { *p = 1; }')
    except Exception as exc:
        return False, f"NVRTC {major}.{minor} loaded but cannot compile: {exc}"
    return True, f"NVRTC {major}.{minor}, CUDA headers in {cuda_include_dir()}"


@functools.lru_cache(maxsize=None)
def cuda_include_dir() -> str | None:
    """Folder holding cuda_runtime.h / cuda_fp16.h: the nvidia-cuda-runtime wheel, else $CUDA_PATH."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
        if found:
            return str(found)
    except Exception:  # cuda-pathfinder missing or too old: look ourselves
        pass
    spec = importlib.util.find_spec("nvidia")
    for root in list(spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/include", "cuda_runtime/include"):
            path = os.path.join(root, sub)
            if os.path.isfile(os.path.join(path, "cuda_runtime.h")):
                return path
    for env in ("CUDA_PATH", "CUDA_HOME"):
        path = os.path.join(os.environ.get(env, ""), "include")
        if os.environ.get(env) and os.path.isfile(os.path.join(path, "cuda_runtime.h")):
            return path
    return None


@functools.lru_cache(maxsize=None)
def kernels_dir() -> str:
    """gpupromote's CUDA sources: <repo>/kernels in a checkout, gpupromote/_kernels in a wheel."""
    for path in (os.path.join(os.path.dirname(_PKG_DIR), "kernels"), os.path.join(_PKG_DIR, "_kernels")):
        if os.path.isfile(os.path.join(path, "gpupromote_math.cuh")):
            return path
    raise FileNotFoundError(f"gpupromote_math.cuh not found in {_PKG_DIR}/../kernels or {_PKG_DIR}/_kernels")


@functools.lru_cache(maxsize=None)
def cupy_include_dirs() -> tuple[str, ...]:
    """CuPy's include folders in CuPy's own order: bundled CCCL (cub, thrust, libcudacxx) first,
    then cupy/_core/include (for <cupy/carray.cuh>, <cupy/complex.cuh>). Found without importing
    cupy, mirroring cupy._core.core._get_cccl_include_options() / _get_header_dir_path()."""
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("cupy is not installed")
    include = os.path.join(list(spec.submodule_search_locations)[0], "_core", "include")
    if not os.path.isfile(os.path.join(include, "cupy", "carray.cuh")):
        raise FileNotFoundError(f"cupy/carray.cuh not found under {include}")
    cccl = [os.path.join(include, "cupy", "_cccl", d) for d in ("cub", "thrust", "libcudacxx")]
    return tuple(d for d in cccl if os.path.isdir(d)) + (include,)


def include_options(include_cupy: bool = False) -> tuple[str, ...]:
    dirs = list(cupy_include_dirs()) if include_cupy else []
    dirs.append(kernels_dir())
    cuda = cuda_include_dir()
    if cuda:
        dirs.append(cuda)
    return tuple(f"-I{d}" for d in dirs)


# ---------------------------------------------------------------------------------------------
# Compiling


def _arch_option(arch: str, cubin: bool) -> str:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+[a-z]?)", str(arch))
    if not m:
        raise ValueError(f"arch must look like 'sm_90', 'compute_90' or '90', not {arch!r}")
    return f"-arch={'sm' if cubin else 'compute'}_{m.group(1)}"


_LOG_LOCATION = re.compile(r"^(.*?)\((\d+)\): (?:catastrophic )?error", re.MULTILINE)


def _excerpt(source: str, name: str, log: str, context: int = 4) -> str:
    """Numbered lines around the first error NVRTC reports (in the source or a header)."""
    m = _LOG_LOCATION.search(log)
    if not m:
        lines, where, lineno = source.splitlines(), name, 1
    else:
        where, lineno = m.group(1), int(m.group(2))
        if os.path.basename(where) == os.path.basename(name):
            lines = source.splitlines()
        else:
            try:
                with open(where, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                return f"(cannot show {where})"
    lo, hi = max(1, lineno - context), min(len(lines), lineno + context)
    body = "\n".join(f"{'>' if i == lineno and m else ' '}{i:5d} | {lines[i - 1]}" for i in range(lo, hi + 1))
    return f"{where}, lines {lo}-{hi}:\n{body}"


def compile_options(*, arch: str = "sm_90", cubin: bool = False, options: tuple = (),
                    include_cupy: bool = False) -> tuple[str, ...]:
    """Every option compile_cuda passes to NVRTC for these arguments."""
    return ("--std=c++17", _arch_option(arch, cubin)) + include_options(include_cupy) + tuple(options)


def compile_cuda(
    source: str,
    *,
    name: str = "gp_kernel.cu",
    arch: str = "sm_90",
    options: tuple = (),
    include_cupy: bool = False,
    cubin: bool = False,
) -> bytes:
    """Compile ``source`` with NVRTC and return PTX (``cubin=False``) or CUBIN (``cubin=True``).

    Always passes ``--std=c++17`` and the include folders described in the module docstring;
    ``options`` are appended (e.g. ``("-ftz=true", "--device-as-default-execution-space")`` for
    CuPy-like code generation, ``-DNAME=VALUE``, ``-lineinfo``).
    """
    opts = compile_options(arch=arch, cubin=cubin, options=options, include_cupy=include_cupy)
    error, log, binary = _binding().compile(source, name, opts, cubin)
    if error is not None:
        raise CudaCompileError(
            f"NVRTC failed to compile {name} ({error}):\n{log}\n\n"
            f"{_excerpt(source, name, log)}\n\noptions: {' '.join(opts)}",
            log=log,
            options=opts,
        )
    return binary


# ---------------------------------------------------------------------------------------------
# The disk-cache key

CACHE_VERSION = 2  # part of every key: bump when what is stored under a key changes meaning


@functools.lru_cache(maxsize=None)
def _headers_digest(include_cupy: bool) -> str:
    """The text of every header a kernel can include: gpupromote's, and with include_cupy CuPy's
    complex<T> (cupy/complex.cuh and cupy/complex/*)."""
    h = hashlib.sha256()
    folder = kernels_dir()
    paths = [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith((".cuh", ".h"))]
    if include_cupy:
        root = os.path.join(cupy_include_dirs()[-1], "cupy")
        paths.append(os.path.join(root, "complex.cuh"))
        sub = os.path.join(root, "complex")
        if os.path.isdir(sub):
            paths += [os.path.join(sub, n) for n in sorted(os.listdir(sub))]
    for path in paths:
        h.update(os.path.basename(path).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def cache_key(source: str, *, arch: str = "sm_90", cubin: bool = False, options: tuple = (),
              include_cupy: bool = False, driver_version: int | None = None) -> str:
    """The name a compiled ``source`` is filed under: a hash of everything that shapes the binary:
    the source, the headers' text, the options (include folders left out: they differ between
    machines, their headers are hashed instead), the NVRTC and gpupromote versions, the arch, and for PTX the
    driver version (the driver compiles PTX to machine code when it loads it)."""
    if not cubin and driver_version is None:
        raise ValueError("cache_key: PTX is compiled by the driver on load: pass driver_version")
    opts = compile_options(arch=arch, cubin=cubin, options=options, include_cupy=include_cupy)
    from ..disk_cache import package_version
    parts = [f"gpupromote-cuda-{CACHE_VERSION}", package_version(), "cubin" if cubin else f"ptx driver {driver_version}",
             "nvrtc %d.%d" % nvrtc_version(), " ".join(o for o in opts if not o.startswith("-I")),
             _headers_digest(include_cupy), source]
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()
