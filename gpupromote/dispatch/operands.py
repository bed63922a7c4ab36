"""What the dispatcher asks of an operand before it plans: is it an array an op can take (and if
not, what to pass instead), where its data lives, which array a backend reads; and of ``out=``:
is it an operand itself (in place), does it overlap one (a temporary is needed).
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from .api import Spec
from .array import Array

__all__ = ["SCALAR_TYPES", "is_numpy_scalar", "storage_of", "native", "is_dask", "register_lazy", "lazy", "check_operand",
           "is_device", "wants_gp_array", "shape_error", "same_array", "overlaps", "broadcast_shapes"]

_ndarray = np.ndarray
SCALAR_TYPES = (float, bool, complex, int)   # the Python scalars an op folds


def is_numpy_scalar(x) -> bool:
    """Whether ``x`` is a numpy scalar of a gpupromote dtype (np.float32(2), x.sum(), an ml_dtypes
    bfloat16): the fast paths fold it by value like a 0-d array (api._operand_key describes it as
    one) and key it by its type (the compiled dispatcher turns a 0-d array into its scalar first)."""
    if not isinstance(x, np.generic):
        return False
    try:
        return D.dtype(x.dtype).numpy is not None
    except (TypeError, ValueError, KeyError):
        return False


def storage_of(x):
    """The array a backend reads for a non-folded operand."""
    if type(x) is _ndarray:
        return x
    if isinstance(x, Array):
        return x.storage
    if isinstance(x, np.ndarray):
        return x.view(np.ndarray)   # subclasses (np.matrix, masked arrays): their data
    if isinstance(x, np.generic):
        return np.asarray(x)
    return x


def native(x):
    """Arrays in the other byte order (``'>f4'`` here) are read as their native-order values."""
    if isinstance(x, np.ndarray) and not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x


# Lazy collections (Dask arrays) become graphs built by the Dask integration. The package root
# registers its entry points here, so that the dispatcher never imports the integrations wing.
_LAZY: dict = {}


def register_lazy(call, call_fused, reduce=None) -> None:
    """Route calls with a dask operand to ``call(op, args, policy, out)``, gp.fuse functions
    called with one to ``call_fused(fused, args, out, policy)`` and reductions of one to
    ``reduce(op, x, axis, keepdims, dtype, ddof, out, policy)`` (gpupromote/__init__ does)."""
    _LAZY.update(call=call, call_fused=call_fused, reduce=reduce)


def lazy(entry: str):
    """The registered ``call``, ``call_fused`` or ``reduce`` of the Dask integration."""
    fn = _LAZY.get(entry)
    if fn is None:
        raise TypeError("a dask array came, but no Dask integration is registered: import gpupromote "
                        "(its root registers gpupromote.integrations.dask) before calling its modules")
    return fn


def is_dask(x) -> bool:
    """A dask collection, judged by its type's module so that gpupromote never imports dask
    itself (gpupromote/integrations/dask.py does, when such an operand first comes)."""
    return type(x).__module__.startswith("dask.")


def check_operand(op, i, x):
    """Refuse what an op cannot compute on with a message saying what was passed and what to pass
    (``i`` is the argument's position, None for ``out=``)."""
    if type(x) is _ndarray or type(x) in SCALAR_TYPES:
        return
    where = "out=" if i is None else f"operand {i + 1}"
    if x is None:
        raise TypeError(f"{op}: {where} is None; pass an array or a Python bool/int/float/complex")
    if isinstance(x, np.ma.MaskedArray):
        # Note: refused rather than kept: a kernel reads every element, the masked-out ones too
        raise TypeError(f"{op}: {where} is a masked array; gpupromote would compute on its masked-out values "
                        f"and drop the mask. Use np.ma.{op} for masked semantics, or pass m.filled(value) "
                        f"or m.data explicitly")
    if isinstance(x, Spec):
        raise TypeError(f"{op}: {where} is {x!r}, an abstract array without data: ops compute on arrays, "
                        f"gp.result_type(...) takes specs")
    if isinstance(x, (np.dtype, D.DType, str, type)):
        what = f"the string {x!r}" if isinstance(x, str) else f"the dtype {getattr(x, 'name', None) or x.__name__!r}"
        raise TypeError(f"{op}: {where} is {what}, not an array: ops compute on arrays, gp.result_type(...) "
                        f"takes dtypes. Make an array, e.g. np.asarray(value, dtype)")
    if not (hasattr(x, "dtype") and hasattr(x, "shape")) and not isinstance(x, (bool, int, float, complex)):
        shown = repr(x)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise TypeError(f"{op}: {where} is not an array (type {type(x).__name__}: {shown}); pass np.asarray(...) "
                        f"of it, or a Python bool/int/float/complex")


def is_device(x) -> bool:
    if type(x) is _ndarray:
        return False
    dev = getattr(x, "device", None)
    if type(x).__module__.split(".")[0] == "cupy":
        return True
    return dev is not None and str(dev).startswith("cuda")


def wants_gp_array(args) -> bool:
    return any(isinstance(a, Array) for a in args)


def broadcast_shapes(*shapes) -> tuple:
    """``np.broadcast_shapes`` for any number of dimensions: NumPy's stops at 32 ("this function only
    supports up to 32 dimensions") where its arrays and ufuncs reach 64. A ValueError when the
    shapes do not broadcast."""
    if all(len(s) <= 32 for s in shapes):
        return np.broadcast_shapes(*shapes)
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for k, n in enumerate(s, ndim - len(s)):
            if n != 1:
                if out[k] == 1:
                    out[k] = n
                elif out[k] != n:
                    raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape ({n} against {out[k]})")
    return tuple(out)


def shape_error(op, shapes, out_shape=None):
    shown = " ".join(str(tuple(s)) for s in shapes)
    if out_shape is not None:
        return ValueError(f"{op}: operands with shapes {shown} cannot be broadcast to the out array's "
                          f"shape {tuple(out_shape)}")
    return ValueError(f"{op}: operands could not be broadcast together with shapes {shown}")


def _data_range(a):
    """(lowest, highest + 1) byte address an array touches (a cheap bounds check)."""
    itf = getattr(a, "__array_interface__", None) or a.__cuda_array_interface__
    ptr = itf["data"][0]
    lo = hi = ptr
    strides = itf.get("strides") or _c_strides(a.shape, a.dtype.itemsize)
    for n, s in zip(a.shape, strides):
        if n == 0:
            return ptr, ptr
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi + a.dtype.itemsize


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def same_array(a, out) -> bool:
    """Whether ``out`` is operand ``a`` itself (x += y, out=x): the same object, or the same
    elements of the same memory (two views of it), so that the op runs in place on ``a``."""
    if a is out:
        return True
    a, out = storage_of(a), storage_of(out)
    if not (hasattr(a, "shape") and hasattr(a, "strides")) or a.shape != out.shape or a.strides != out.strides:
        return False
    return a.dtype.itemsize == out.dtype.itemsize and _data_range(a) == _data_range(out)


def overlaps(a, out) -> bool:
    """Whether writing ``out`` can clobber ``a`` before it is read: any shared bytes, unless
    ``a`` is ``out`` element for element (same address, shape, strides and item size)."""
    if a is out:
        return False
    alo, ahi = _data_range(a)
    olo, ohi = _data_range(out)
    if alo >= ohi or olo >= ahi:
        return False
    return not (alo == olo and a.shape == out.shape and a.strides == out.strides
                and a.dtype.itemsize == out.dtype.itemsize)
