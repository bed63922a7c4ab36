"""``gp.show_config()``: what this installation is made of, for a bug report or a puzzled user.

Versions (gpupromote, Python, the libraries it needs and the optional ones it works with), whether
the compiled fast path was built and is in use, the CPU engine's thread count, where compiled
kernels are cached, and whether CuPy sees a GPU. Every probe is guarded: a missing optional
package, a CUDA driver that fails to load or a cache folder that cannot be made is reported as
such, never raised, because this is what one runs when something is wrong.

Versions of optional packages are read from their installed metadata, without importing them
(importing torch or jax takes seconds and starts their runtimes); only CuPy is imported, and only
to ask for the GPU.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

__all__ = ["show_config", "config"]

_REQUIRED = ("numpy", "ml_dtypes", "numba", "llvmlite")
# import name -> what it adds (the distribution's name is looked up: cupy ships as cupy-cuda13x, ...)
_OPTIONAL = {"cupy": "the CUDA engine", "cuda.bindings": "NVRTC (compiling CUDA sources)",
             "torch": "torch tensors in and out", "jax": "JAX arrays in and out", "dask": "dask arrays",
             "distributed": "dask clusters", "matplotlib": "pictures (python -m gpupromote table --png)"}


def _version_of(import_name: str) -> str:
    """The installed version of the distribution that provides ``import_name``, or why there is none."""
    top = import_name.split(".")[0]
    names = importlib.metadata.packages_distributions().get(top, [])
    if import_name == "cuda.bindings":
        names = [n for n in names if n.startswith("cuda-bindings") or n.startswith("cuda_bindings")] or names
    for name in names or [top]:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return version if name.replace("_", "-") == top.replace("_", "-") else f"{version} ({name})"
    return "not installed"


def _fast_path() -> str:
    """Whether the C extension (gpupromote/dispatch/fastpath/) was built, and whether it serves calls."""
    try:
        from ..dispatch import _fastpath
    except ImportError as exc:
        return (f"missing ({exc}): every call runs the Python path, slower on small arrays; reinstall with a C "
                f"compiler (pip install .) to build it")
    import gpupromote
    in_use = isinstance(gpupromote.add, _fastpath.Op)
    if os.environ.get("GPUPROMOTE_PURE_PYTHON"):
        return f"built ({_fastpath.__file__}), off: GPUPROMOTE_PURE_PYTHON is set"
    return f"built ({_fastpath.__file__})" + ("" if in_use else ", not in use (an extension built from an older "
                                                                "source: reinstall)")


def _sanitizer() -> str:
    from ..dispatch import sanitize
    action = sanitize.current()
    if action is None:
        return "off (gp.sanitize() or GPUPROMOTE_SANITIZE=1 reports lossy promotions)"
    return f"{action}" + (" (GPUPROMOTE_SANITIZE)" if os.environ.get("GPUPROMOTE_SANITIZE", "").strip() else "")


def _threads() -> str:
    try:
        from ..engines.cpu.threads import get_num_threads
        n = get_num_threads()
    except Exception as exc:  # noqa: BLE001 - a bad GPUPROMOTE_NUM_THREADS is reported, not raised
        return f"unknown ({exc})"
    source = "GPUPROMOTE_NUM_THREADS" if os.environ.get("GPUPROMOTE_NUM_THREADS", "").strip() else \
        "the cores Numba sees; set GPUPROMOTE_NUM_THREADS or gp.set_num_threads(n) to change it"
    return f"{n} ({source})"


def _cpu_cache() -> str:
    try:
        from ..engines.cpu import cache
    except Exception as exc:  # noqa: BLE001 - Numba missing or broken: say so
        return f"unavailable ({type(exc).__name__}: {exc})"
    read = [str(p) for p in cache.READ_DIRS if str(p) != str(cache.WRITE_DIR)]
    return str(cache.WRITE_DIR) + (f" (also read: {', '.join(read)})" if read else "")


def _cuda() -> dict:
    """The GPU CuPy sees (or why none), and where compiled CUDA kernels are kept."""
    out = {}
    try:
        from ..engines.cuda.modules import kernel_cache_dir
        out["kernel cache"] = kernel_cache_dir()
    except Exception as exc:  # noqa: BLE001
        out["kernel cache"] = f"unavailable ({type(exc).__name__}: {exc})"
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - not installed, or its CUDA libraries fail to load
        out["GPU"] = f"none: CuPy cannot be imported ({type(exc).__name__}: {str(exc)[:120]}); pip install \".[cuda]\""
        return out
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        names = [cupy.cuda.runtime.getDeviceProperties(i)["name"] for i in range(count)]
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
        out["GPU"] = f"{count} visible: {', '.join(names)}" if count else "none visible to CuPy"
        out["CUDA runtime"] = _cuda_version(cupy.cuda.runtime.runtimeGetVersion())
        out["CUDA driver"] = _cuda_version(cupy.cuda.runtime.driverGetVersion())
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        out["GPU"] = f"none: {type(exc).__name__}: {str(exc)[:120]}"
    return out


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def config() -> dict:
    """The report as a dict of sections, each a dict of text values (what show_config prints)."""
    import gpupromote
    return {
        "gpupromote": {"version": gpupromote.__version__, "location": os.path.dirname(gpupromote.__file__),
                       "compiled fast path": _fast_path(), "policy": gpupromote.get_policy_name(),
                       "sanitizer": _sanitizer()},
        "Python": {"version": sys.version.split()[0], "implementation": platform.python_implementation(),
                   "executable": sys.executable, "platform": platform.platform()},
        "required": {name: _version_of(name) for name in _REQUIRED},
        "optional": {name: f"{_version_of(name)}: {use}" for name, use in _OPTIONAL.items()},
        "CPU engine": {"threads": _threads(), "kernel cache": _cpu_cache()},
        "CUDA engine": _cuda(),
    }


def show_config(mode: str = "stdout"):
    """Print what this installation is made of (``mode="stdout"``), or return it as a dict of
    sections (``mode="dicts"``), as ``np.show_config`` does."""
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"show_config(mode={mode!r}): use 'stdout' (print) or 'dicts' (return the report)")
    report = config()
    if mode == "dicts":
        return report
    for section, entries in report.items():
        print(f"{section}:")
        width = max(len(k) for k in entries)
        for key, value in entries.items():
            print(f"  {key + ':':<{width + 1}} {value}")
    return None
