"""Launching the CUDA engine's kernels: everything between a call's arrays and one kernel launch.

    run(plan, args, out, flags)       evaluate a Plan or an ir.Kernel into ``out``
    native_launch(plan)               what the compiled dispatcher needs to launch a plan's kernel itself
    set_launch_config(block, waves)   threads per block and waves of resident blocks
    clear_memory_cache()              forget loaded kernels and launchers (the disk cache stays)

This is a call's hot path (a few checks and one launch), kept apart from how kernels are
compiled and cached: a ``_Launcher`` holds what does not change between calls of one kernel on
one device, and asks engines/cuda/modules.py for the kernels themselves on first use. The launch
configuration (``_BLOCK``, ``_WAVES``), the per-device grid sizes and the launchers live here and
only here, guarded by this module's ``_lock`` (the loaded kernels are _cuda_modules' own, under
its lock).

Launch paths (per call, from the arrays' layout):

* contiguous: every array operand and ``out`` contiguous in the same order (C, or all
  Fortran) with ``out``'s size: the vectorized kernel, N elements per thread per step read with
  16-byte loads. Each data pointer's alignment is checked at launch; a misaligned view (a[1:])
  takes the same loop with N = 1.
* strided: broadcast, strided, negative strides, overlapping-free ``out`` of any layout. Shapes
  and byte strides are coalesced on the host (dimensions of extent 1 dropped, contiguous runs
  merged) and passed as kernel parameters to a kernel specialized on the remaining rank, in 32-bit
  index math when every offset fits, else 64-bit.
"""
from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

from . import source as S
from ...core import caches
from .device import cupy_module, launch_kernel_address
from .modules import forget_kernels, loaded_kernel

__all__ = ["run", "native_launch", "NativeLaunch", "set_launch_config", "clear_memory_cache"]

_BLOCK = int(os.environ.get("GP_CUDA_BLOCK", "256"))
# Blocks per SM resident at once (2048 threads / SM on sm_80+) times this many waves: the grid of
# the grid-stride loops. One full wave keeps every SM busy without re-launch overhead.
_WAVES = int(os.environ.get("GP_CUDA_WAVES", "1"))

_lock = threading.RLock()
_launchers: dict = {}   # (device, plan.key) -> _Launcher
_device_info: dict = {}


def _max_blocks(device_id: int) -> int:
    m = _device_info.get(device_id)
    if m is None:
        attrs = cupy_module().cuda.Device(device_id).attributes
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
    caches.clear_all()   # the compiled dispatcher's entries hold the old configuration
    return old


def clear_memory_cache() -> None:
    """Forget loaded kernels (the disk cache stays): the next call loads from disk."""
    with _lock:
        forget_kernels()
        _launchers.clear()
        _by_id.clear()
    caches.clear_all()   # and the compiled dispatcher's entries, which hold loaded kernels


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
        self.vec = loaded_kernel(self.kernel, ("contig", self.width), self.device)
        return self.vec

    def _load_flat(self):
        self.flat = loaded_kernel(self.kernel, ("contig", 1), self.device)
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
            k = self.strided[key] = loaded_kernel(self.kernel, ("strided", ndim, bits), self.device)
        grid = min(-(-n // _BLOCK), self.max_blocks)
        params = [np.int64(e) for e in extents] + [np.int64(s) for st in strides for s in st]
        k((grid,), (_BLOCK,), (np.int64(n), *scalars, out, *arrays, *tail, *params))
        return out


_by_id: dict = {}       # (id(plan), device) -> (plan, _Launcher): the hot path, no hashing of the plan


def _launcher(plan):
    """The launcher of a plan's one-node kernel, or of an ir.Kernel."""
    dev = cupy_module().cuda.runtime.getDevice()
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


class NativeLaunch(NamedTuple):
    """How the compiled dispatcher (gpupromote/dispatch/fastpath/device.c, "CUDA entries") launches one plan's
    contiguous kernel with cuLaunchKernel: the same kernel, parameters and grid as _Launcher."""
    address: int        # cuLaunchKernel
    function: int       # the CUfunction of the vectorized contiguous kernel
    kernel: object      # the CuPy function holding it (and its module) loaded
    device: int         # where it is loaded
    width: int          # elements per thread per step
    block: int
    max_blocks: int
    itemsizes: tuple    # per operand: bytes per element of an array, 0 for a folded scalar
    aligns: tuple       # per operand: the alignment its data pointer needs for this kernel, 0 if folded
    out_align: int
    scalars: tuple      # per operand: (C type, complex split) of a folded scalar parameter, else None


def native_launch(plan) -> NativeLaunch | None:
    """The launch of ``plan``'s contiguous kernel on the current device, for calls the compiled
    dispatcher runs itself; None when there is none to give (a kernel with pre-launch check
    flags, or no driver library to call)."""
    address = launch_kernel_address()
    L = _launcher(plan)
    if L.nflags or not address:
        return None
    k = L.vec or L._load_vec()
    n = len(L.kernel.params)
    itemsizes, aligns, scalars = [0] * n, [0] * n, [None] * n
    for i, size, align in zip(L.arrays, L.itemsizes, L.aligns):
        itemsizes[i], aligns[i] = size, align
    for i, ctype, split in S.scalar_parameters(L.kernel):
        scalars[i] = (ctype, split)
    # A RawKernel's CUfunction is its `kernel` (a cupy.cuda.Function, loaded on this device)
    return NativeLaunch(address, int(k.kernel.ptr), k, L.device, L.width, _BLOCK, L.max_blocks, tuple(itemsizes),
                        tuple(aligns), L.out_align, tuple(scalars))
