"""A CuPy stand-in whose device memory is host memory and whose kernels are g++ builds.

It has what gpupromote's CUDA engine and tests use of CuPy, with CuPy's behaviour where it
matters to them:

* ``ndarray``: a NumPy view onto a fake device allocation, with CuPy's attributes only: ``flags``
  has c_contiguous, f_contiguous and owndata (no ``writeable``), ``data.ptr``, ``device``,
  ``__cuda_array_interface__`` and no ``__array_interface__``; ``__array__`` raises as CuPy's does
  (no silent device-to-host copy), ``get()`` copies to the host; operators and NumPy ufuncs run on
  the storage dtype and return device arrays, and a host ``numpy.ndarray`` operand is refused with
  CuPy's TypeError.
* allocations: 512-byte aligned like CuPy's memory pool, filled with garbage (0xCD) like fresh
  device memory, between two guard zones (0xA5) that every launch checks afterwards; huge
  allocations are lazily mapped zero pages, so a view of a few elements 3 GiB apart costs nothing.
* devices: ``DEVICES`` of them (default 2); allocations belong to the current device
  (``cuda.Device(i)`` switches it); ``asarray`` of an array on another device copies it, as CuPy's
  does. A kernel launched while another device than the one its module was loaded on is current,
  or given a pointer into another device's memory, fails like CUDA (no peer access).
* launches: ``kernel((grid,), (block,), args)`` packs each argument as CuPy's
  cupy/cuda/function.pyx does (an ndarray is its 8-byte data pointer, a NumPy scalar its own bytes,
  a Python bool / int / float / complex a bool / int64 / float64 / complex128), checks the bytes
  and the type against the parameter's C type in the kernel's signature, runs every (block,
  thread) of the grid, then raises CUDADriverError for any fault the sanitizer saw and for any
  byte written outside an allocation.
* driver-level launches: ``cu_launch_kernel`` (at ``launch_kernel_address()``) is cuLaunchKernel
  for these kernels, called with a function's ``ptr`` and the parameters' addresses: it refuses
  an unknown handle, a grid or block out of range, a pointer into no allocation or into another
  device's memory, and a thread on which no runtime call has made the device's context current
  (CuPy's launcher makes one; a pool allocation does not), then launches as above. A failure
  returns its CUresult and leaves its message for ``CUDADriverError(status)``.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import threading
import types
import weakref

import numpy as np

from tests.hostcuda.builder import Builder

__version__ = "14.2.0+hostcuda"  # the CuPy whose argument packing this models

GUARD = 256          # guard bytes before and after every allocation
ALIGN = 512          # CuPy's memory pool hands out 512-byte aligned blocks
_GUARD_BYTE = 0xA5
_FRESH_BYTE = 0xCD   # fresh device memory is not zero: a kernel that skips an element shows it
_LAZY_BYTES = 64 << 20  # larger allocations are zero pages, mapped when touched

DEVICES = 2
SMS = int(os.environ.get("GP_HOSTCUDA_SMS", "132"))  # an H100's SM count: the launcher sizes grids from it
REVERSE_ORDER = os.environ.get("GP_HOSTCUDA_ORDER", "forward") == "reverse"  # run blocks / threads backwards

launches: list = []   # (kernel name, grid, block, device) of every launch, for tests to inspect
driver_launches = 0   # of them, those made through cu_launch_kernel (gpupromote's compiled dispatcher)
_current = 0
_driver_failures: list = []   # the message of a failed cu_launch_kernel, for CUDADriverError(status)


# ---------------------------------------------------------------------------------------------
# cupy.cuda

# CUresult values of the names the emulation raises (cuda.h)
_STATUS = {"CUDA_ERROR_INVALID_VALUE": 1, "CUDA_ERROR_INVALID_IMAGE": 200, "CUDA_ERROR_INVALID_CONTEXT": 201,
           "CUDA_ERROR_INVALID_HANDLE": 400, "CUDA_ERROR_ILLEGAL_ADDRESS": 700,
           "CUDA_ERROR_MISALIGNED_ADDRESS": 716}


class CUDADriverError(RuntimeError):
    """cupy.cuda.driver.CUDADriverError: the message starts with the CUresult name, ``status`` is
    its value. Built from a CUresult (as CuPy builds it from a status), the message is the one
    the last failed driver-level launch (cu_launch_kernel) left."""

    def __init__(self, message):
        if isinstance(message, int):
            status, message = message, _driver_failures.pop() if _driver_failures else f"CUresult {message}"
        else:
            status = _STATUS.get(str(message).split(":")[0])
        super().__init__(message)
        self.status = status


class CUDARuntimeError(RuntimeError):
    """cupy.cuda.runtime.CUDARuntimeError."""


class Device:
    """cupy.cuda.Device: a device id, its properties, and a context manager making it current."""

    def __init__(self, device=None):
        self.id = _current if device is None else int(device)
        if not 0 <= self.id < DEVICES:
            raise CUDARuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id} ({DEVICES} devices)")
        self._saved = []

    compute_capability = property(lambda self: "90")
    attributes = property(lambda self: {"MultiProcessorCount": SMS, "MaxThreadsPerMultiProcessor": 2048})

    def use(self):
        global _current
        _current = self.id

    def __enter__(self):
        global _current
        self._saved.append(_current)
        _current = self.id
        return self

    def __exit__(self, *exc):
        global _current
        _current = self._saved.pop()
        return False

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("cuda", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def _get_device():
    return _current


def _set_device(i):
    Device(i).use()


_threads = threading.local()   # .contexts: the devices whose context this thread has made current


def _ensure_context():
    """A runtime call makes the current device's primary context current on the calling thread."""
    if not hasattr(_threads, "contexts"):
        _threads.contexts = set()
    _threads.contexts.add(_current)


