"""The CUDA engine: executes Plans on CuPy arrays with kernels from _cuda_source.

    run(plan, args, out)        the backend interface (see gpupromote/backends/__init__.py)
    storage_dtype(dtype)        the numpy dtype of the CuPy array that stores a gpupromote DType
    BACKEND                     the object the backend registry loads (empty, run, copyto, asarray)

This is the engine's entry module: the names in ``__all__`` are its interface. Here are the two
device-array functions that launch kernels (asarray, copyto) and BACKEND; the rest lives in

    engines/cuda/device.py    CuPy, devices, storage dtypes (which CuPy dtype holds each DType), empty
    engines/cuda/modules.py   compiling kernels with NVRTC; the disk cache and the loaded kernels
    engines/cuda/launch.py    the launcher: layouts, alignment, grid sizes; run, native_launch

Each piece of mutable state has one owner module, where it is read: the CuPy handle ``_cp`` in
_cuda_device, ``load_module`` and the loaded kernels in _cuda_modules, the launch configuration and
the launchers in _cuda_launch. Patch them there: a name rebound on this module is read by nothing.

Devices: a call runs on the device its device operands (and ``out``) live on, whichever is
current, and allocates its result there; operands on two devices are refused (ValueError). Host
NumPy arrays (other than 0-d ones, which are folded as scalars) are refused beside device
operands, as CuPy refuses them (TypeError): copy them with ``cupy.asarray`` first.

Nothing here imports cupy at module import: the package works on a machine without CUDA.
"""
from __future__ import annotations

import numpy as np

from ...core import dtypes as D
from . import source as S
from .device import CudaUnavailable, available, cupy_module, device_index, empty, on_device, storage_dtype
from .launch import clear_memory_cache, native_launch, run, set_launch_config
from .modules import kernel_cache_dir, precompile

__all__ = ["run", "storage_dtype", "empty", "copyto", "asarray", "device_index", "on_device", "available",
           "precompile", "kernel_cache_dir", "clear_memory_cache", "set_launch_config", "native_launch",
           "device_handles", "BACKEND", "CudaUnavailable"]


def asarray(x, dtype=None, device=None):
    """Device storage of ``dtype`` (default: x's own) for an array-like, on ``device`` (default: the
    current device, or where a CuPy ``x`` lives).

    Host data is converted on the host (NumPy / ml_dtypes casts; complex32 packed as two float16
    bit patterns; narrow floats kept as bit patterns where CuPy has no such dtype) and copied to
    the device. A CuPy array is returned as it is when it already is on that device in that
    dtype; on another device it is copied across (as cupy.asarray does); of another dtype it is
    cast on the device with copyto (its CuPy dtype taken as its logical dtype)."""
    cp = cupy_module()
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
        with cupy_module().cuda.Device(dst.device.id):
            run(S.cast_plan(sd, dd), [src], dst)
    return dst


def device_handles():
    """(the CuPy module, (ndarray, empty, runtime.getDevice, get_current_stream, driver.CUDADriverError,
    runtime.memGetInfo)): what the compiled dispatcher calls CuPy through when it launches a kernel
    itself. memGetInfo is any runtime call: it makes the current device's primary context current
    on the calling thread, which cuLaunchKernel needs (CuPy's launcher makes one too, once per thread)."""
    cp = cupy_module()
    return cp, (cp.ndarray, cp.empty, cp.cuda.runtime.getDevice, cp.cuda.get_current_stream,
                cp.cuda.driver.CUDADriverError, cp.cuda.runtime.memGetInfo)


class _CudaBackend:
    """The object gpupromote.engines.get_backend("cuda") returns."""
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
    native_launch = staticmethod(native_launch)
    device_handles = staticmethod(device_handles)


BACKEND = _CudaBackend()
