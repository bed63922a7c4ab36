"""The host execution tier: gpupromote's generated CUDA, run on the CPU behind the real launcher.

Tests only (not a user backend). ``installed()`` points the CUDA engine's seams at host
stand-ins and back, each on the one module that owns it and reads it (cuda_cupy only re-exports
the engine's interface: a name set on it would be read by nothing):

* ``_cuda_device._cp``: the CuPy module, here tests/hostcuda/fake_cupy.py (device memory in host
  buffers with guard zones, CuPy's flags and argument packing, several devices); every part of
  the engine reaches CuPy through ``_cuda_device.cupy_module()``. ``_cuda_device._bf16_native``
  says whether that CuPy has bfloat16 arrays;
* ``_cuda_device._cu_launch_kernel``: the driver's cuLaunchKernel, which the compiled dispatcher
  calls with CuPy's handles, here fake_cupy.cu_launch_kernel (the same checks and launch);
* ``_cuda_modules.load_module(source, any_complex, device_id) -> (module, how)``: instead of NVRTC
  and cuModuleLoad, the very source string is compiled with g++ (tests/hostcuda/builder.py) and
  its kernels are launched over the grid the launcher computes. ``_cuda_modules.loaded_kernel``
  and ``precompile`` look it up there on every load.

Everything between them runs as it does on a GPU: dispatch, gp.Array, the launcher's choice of
kernel (vectorized, N = 1, strided 32/64-bit), coalescing, scalar folding, out= handling.

What this cannot check: NVRTC's code generation (CI compiles every source with NVRTC separately),
CUDA's libm (the host's is used: transcendental results may differ in the last ulps), NaN payloads
made by GPU arithmetic, races between threads (they run one after another), CuPy's real
argument passing (modelled on CuPy 14's).
"""
from __future__ import annotations

import contextlib
import functools
import os

from tests.hostcuda import fake_cupy
from tests.hostcuda.builder import Builder, HostBuildError, toolchain

__all__ = ["installed", "builder", "available", "fake_cupy", "Builder", "HostBuildError"]


def builder(sanitize: str | None = None) -> Builder:
    """One builder per sanitizer mode per process (default: GP_HOSTCUDA_SANITIZE, else alignment):
    its libraries stay loaded between tests."""
    return _builder(sanitize or os.environ.get("GP_HOSTCUDA_SANITIZE") or "alignment")


@functools.lru_cache(maxsize=None)
def _builder(sanitize: str) -> Builder:
    return Builder(sanitize=sanitize)


def available() -> tuple[bool, str]:
    """(True, compiler) when the host tier can build kernels here, else (False, what is missing)."""
    try:
        return True, toolchain()["version"]
    except HostBuildError as exc:
        return False, str(exc)
    except Exception as exc:  # noqa: BLE001 - e.g. no CUDA headers found at all
        return False, f"{type(exc).__name__}: {exc}"


@contextlib.contextmanager
def installed(devices: int = 2, sms: int | None = None, bf16_native: bool = True, sanitize: str | None = None):
    """Run the CUDA engine on the host inside the ``with`` block; yields the fake cupy module.

    ``bf16_native``: whether the modelled CuPy has bfloat16 arrays (CuPy 14 with ml_dtypes does;
    without, gpupromote stores bfloat16 as uint16 bit patterns)."""
    from gpupromote.engines.cuda import device as _cuda_device, modules as _cuda_modules, engine as cuda_cupy

    build = builder(sanitize)

    def load_module(source, any_complex, device_id):
        module = fake_cupy.Module(build, source, device_id)
        return module, ("disk" if build.is_built(module.key) else "compiled")

    saved = (_cuda_device._cp, _cuda_device._bf16_native, _cuda_device._cu_launch_kernel, _cuda_modules.load_module)
    fake_cupy.reset(devices, sms)
    (_cuda_device._cp, _cuda_device._bf16_native, _cuda_device._cu_launch_kernel,
     _cuda_modules.load_module) = fake_cupy, bf16_native, fake_cupy.launch_kernel_address(), load_module
    _forget_kernels(cuda_cupy)
    try:
        yield fake_cupy
    finally:
        (_cuda_device._cp, _cuda_device._bf16_native, _cuda_device._cu_launch_kernel,
         _cuda_modules.load_module) = saved
        _forget_kernels(cuda_cupy)
        fake_cupy.reset()


def _forget_kernels(cuda_cupy):
    """Loaded kernels, launchers and device properties belong to one CuPy (fake or real)."""
    cuda_cupy.clear_memory_cache()
    cuda_cupy.set_launch_config()  # unchanged block size and waves; drops the per-device grid sizes