def _mem_get_info():
    _ensure_context()
    return (80 << 30, 80 << 30)


def _device_properties(i):
    Device(i)
    return {"name": b"gpupromote host emulation (g++)", "major": 9, "minor": 0, "multiProcessorCount": SMS}


class Stream:
    """cupy.cuda.Stream: the emulation has the null stream only."""
    ptr = 0


def _get_current_stream(device_id=-1):
    return Stream.null


Stream.null = Stream()

cuda = types.SimpleNamespace(
    Device=Device,
    Stream=Stream,
    get_current_stream=_get_current_stream,
    runtime=types.SimpleNamespace(getDevice=_get_device, setDevice=_set_device, getDeviceCount=lambda: DEVICES,
                                  memGetInfo=_mem_get_info,
                                  getDeviceProperties=_device_properties, driverGetVersion=lambda: 13000,
                                  CUDARuntimeError=CUDARuntimeError),
    driver=types.SimpleNamespace(CUDADriverError=CUDADriverError),
)


# ---------------------------------------------------------------------------------------------
# Memory

class _Allocation:
    """One cudaMalloc: a host buffer with guard zones on both sides, on one device."""

    def __init__(self, nbytes: int, device: int):
        self.nbytes, self.device = nbytes, device
        total = nbytes + 2 * GUARD + ALIGN
        if nbytes > _LAZY_BYTES:
            self.raw = np.zeros(total, np.uint8)      # calloc: untouched pages are never mapped
        else:
            self.raw = np.full(total, _FRESH_BYTE, np.uint8)
        self.start = GUARD + (-(self.raw.ctypes.data + GUARD)) % ALIGN
        self.raw[: self.start] = _GUARD_BYTE
        self.raw[self.start + nbytes:] = _GUARD_BYTE
        self.ptr = self.raw.ctypes.data + self.start
        self.body = self.raw[self.start: self.start + nbytes]

    def damaged_guards(self) -> list[int]:
        """Offsets (relative to the allocation's first byte) of guard bytes that were written."""
        head = np.flatnonzero(self.raw[: self.start] != _GUARD_BYTE) - self.start
        tail = np.flatnonzero(self.raw[self.start + self.nbytes:] != _GUARD_BYTE) + self.nbytes
        return head.tolist() + tail.tolist()

    def repair_guards(self):
        self.raw[: self.start] = _GUARD_BYTE
        self.raw[self.start + self.nbytes:] = _GUARD_BYTE

    def contains(self, lo: int, hi: int) -> bool:
        return self.ptr <= lo and hi <= self.ptr + self.nbytes


