"""CuPy, CUDA devices and device storage: the layer of the CUDA engine that every other part
stands on, and that needs no kernel.

    cupy_module()               the CuPy module (imported on first use), or CudaUnavailable
    available()                 whether CuPy sees a CUDA device
    storage_dtype(dtype)        the numpy dtype of the CuPy array that stores a gpupromote DType
    device_index, on_device     which device a call or an allocation runs on
    empty(shape, dtype)         a device array in the storage dtype

The CuPy module handle (``_cp``) and the driver's launch function (``_cu_launch_kernel``) live
here and only here: the compile cache
(engines/cuda/modules.py) and the launcher (engines/cuda/launch.py) reach CuPy through
``cupy_module()``, so the host test tier (tests/hostcuda) swaps CuPy for all of them by setting
``_cp`` on this module.

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

Nothing here imports cupy at module import: the package works on a machine without CUDA.
"""
from __future__ import annotations

import numpy as np

from ...core import dtypes as D

__all__ = ["CudaUnavailable", "cupy_module", "available", "storage_dtype", "device_index", "on_device", "empty",
           "launch_kernel_address"]


class CudaUnavailable(RuntimeError):
    """CuPy or a CUDA device is missing: the message says which and what to do."""


_cp = None


def cupy_module():
    """The CuPy module, imported on first use; CudaUnavailable when it cannot be."""
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


_cu_launch_kernel = None   # cuLaunchKernel's address (0: none found); the host tier sets its own


def launch_kernel_address() -> int:
    """The address of the CUDA driver's cuLaunchKernel, which the compiled dispatcher calls with
    CuPy's handles (gpupromote/dispatch/fastpath/device.c); 0 where the driver library cannot be opened."""
    global _cu_launch_kernel
    if _cu_launch_kernel is None:
        import ctypes
        try:
            # the library CuPy has loaded already: the same driver, contexts and streams
            driver = ctypes.CDLL("libcuda.so.1")
            _cu_launch_kernel = ctypes.cast(driver.cuLaunchKernel, ctypes.c_void_p).value or 0
        except (OSError, AttributeError):
            _cu_launch_kernel = 0
    return _cu_launch_kernel


def available() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and sees a CUDA device, else (False, why not)."""
    try:
        cp = cupy_module()
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
    cp = cupy_module()
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
    return cupy_module().cuda.Device(device_index(device))


def empty(shape, dtype, device=None):
    """A new, uninitialized device array for ``dtype`` in its storage dtype, on ``device``
    (default: the current device)."""
    cp = cupy_module()
    with cp.cuda.Device(device_index(device)):
        return cp.empty(shape, storage_dtype(dtype))
