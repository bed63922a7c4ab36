"""Compile the CUDA sources that gpupromote hands to NVRTC with g++, into host shared libraries.

What the builder reads of a source is what NVRTC reads: the text, its ``#include``\\ s and the
``extern "C" __global__`` signatures. It

* force-includes gp_hostcuda_shim.h (CUDA's keywords and intrinsics for the host, see there);
* compiles against a copy of gpupromote's kernels/*.cuh in which each ``asm("INSN" : "=c"(out) :
  "c"(in));`` became ``gp_hostcuda_asm("INSN", out, in);`` (g++ cannot run PTX);
* appends, per kernel, a launch function that runs every (block, thread) of a 1-d grid in turn and
  takes cuLaunchKernel's ``void** params`` (one pointer to each argument's bytes), and a function
  that reports ``sizeof`` of each parameter so the launch can check the bytes CuPy packs;
* links the UBSan checks to gp_hostcuda_faults.h instead of libubsan, so faults are counted per
  launch (see there).

Builds are cached on disk by a hash of everything that shapes the library (source, shim, patched
headers, CUDA's and CuPy's headers used, flags, compiler version) in GP_HOSTCUDA_CACHE (default
$XDG_CACHE_HOME/gpupromote/hostcuda, i.e. ~/.cache/...): a second ``make test`` loads them. Sources
handed over before the first launch are compiled together, GP_HOSTCUDA_JOBS g++ processes at a
time (default: the CPU count).

Sanitizer modes (GP_HOSTCUDA_SANITIZE): ``alignment`` (default; the GPU's misaligned-address
fault) or ``undefined`` (all of -fsanitize=undefined and float-cast-overflow: signed overflow,
bad shifts, out-of-range float to integer conversions, ... that the GPU would not report but that
make results compiler-dependent).
"""
from __future__ import annotations

import concurrent.futures as cf
import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "gp_hostcuda_shim.h")
FAULTS = os.path.join(HERE, "gp_hostcuda_faults.h")
BUILDER_VERSION = "3"  # bump when the appended launch code changes meaning

SANITIZE_FLAGS = {
    "alignment": ("-fsanitize=alignment", "-fsanitize-recover=all"),
    "undefined": ("-fsanitize=undefined,float-cast-overflow", "-fno-sanitize=vptr", "-fsanitize-recover=all"),
}
# -O1: fast enough to run a few hundred thousand CUDA threads per launch, cheap to compile.
# -ffp-contract=off / -fno-fast-math: every float operation rounded on its own, as NVRTC with
# -fmad=false. -fno-strict-aliasing: the vector loads read T arrays through uint4 pointers, which
# CUDA allows.
BASE_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-w", "-ffp-contract=off", "-fno-fast-math", "-fno-strict-aliasing")

_ASM = re.compile(r'asm\("([^"]+)"\s*:\s*"=\w"\((\w+)\)\s*:\s*"\w"\((\w+)\)\);')
_ANY_ASM = re.compile(r"\basm\s*(?:volatile\s*)?\(")
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


class HostBuildError(RuntimeError):
    """g++ refused a source, or the toolchain for the host tier is missing."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its C type (without __restrict__), name, and whether it is a pointer."""
    ctype: str
    name: str

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def pointee(self) -> str:
        """The pointed-to type without const (``float`` for ``const float*``)."""
        return " ".join(w for w in self.ctype[:-1].split() if w != "const")


def kernel_signatures(source: str) -> dict[str, tuple[Param, ...]]:
    """{kernel name: parameters} of every ``extern "C" __global__`` function in ``source``."""
    out = {}
    for name, params in _KERNEL.findall(source):
        parsed = []
        for text in params.split(","):
            text = " ".join(text.replace("__restrict__", " ").replace("*", " * ").split())
            m = re.fullmatch(r"(.+?)\s*(\w+)", text)
            if not m:
                raise HostBuildError(f"kernel {name}: cannot parse the parameter {text!r}")
            ctype = m.group(1).replace(" *", "*")
            parsed.append(Param(ctype, m.group(2)))
        out[name] = tuple(parsed)
    return out