_allocations: "weakref.WeakSet[_Allocation]" = weakref.WeakSet()


def _allocate(shape, dtype, order="C", device=None) -> "ndarray":
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    # Note: no context is made current here: CuPy's memory pool hands out cached blocks without a
    # runtime call, so an allocation cannot be counted on to make one
    mem = _Allocation(nbytes, _current if device is None else device)
    _allocations.add(mem)
    view = np.ndarray(shape, dtype, buffer=mem.body, order=order)
    return ndarray(view, mem)


class MemoryPointer:
    """cupy.cuda.MemoryPointer: an address on a device."""

    def __init__(self, mem: _Allocation, ptr: int):
        self.mem, self.ptr, self.device_id = mem, ptr, mem.device

    def __int__(self):
        return self.ptr


class Flags:
    """cupy/_core/flags.pyx: c_contiguous, f_contiguous and owndata, and nothing else."""
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c, f, own):
        self.c_contiguous, self.f_contiguous, self.owndata = c, f, own

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous, "OWNDATA": self.owndata}[name]


def _refuse_host(x):
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        # CuPy: "Unsupported type <class 'numpy.ndarray'>" from its ufuncs and elementwise kernels
        raise TypeError(f"Unsupported type {type(x)}")


class ndarray:
    """cupy.ndarray over fake device memory (see the module docstring)."""

    __array_priority__ = 100

    def __init__(self, view: np.ndarray, mem: _Allocation, owndata: bool = True):
        self._a, self._mem, self._own = view, mem, owndata

    # --- attributes -------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    strides = property(lambda self: self._a.strides)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    device = property(lambda self: Device(self._mem.device))
    flags = property(lambda self: Flags(self._a.flags.c_contiguous, self._a.flags.f_contiguous, self._own))

    @property
    def data(self) -> MemoryPointer:
        return MemoryPointer(self._mem, self._a.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "descr": a.dtype.descr, "version": 3,
                "data": (a.__array_interface__["data"][0], False),
                "strides": None if a.flags.c_contiguous else a.strides}

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    # --- views and copies -------------------------------------------------------------------
    def _view(self, a: np.ndarray) -> "ndarray":
        return ndarray(a, self._mem, owndata=False)

    def _wrap(self, r) -> "ndarray":
        """A NumPy result computed from this array's memory: a view of it, or a new allocation."""
        r = np.asarray(r)
        if r.size and np.may_share_memory(r, self._mem.raw):
            return self._view(r)
        with Device(self._mem.device):
            out = _allocate(r.shape, r.dtype)
        out._a[...] = r
        return out

    def get(self) -> np.ndarray:
        return np.array(self._a, copy=True)

    def copy(self, order="C"):
        with Device(self._mem.device):
            out = _allocate(self.shape, self.dtype, order="F" if order == "F" else "C")
        out._a[...] = self._a
        return out

    def astype(self, dtype, copy=True):
        with Device(self._mem.device):
            out = _allocate(self.shape, dtype)
        with np.errstate(all="ignore"):
            out._a[...] = self._a.astype(dtype)
        return out

    def view(self, dtype=None):
        return self._view(self._a.view(dtype))

    def reshape(self, *shape, order="C"):
        r = self._a.reshape(*shape, order=order)
        return self._wrap(r)

    def ravel(self):
        return self._wrap(self._a.ravel())

    def transpose(self, *axes):
        return self._view(self._a.transpose(*axes))

    T = property(lambda self: self._view(self._a.T))

    def __getitem__(self, index):
        index = index._a if isinstance(index, ndarray) else index
        r = self._a[index]
        if not isinstance(r, np.ndarray):   # an element: CuPy gives a 0-d device array
            r = self._a[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return self._wrap(r)

    def __setitem__(self, index, value):
        index = index._a if isinstance(index, ndarray) else index
        self._a[index] = value._a if isinstance(value, ndarray) else value

    def __len__(self):
        return len(self._a)

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return f"hostcuda.ndarray({np.array2string(self._a, threshold=20)}, dtype={self.dtype}, device={self._mem.device})"

    # --- arithmetic: NumPy on the storage values, results on the device ---------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or "out" in kwargs:
            return NotImplemented
        for x in inputs:
            _refuse_host(x)
        devices = {x._mem.device for x in inputs if isinstance(x, ndarray)}
        if len(devices) > 1:
            raise ValueError(f"Array device must be same as the current device: arrays on devices {sorted(devices)}")
        args = [x._a if isinstance(x, ndarray) else x for x in inputs]
        with np.errstate(all="ignore"):
            r = getattr(ufunc, method)(*args, **kwargs)
        return self._wrap(r)

    def all(self, axis=None):
        return self._wrap(np.asarray(self._a.all(axis=axis)))

    def any(self, axis=None):
        return self._wrap(np.asarray(self._a.any(axis=axis)))

    def sum(self, axis=None, dtype=None):
        return self._wrap(np.asarray(self._a.sum(axis=axis, dtype=dtype)))


def _operator(ufunc):
    def forward(self, other):
        return self.__array_ufunc__(ufunc, "__call__", self, other)

    def reflected(self, other):
        return self.__array_ufunc__(ufunc, "__call__", other, self)
    return forward, reflected


for _name, _ufunc in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                      "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "and": np.bitwise_and,
                      "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift,
                      "rshift": np.right_shift}.items():
    _f, _r = _operator(_ufunc)
    setattr(ndarray, f"__{_name}__", _f)
    setattr(ndarray, f"__r{_name}__", _r)
