"""gp.Array: an array's storage (numpy or cupy) with its logical dtype and device, and operators.

The storage (``.storage``) is what a backend reads: a numpy array on the CPU (ml_dtypes arrays
for bfloat16 and float8), a cupy array on a GPU. The logical dtype (``.dtype``, what
api.describe reads) is a DType; it only differs from the storage's own dtype where a device has
no native type.

This module is the data; its operators (+ - * / ...) are the gp ops, attached by dispatch/operators.py,
so that the dispatcher, which makes Arrays, and the Array, whose operators dispatch, do not
import each other.
"""
from __future__ import annotations

import contextvars

import numpy as np

from ..core import dtypes as D
from ..core.errors import FuseError, VALUE_IN_FUSE

__all__ = ["Array", "asarray", "VALUES_HIDDEN"]

# True while gp.fuse runs a function eagerly in place of its stages (a small call's first run,
# dispatch/fuse.py): an array's value read there (bool(), float(), int()) is refused as on the
# traced and staged runs of the same function, whose arrays have no value yet
VALUES_HIDDEN = contextvars.ContextVar("gpupromote_values_hidden", default=False)


def _value_read():
    if VALUES_HIDDEN.get():
        raise FuseError(VALUE_IN_FUSE)


def _device_of(storage) -> str:
    if type(storage) is np.ndarray:
        return "cpu"
    if type(storage).__module__.split(".")[0] == "cupy":
        return f"cuda:{storage.device.id}"
    return "cpu"


class Array:
    """An array with a logical gpupromote dtype on a device ("cpu" or "cuda:N")."""

    __slots__ = ("_storage", "_gp_dtype", "_device")
    __array_ufunc__ = None     # NumPy's protocols are attached by dispatch/operators.py (np.exp(x) is gp.exp(x))
    __hash__ = None

    def __init__(self, storage, dtype=None, device=None):
        self._storage = storage
        self._gp_dtype = D.dtype(storage.dtype if dtype is None else dtype)
        self._device = device or _device_of(storage)

    # --- array attributes ---------------------------------------------------------------------
    @property
    def dtype(self) -> D.DType:
        return self._gp_dtype

    @property
    def storage(self):
        """The array the backends read: numpy on the CPU, cupy on a GPU (bit patterns where the
        device has no native type for the dtype)."""
        return self._storage

    def replace_with(self, other: "Array") -> "Array":
        """Hold ``other``'s data and dtype from now on (what Paddle's in-place ops do to x)."""
        self._storage, self._gp_dtype = other._storage, other._gp_dtype
        return self

    @property
    def shape(self) -> tuple:
        return tuple(self._storage.shape)

    @property
    def ndim(self) -> int:
        return self._storage.ndim

    @property
    def size(self) -> int:
        return int(self._storage.size)

    @property
    def device(self) -> str:
        return self._device

    def __len__(self):
        return len(self._storage)

    def numpy(self) -> np.ndarray:
        """A host numpy array (ml_dtypes for bfloat16 / float8); copies from a GPU."""
        if self._gp_dtype.numpy is None:
            raise TypeError(f"{self._gp_dtype.name} has no numpy dtype: cast it first, e.g. .astype('complex64')")
        s = self._storage
        host = s.get() if hasattr(s, "get") and self._device != "cpu" else np.asarray(s)
        if host.dtype != self._gp_dtype.numpy:
            host = host.view(self._gp_dtype.numpy) if host.dtype.itemsize == self._gp_dtype.itemsize \
                else host.astype(self._gp_dtype.numpy)
        return host

    def __array__(self, dtype=None, copy=None):
        host = self.numpy()
        if dtype is not None and np.dtype(dtype) != host.dtype:
            return host.astype(dtype)
        return host.copy() if copy else host

    def __dlpack__(self, *args, **kwargs):
        # Note: DLPack has bfloat16 but numpy exports no ml_dtypes array; such storage raises
        # numpy's BufferError naming the dtype.
        return self._storage.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._storage.__dlpack_device__()

    def __getitem__(self, index):
        return Array(self._storage[index], self._gp_dtype, self._device)

    def __setitem__(self, index, value):
        if isinstance(value, Array):
            value = value._storage
        self._storage[index] = value

    def __bool__(self):
        _value_read()
        return bool(self._storage)

    def __float__(self):
        _value_read()
        return float(self.numpy())

    def __int__(self):
        _value_read()
        return int(self.numpy())

    def __repr__(self):
        try:
            body = np.array2string(self.numpy(), separator=", ")
        except TypeError:
            body = "..."
        return f"gp.Array({body}, dtype={self._gp_dtype.name}, device={self._device!r})"


def asarray(x, dtype=None, device=None, copy=None) -> Array:
    """Wrap ``x`` (an Array, a numpy / cupy array, a nested sequence or a scalar) as a gp.Array
    of ``dtype`` (default: x's own, or NumPy's for Python data) on ``device`` ("cpu", "cuda",
    "cuda:N"; default: where x is)."""
    want = None if dtype is None else D.dtype(dtype)
    if isinstance(x, Array) and not copy and want in (None, x.dtype) and device in (None, x.device):
        return x
    if isinstance(x, Array):
        src_device, storage, have = x.device, x._storage, x.dtype
    else:
        src_device = _device_of(x)
        storage = x if src_device != "cpu" else np.asarray(x)
        have = D.dtype(storage.dtype)
    target = src_device if device is None else _normalize_device(device)
    want = want or have
    if target == "cpu":
        if want.numpy is None:
            raise TypeError(f"{want.name} has no numpy storage, so no CPU Array can hold it: use a CUDA "
                            f"device or another dtype")
        host = storage if src_device == "cpu" else Array(storage, have, src_device).numpy()
        host = np.asarray(host)
        if host.dtype != want.numpy:
            host = host.astype(want.numpy)
        elif copy:
            host = host.copy()
        return Array(host, want, "cpu")
    from ..engines import get_backend
    backend = get_backend("cuda")
    index = backend.device_index(target)
    if src_device == "cpu":
        host = np.asarray(storage)
        if want.numpy is not None and host.dtype != want.numpy:
            host = host.astype(want.numpy)   # NumPy / ml_dtypes' cast, on the host
        storage = backend.asarray(host, want, index)  # (complex32: packed from the complex values)
    else:
        if backend.device_index(storage) != index:
            storage = backend.asarray(storage, None, index)   # copied across devices, as it is
            copy = False
        if want is not have:
            # Note: a cast kernel on the device (the storage dtype alone would only relabel the bits)
            out = backend.empty(storage.shape, want, index)
            backend.copyto(out, storage, want, have)
            storage = out
        elif copy:
            storage = storage.copy()
    return Array(storage, want, f"cuda:{index}")


def _normalize_device(device) -> str:
    """"cpu" or "cuda:N"; "cuda" is the current CUDA device (CuPy's, as torch.device("cuda") is
    torch's current device)."""
    d = str(device)
    if d == "cpu":
        return d
    if d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        from ..engines import get_backend
        return f"cuda:{get_backend('cuda').device_index(d)}"
    raise ValueError(f"unknown device {device!r}: use 'cpu', 'cuda' or 'cuda:N'")