def _launch_code(signatures) -> str:
    """The launch and parameter-size functions appended to a translation unit."""
    lines = ['#include "gp_hostcuda_faults.h"', 'extern "C" {', "thread_local uint3 threadIdx, blockIdx;",
             "thread_local dim3 blockDim, gridDim;"]
    for name, params in signatures.items():
        sizes = " ".join(f"out[{i}] = (int)sizeof({p.ctype});" for i, p in enumerate(params))
        args = ", ".join(f"*({p.ctype}*)params[{i}]" for i, p in enumerate(params))
        lines += [
            f"int gphc_params_{name}(int* out) {{ if (out) {{ {sizes} }} return {len(params)}; }}",
            f"void gphc_launch_{name}(unsigned grid, unsigned block, void** params, int reverse) {{",
            "  gridDim.x = grid; gridDim.y = gridDim.z = 1; blockDim.x = block; blockDim.y = blockDim.z = 1;",
            "  blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;",
            "  jmp_buf escape;  // a misaligned or null access ends the launch here (gp_hostcuda_faults.h)",
            "  gphc_escape = &escape;",
            "  if (setjmp(escape) == 0) {",
            "    for (unsigned bi = 0; bi < grid; ++bi) {",
            "      blockIdx.x = reverse ? grid - 1 - bi : bi;",
            "      for (unsigned ti = 0; ti < block; ++ti) {",
            "        threadIdx.x = reverse ? block - 1 - ti : ti;",
            f"        {name}({args});",
            "      }",
            "    }",
            "  }",
            "  gphc_escape = 0;",
            "}",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _read(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _default_cache_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "gpupromote", "hostcuda")


@functools.lru_cache(maxsize=None)
def toolchain() -> dict:
    """Compiler and include folders, or HostBuildError saying what is missing and how to get it."""
    from gpupromote.engines.cuda import nvrtc as _nvrtc

    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise HostBuildError("no C++ compiler: install g++ (apt-get install g++) or set CXX")
    done = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    version = done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else ""
    if "g++" not in version and "GCC" not in version:
        raise HostBuildError(f"{cxx} is not GCC ({version!r}): the fault handlers follow GCC's UBSan ABI")
    candidates = [_nvrtc.cuda_include_dir()] + [os.path.join(os.environ[e], "include") for e in ("CUDA_PATH", "CUDA_HOME")
                                                  if os.environ.get(e)] + ["/usr/local/cuda/include"]
    cuda = next((d for d in candidates if d and os.path.isfile(os.path.join(d, "crt", "host_defines.h"))
                 and os.path.isfile(os.path.join(d, "cuda_fp16.h"))), None)
    if cuda is None:
        raise HostBuildError("the CUDA headers with crt/host_defines.h are missing: pip install nvidia-cuda-runtime "
                             "nvidia-cuda-crt (the test extra has them), or set CUDA_HOME to a toolkit")
    try:
        cupy_dirs = _nvrtc.cupy_include_dirs()
    except FileNotFoundError as exc:
        raise HostBuildError(f"CuPy's headers (complex<T>, CCCL's nv/target) are needed: pip install cupy-cuda13x ({exc})")
    libcudacxx = [d for d in cupy_dirs if d.endswith("libcudacxx")]
    return {"cxx": cxx, "version": version, "cuda_include": cuda, "cupy_include": cupy_dirs[-1],
            "libcudacxx": libcudacxx, "cupy_dirs": cupy_dirs, "kernels": _nvrtc.kernels_dir()}


class Library:
    """A built translation unit: its kernels' launch functions and the fault counter."""

    def __init__(self, path: str, signatures):
        self.path = path
        self._lib = ctypes.CDLL(path)
        self._lib.gphc_take_faults.restype = ctypes.c_ulonglong
        self._lib.gphc_take_faults.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.signatures = signatures
        self.sizes = {}
        for name, params in signatures.items():
            fn = getattr(self._lib, f"gphc_params_{name}")
            out = (ctypes.c_int * max(1, len(params)))()
            if fn(out) != len(params):
                raise HostBuildError(f"{name}: the compiled kernel has another parameter count than its signature")
            self.sizes[name] = tuple(out[: len(params)])

    def launcher(self, name):
        fn = getattr(self._lib, f"gphc_launch_{name}")
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        fn.restype = None
        return fn

    def take_faults(self) -> tuple[int, str]:
        buf = ctypes.create_string_buffer(1024)
        n = self._lib.gphc_take_faults(buf, len(buf))
        return int(n), buf.value.decode(errors="replace")


class Builder:
    """Sources -> Libraries, through the disk cache; see the module docstring."""

    def __init__(self, cache_dir: str | None = None, sanitize: str | None = None, jobs: int | None = None):
        self.sanitize = sanitize or os.environ.get("GP_HOSTCUDA_SANITIZE", "alignment")
        if self.sanitize not in SANITIZE_FLAGS:
            raise ValueError(f"GP_HOSTCUDA_SANITIZE must be one of {', '.join(SANITIZE_FLAGS)}, not {self.sanitize!r}")
        self.cache_dir = os.path.join(cache_dir or os.environ.get("GP_HOSTCUDA_CACHE") or _default_cache_dir(),
                                      f"v{BUILDER_VERSION}")
        self.jobs = int(jobs or os.environ.get("GP_HOSTCUDA_JOBS") or os.cpu_count() or 1)
        self._tool = toolchain()
        self._lock = threading.Lock()
        self._libraries: dict[str, Library] = {}
        self._pending: dict[str, str] = {}   # key -> source, handed over but not built yet
        self.stats = {"compiled": 0, "from_disk": 0, "compile_seconds": 0.0}
        self._include = self._patched_headers()

    # --- what shapes a build --------------------------------------------------------------------
    def _patched_headers(self) -> str:
        """kernels/*.cuh with their inline PTX rewritten, in a folder named by their content."""
        texts = {}
        for name in sorted(os.listdir(self._tool["kernels"])):
            if not name.endswith(".cuh"):
                continue
            text = _read(os.path.join(self._tool["kernels"], name))
            text = _ASM.sub(r'gp_hostcuda_asm("\1", \2, \3);', text)
            if _ANY_ASM.search(text):
                raise HostBuildError(f"kernels/{name}: an asm statement of a form the host rewrite does not know "
                                     f"(only asm(\"INSN\" : \"=c\"(out) : \"c\"(in)); is rewritten)")
            texts[name] = text
        digest = hashlib.sha256("\0".join(f"{k}\0{v}" for k, v in texts.items()).encode()).hexdigest()[:16]
        folder = os.path.join(self.cache_dir, f"include-{digest}")
        if not os.path.isdir(folder):
            os.makedirs(self.cache_dir, exist_ok=True)
            tmp = tempfile.mkdtemp(dir=self.cache_dir, prefix=".include-")
            for name, text in texts.items():
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write(text)
            try:
                os.rename(tmp, folder)
            except OSError:  # another process made it first: same content
                shutil.rmtree(tmp, ignore_errors=True)
        self._headers_digest = digest
        return folder

    def flags(self, complex_: bool) -> list[str]:
        t = self._tool
        incl = [f"-I{self._include}", f"-I{HERE}", f"-I{t['cuda_include']}", *(f"-I{d}" for d in t["libcudacxx"])]
        if complex_:
            incl += ["-DGP_HOSTCUDA_COMPLEX", *(f"-I{d}" for d in t["cupy_dirs"] if d not in t["libcudacxx"])]
        return [*BASE_FLAGS, *SANITIZE_FLAGS[self.sanitize], "-include", SHIM, *incl]

    @functools.cached_property
    def _environment_digest(self) -> str:
        """The compiler, the shim, the fault handlers and the CUDA / CuPy headers the host code uses."""
        t = self._tool
        h = hashlib.sha256()
        for part in (BUILDER_VERSION, t["version"], _read(SHIM), _read(FAULTS), self._headers_digest):
            h.update(part.encode())
            h.update(b"\0")
        for path in (os.path.join(t["cuda_include"], "cuda_fp16.hpp"), os.path.join(t["cuda_include"], "cuda_bf16.hpp"),
                     os.path.join(t["cupy_include"], "cupy", "complex.cuh")):
            if os.path.isfile(path):
                h.update(_read(path).encode())
        return h.hexdigest()

    def key(self, source: str) -> str:
        complex_ = "cupy/complex.cuh" in _INCLUDE.findall(source)
        # why: -I paths differ between checkouts; the headers they lead to are hashed instead
        portable = [f for f in self.flags(complex_) if not f.startswith("-I") and f != SHIM]
        h = hashlib.sha256()
        for part in (self._environment_digest, " ".join(portable), source):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:32]

    # --- building -------------------------------------------------------------------------------
    def is_built(self, key: str) -> bool:
        """Whether the library of ``key`` is loaded or on disk (no compile needed)."""
        return key in self._libraries or os.path.isfile(os.path.join(self.cache_dir, f"{key}.so"))

    def submit(self, source: str) -> str:
        """Hand a source over (built with the next batch, or at its first use); returns its key."""
        key = self.key(source)
        with self._lock:
            if key not in self._libraries:
                self._pending.setdefault(key, source)
        return key

    def library(self, key: str) -> Library:
        """The library of a submitted source; builds every pending source first, in parallel."""
        lib = self._libraries.get(key)
        if lib is None:
            self.build_pending()
            lib = self._libraries[key]
        return lib

    def build_pending(self) -> None:
        with self._lock:
            todo = list(self._pending.items())
        if not todo:
            return
        with cf.ThreadPoolExecutor(max(1, min(self.jobs, len(todo)))) as pool:
            paths = list(pool.map(lambda kv: self._build(*kv), todo))
        with self._lock:
            for (key, source), path in zip(todo, paths):
                self._libraries[key] = Library(path, kernel_signatures(source))
                self._pending.pop(key, None)

    def _build(self, key: str, source: str) -> str:
        import time
        so = os.path.join(self.cache_dir, f"{key}.so")
        if os.path.isfile(so):
            self.stats["from_disk"] += 1
            return so
        signatures = kernel_signatures(source)
        if not signatures:
            raise HostBuildError("the source defines no extern \"C\" __global__ kernel")
        complex_ = "cupy/complex.cuh" in _INCLUDE.findall(source)
        os.makedirs(self.cache_dir, exist_ok=True)
        work = tempfile.mkdtemp(dir=self.cache_dir, prefix=f".{key[:8]}-")
        obj, tmp_so, tmp_cpp = (os.path.join(work, f"{key}{ext}") for ext in (".o", ".so", ".cpp"))
        # The source stays beside its library: the line numbers of a fault report point into it.
        cpp = os.path.join(self.cache_dir, f"{key}.cpp")
        with open(tmp_cpp, "w", encoding="utf-8") as f:
            f.write(source)
            f.write("\n// ---- appended by tests/hostcuda/builder.py --------------------------------\n")
            f.write(_launch_code(signatures))
        os.replace(tmp_cpp, cpp)
        t0 = time.perf_counter()
        cxx = self._tool["cxx"]
        # Compiled with the sanitizer, linked without its runtime (gp_hostcuda_faults.h has the
        # handlers); -z defs turns a handler the header lacks into a link error naming it.
        steps = [[cxx, *self.flags(complex_), "-c", cpp, "-o", obj],
                 [cxx, "-shared", "-Wl,-Bsymbolic", "-Wl,-z,defs", obj, "-o", tmp_so]]
        try:
            for cmd in steps:
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode:
                    raise HostBuildError(f"g++ failed on a translation unit of {len(signatures)} kernel(s) "
                                         f"({', '.join(list(signatures)[:3])}...); source kept at {cpp}\n"
                                         f"$ {' '.join(cmd)}\n{done.stderr[-6000:]}")
            os.replace(tmp_so, so)  # why: another process sees a whole library or none
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.stats["compiled"] += 1
        self.stats["compile_seconds"] += time.perf_counter() - t0
        return so