for _name, _ufunc in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                      "gt": np.greater, "ge": np.greater_equal}.items():
    setattr(ndarray, f"__{_name}__", _operator(_ufunc)[0])
ndarray.__neg__ = lambda self: self.__array_ufunc__(np.negative, "__call__", self)
ndarray.__abs__ = lambda self: self.__array_ufunc__(np.absolute, "__call__", self)
ndarray.__invert__ = lambda self: self.__array_ufunc__(np.invert, "__call__", self)
ndarray.__hash__ = None
ndarray.__module__ = "cupy"   # why: gpupromote recognizes CuPy arrays by their module, as it must without importing cupy


# ---------------------------------------------------------------------------------------------
# Array creation (on the current device)

def empty(shape, dtype=float, order="C"):
    return _allocate(shape, dtype, order)


def zeros(shape, dtype=float, order="C"):
    out = _allocate(shape, dtype, order)
    out._a[...] = 0
    return out


def ones(shape, dtype=float):
    out = _allocate(shape, dtype)
    out._a[...] = 1
    return out


def full(shape, value, dtype=None):
    dtype = np.asarray(value).dtype if dtype is None else dtype
    out = _allocate(shape, dtype)
    out._a[...] = value
    return out


def array(obj, dtype=None, copy=True, order="K"):
    if isinstance(obj, ndarray):
        if not copy and obj._mem.device == _current and (dtype is None or np.dtype(dtype) == obj.dtype):
            return obj
        host = obj._a  # a device-to-device copy (peer copy when the devices differ)
    else:
        _no_device_objects(obj)
        host = np.asarray(obj)
    with np.errstate(all="ignore"):
        host = host.astype(dtype) if dtype is not None else host
    out = _allocate(host.shape, host.dtype, "F" if order == "F" or (order in ("K", "A") and host.flags.f_contiguous
                                                                     and not host.flags.c_contiguous) else "C")
    out._a[...] = host
    return out


def asarray(a, dtype=None, order=None):
    """CuPy's asarray: the array itself when it is on the current device with that dtype, else a copy
    there (host data is uploaded; an array on another device is copied across)."""
    return array(a, dtype=dtype, copy=False, order=order or "K")


def ascontiguousarray(a, dtype=None):
    a = asarray(a, dtype)
    return a if a._a.flags.c_contiguous else array(a, copy=True, order="C")


def _no_device_objects(obj):
    if isinstance(obj, (list, tuple)) and any(isinstance(x, ndarray) for x in obj):
        raise TypeError("nested sequences of device arrays are not supported here")


def from_host_view(mem_owner: ndarray, view: np.ndarray) -> ndarray:
    """A device array for ``view``, a NumPy view (np.lib.stride_tricks, offsets, dtype views) of
    ``mem_owner``'s memory: how a test builds the views CuPy builds with its own slicing."""
    if not np.may_share_memory(view, mem_owner._mem.raw):
        raise ValueError("the view does not look at the device array's memory")
    return ndarray(view, mem_owner._mem, owndata=False)


# ---------------------------------------------------------------------------------------------
# cupy.RawModule(path=...): what the engine's own load_module loads a cached cubin / PTX with

class RawModule:
    """Reads its file when ``compile()`` is called (CuPy loads lazily, on first use), and refuses
    what the driver would refuse: a file that is not a whole ELF image (cubin) or PTX text."""

    def __init__(self, *, path=None, code=None, options=(), **kwargs):
        if path is None:
            raise ValueError("the host emulation loads modules from files only (path=...)")
        self.path = path

    def compile(self, log_stream=None):
        with open(self.path, "rb") as f:
            data = f.read()
        if not (_whole_elf(data) or (b".version" in data[:4096] and b".entry" in data)):
            raise CUDADriverError("CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid")

    def get_function(self, name):
        raise CUDADriverError("the host emulation cannot run machine code; kernels run through load_module")


def _whole_elf(data: bytes) -> bool:
    """An ELF64 image whose section header table lies inside the file (a truncated one does not)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2:
        return False
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shentsize, shnum = (int.from_bytes(data[k:k + 2], "little") for k in (0x3A, 0x3C))
    return 64 <= shoff and shoff + shentsize * shnum <= len(data)


# ---------------------------------------------------------------------------------------------
# Kernels: modules from load_module, launches with CuPy's argument packing

_CTYPE_DTYPES = {"bool": np.bool_, "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8,
                 "short": np.int16, "unsigned short": np.uint16, "int": np.int32, "unsigned int": np.uint32,
                 "long": np.int64, "long long": np.int64, "unsigned long": np.uint64,
                 "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}


class KernelArgumentError(TypeError):
    """The launch's arguments do not match the kernel's parameters the way CuPy would pass them:
    on a GPU the kernel would read other bytes than the caller meant."""


def _packed(x):
    """(bytes CuPy points cuLaunchKernel at, dtype or 'pointer', the array) for one argument."""
    if isinstance(x, ndarray):
        return x.data.ptr.to_bytes(8, "little"), "pointer", x
    t = type(x)
    if t is bool:
        x = np.bool_(x)
    elif t is int:
        x = np.int64(x) if x < 2**63 else np.uint64(x)
    elif t is float:
        x = np.float64(x)
    elif t is complex:
        x = np.complex128(x)
    if isinstance(x, np.generic):
        return np.asarray(x).tobytes(), x.dtype, None
    raise TypeError(f"Unsupported type {t}")  # CuPy's message: numpy arrays, lists, memoryviews, ...


class _Function:
    """cupy.cuda.Function: the handle of a loaded kernel."""

    def __init__(self, kernel: "Kernel"):
        self._kernel = kernel

    @property
    def ptr(self) -> int:
        handle = id(self._kernel)
        _functions[handle] = self._kernel
        return handle


class Kernel:
    """A kernel of a module, called as CuPy's: ``kernel(grid, block, args)``."""

    def __init__(self, module: "Module", name: str):
        self.module, self.name = module, name
        self.params = module.signatures[name]
        self._launch = None

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        if shared_mem or stream is not None:
            raise CUDADriverError("the host emulation launches without dynamic shared memory or streams")
        grid, block = tuple(int(g) for g in grid), tuple(int(b) for b in block)
        if any(g < 1 for g in grid) or any(b < 1 for b in block) or grid[0] > 2**31 - 1 or block[0] > 1024:
            raise CUDADriverError(f"CUDA_ERROR_INVALID_VALUE: {self.name} launched with grid {grid}, block {block}")
        if any(g != 1 for g in grid[1:]) or any(b != 1 for b in block[1:]):
            raise CUDADriverError(f"{self.name}: the host emulation runs 1-d grids only, got grid {grid}, block {block}")
        _ensure_context()   # CuPy's launcher: runtime._ensure_context() before cuLaunchKernel
        library = self._library()
        buffers, arrays = self._pack(args, library.sizes[self.name])
        pointers = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
        self._run(library, grid[0], block[0], pointers, arrays)

    @property
    def kernel(self) -> "_Function":
        """The loaded function (RawKernel.kernel in CuPy: a cupy.cuda.Function, whose ``ptr`` is
        the CUfunction handle cu_launch_kernel takes; a RawKernel itself has no ``ptr``)."""
        return _Function(self)

    def _library(self):
        if _current != self.module.device:
            raise CUDADriverError(f"CUDA_ERROR_INVALID_HANDLE: {self.name} was loaded on device {self.module.device} "
                                  f"and launched while device {_current} is current")
        library = self.module.library()
        if self._launch is None:
            self._launch = library.launcher(self.name)
        return library

    def launch_raw(self, grid, block, params):
        """cuLaunchKernel's view of a launch: ``params[i]`` points at parameter i's bytes, as the
        driver reads them; a pointer parameter must point into an allocation on the current
        device."""
        library = self._library()
        arrays = []
        for i, (p, size) in enumerate(zip(self.params, library.sizes[self.name])):
            if not p.is_pointer:
                continue
            address = ctypes.c_uint64.from_address(params[i]).value
            mem = next((m for m in list(_allocations) if m.contains(address, address + 1)), None)
            where = f"{self.name} parameter {i} ({p.ctype} {p.name})"
            if mem is None:
                raise CUDADriverError(f"CUDA_ERROR_ILLEGAL_ADDRESS: {where} is {address:#x}, in no allocation")
            if mem.device != _current:
                raise CUDADriverError(f"CUDA_ERROR_ILLEGAL_ADDRESS: {where} points into device {mem.device}'s "
                                      f"memory; the kernel runs on device {_current} (no peer access)")
            arrays.append(types.SimpleNamespace(_mem=mem))
        self._run(library, grid, block, params, arrays)

    def _run(self, library, grid, block, pointers, arrays):
        launches.append((self.name, grid, block, _current))
        self._launch(grid, block, pointers, int(REVERSE_ORDER))
        count, first = library.take_faults()
        if count:
            raise CUDADriverError(f"{first.split(':', 1)[0]} in kernel {self.name} ({count} fault(s)); the first: "
                                  f"{first.split(':', 1)[-1].strip()}")
        for a in arrays:
            damaged = a._mem.damaged_guards()
            if damaged:
                a._mem.repair_guards()
                raise CUDADriverError(f"CUDA_ERROR_ILLEGAL_ADDRESS: kernel {self.name} wrote outside an allocation of "
                                      f"{a._mem.nbytes} bytes, at offsets {damaged[:8]} (negative: before it)")

    def _pack(self, args, sizes):
        args = tuple(args)
        if len(args) != len(self.params):
            raise KernelArgumentError(f"{self.name} takes {len(self.params)} parameters "
                                      f"({', '.join(p.ctype + ' ' + p.name for p in self.params)}), given {len(args)}")
        buffers, arrays = [], []
        for i, (x, p, size) in enumerate(zip(args, self.params, sizes)):
            data, kind, array_ = _packed(x)
            where = f"{self.name} parameter {i} ({p.ctype} {p.name}, {size} bytes)"
            if p.is_pointer:
                if kind != "pointer":
                    raise KernelArgumentError(f"{where}: given a {type(x).__name__} where a device pointer belongs")
                if array_._mem.device != _current:
                    raise CUDADriverError(f"CUDA_ERROR_ILLEGAL_ADDRESS: {where} points into device {array_._mem.device}'s "
                                          f"memory; the kernel runs on device {_current} (no peer access)")
                want = _CTYPE_DTYPES.get(p.pointee)
                if p.pointee not in ("char", "void") and want is not None and np.dtype(want).itemsize != array_.itemsize:
                    raise KernelArgumentError(f"{where}: an array of {array_.itemsize}-byte {array_.dtype} elements, "
                                              f"read as {np.dtype(want).itemsize}-byte {p.pointee}")
                arrays.append(array_)
            else:
                if kind == "pointer":
                    raise KernelArgumentError(f"{where}: given a device array where a value belongs")
                want = _CTYPE_DTYPES.get(p.ctype)
                if len(data) != size or (want is not None and np.dtype(want) != kind):
                    raise KernelArgumentError(f"{where}: given {type(x).__name__} ({kind}, {len(data)} bytes): CuPy "
                                              f"passes those bytes and the kernel would read them as {p.ctype}")
            buffers.append(ctypes.create_string_buffer(data, max(1, len(data))))
        return buffers, arrays


class Module:
    """What load_module returns: the source's kernels, built (with every other source handed over
    by then) at the first launch."""

    def __init__(self, builder: Builder, source: str, device: int):
        from tests.hostcuda.builder import kernel_signatures
        self.builder, self.device = builder, device
        self.signatures = kernel_signatures(source)
        self.key = builder.submit(source)

    def library(self):
        return self.builder.library(self.key)

    def get_function(self, name: str) -> Kernel:
        if name not in self.signatures:
            raise CUDADriverError(f"CUDA_ERROR_NOT_FOUND: named symbol not found: {name}")
        return Kernel(self, name)


_functions: dict = {}   # CUfunction handle -> Kernel


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                  ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                  ctypes.POINTER(ctypes.c_void_p))
def cu_launch_kernel(f, gx, gy, gz, bx, by, bz, shared_mem, stream, params, extra):
    """cuLaunchKernel for the host kernels: the CUresult, 0 when the launch ran cleanly; the
    message of a failure waits for CUDADriverError(status)."""
    global driver_launches
    try:
        kernel = _functions.get(f or 0)
        if kernel is None:
            raise CUDADriverError(f"CUDA_ERROR_INVALID_HANDLE: no loaded function {f}")
        if _current not in getattr(_threads, "contexts", ()):
            raise CUDADriverError(f"CUDA_ERROR_INVALID_CONTEXT: no context of device {_current} is current on "
                                  f"this thread (a runtime call makes it current)")
        if shared_mem or stream or extra:
            raise CUDADriverError("CUDA_ERROR_INVALID_VALUE: the host emulation launches without dynamic shared "
                                  "memory, streams or extra")
        if not (1 <= gx <= 2**31 - 1 and 1 <= bx <= 1024) or (gy, gz, by, bz) != (1, 1, 1, 1):
            raise CUDADriverError(f"CUDA_ERROR_INVALID_VALUE: {kernel.name} launched with grid {(gx, gy, gz)}, "
                                  f"block {(bx, by, bz)}")
        driver_launches += 1
        kernel.launch_raw(gx, bx, params)
    except CUDADriverError as exc:
        _driver_failures[:] = [str(exc)]
        return exc.status or _STATUS["CUDA_ERROR_INVALID_VALUE"]
    except Exception as exc:  # noqa: BLE001 - a ctypes callback must not raise
        _driver_failures[:] = [f"CUDA_ERROR_INVALID_VALUE: {type(exc).__name__}: {exc}"]
        return _STATUS["CUDA_ERROR_INVALID_VALUE"]
    return 0


def launch_kernel_address() -> int:
    """cu_launch_kernel's address: what the engine calls instead of the driver's cuLaunchKernel."""
    return ctypes.cast(cu_launch_kernel, ctypes.c_void_p).value


def reset(devices: int = 2, sms: int | None = None) -> None:
    """Forget launches, make device 0 current, set the number of devices and SMs."""
    global DEVICES, SMS, _current
    DEVICES, _current = devices, 0
    if sms is not None:
        SMS = sms
    launches.clear()
    _driver_failures.clear()


def launched_since(mark: int):
    """The kernel names launched after ``len(launches)`` was ``mark``."""
    return [name for name, *_ in itertools.islice(launches, mark, None)]
