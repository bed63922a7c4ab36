"""The dtype universe: every dtype any policy speaks of, with its 2-char code.

A DType compares equal to its name (``gp.float32 == "float32"``) so that tables and users can
spell dtypes as plain strings, and to its numpy dtype (``gp.float32 == np.float32``,
``== np.dtype("float32")``), which it also converts to (``np.dtype(gp.float32)``,
``np.zeros(3, dtype=gp.bfloat16)``: NumPy reads its ``dtype`` attribute). Each DType knows its
numpy dtype (ml_dtypes for bfloat16 and float8) and the *storage* dtype a backend keeps its
elements in (complex32 has no numpy dtype: it is stored as pairs of float16, and converting it
to a numpy dtype raises a TypeError that says so).
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np

__all__ = ["DType", "dtype", "ALL", "BY_NAME", "BY_CODE", "PY_KINDS", "public_name",
           "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float8_e4m3fn",
           "float8_e5m2", "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128"]


class DType:
    """One element type: ``name``, 2-char ``code``, ``kind`` (b u i f c), ``itemsize`` in bytes."""

    __slots__ = ("name", "code", "kind", "itemsize", "numpy", "rank", "_key")  # _key: set by dispatch/api.py

    def __init__(self, name, code, kind, itemsize, numpy_dtype, rank):
        self.name, self.code, self.kind, self.itemsize = name, code, kind, itemsize
        self.numpy = None if numpy_dtype is None else np.dtype(numpy_dtype)
        self.rank = rank  # position in ALL: a stable order for tables

    @property
    def bits(self):
        return 8 * self.itemsize

    @property
    def is_float8(self):
        return self.name.startswith("float8")

    @property
    def is_narrow_float(self):
        """float16, bfloat16 and float8: numba has none of them on the CPU."""
        return self.kind == "f" and self.itemsize <= 2

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype (``np.dtype(gp.float32)`` reads this attribute); complex32 has none."""
        if self.numpy is None:
            raise TypeError(f"{self.name} has no NumPy dtype (NumPy and ml_dtypes have no half-precision complex): "
                            f"use gp.complex64 for host arrays, or keep {self.name} data on a CUDA device")
        return self.numpy

    def __eq__(self, other):
        if isinstance(other, DType):
            return self is other
        if isinstance(other, str):
            return other == self.name
        if isinstance(other, np.dtype):
            return self.numpy is not None and other.isnative and other == self.numpy
        if isinstance(other, type) and issubclass(other, np.generic):  # np.float32, ml_dtypes.bfloat16
            return self.numpy is not None and other is self.numpy.type
        return NotImplemented

    # Note: the hash is the name's, so that a DType and its name find each other in dicts and sets;
    # a numpy dtype hashes otherwise (as np.dtype("float32") and "float32", equal in NumPy, already do).
    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"gp.{public_name(self)}"

    def __reduce__(self):
        return (dtype, (self.name,))


#          name             code  kind bytes numpy                         # why
_TABLE = [("bool",          "b1", "b", 1, np.bool_),
          ("uint8",         "u1", "u", 1, np.uint8),
          ("uint16",        "u2", "u", 2, np.uint16),
          ("uint32",        "u4", "u", 4, np.uint32),
          ("uint64",        "u8", "u", 8, np.uint64),
          ("int8",          "i1", "i", 1, np.int8),
          ("int16",         "i2", "i", 2, np.int16),
          ("int32",         "i4", "i", 4, np.int32),
          ("int64",         "i8", "i", 8, np.int64),
          ("float8_e4m3fn", "e4", "f", 1, ml_dtypes.float8_e4m3fn),
          ("float8_e5m2",   "e5", "f", 1, ml_dtypes.float8_e5m2),
          ("float16",       "f2", "f", 2, np.float16),
          ("bfloat16",      "bf", "f", 2, ml_dtypes.bfloat16),
          ("float32",       "f4", "f", 4, np.float32),
          ("float64",       "f8", "f", 8, np.float64),
          ("complex32",     "c4", "c", 4, None),            # why: numpy has no complex32; stored as 2 x float16
          ("complex64",     "c8", "c", 8, np.complex64),
          ("complex128",    "c16", "c", 16, np.complex128)]

ALL = tuple(DType(name, code, kind, size, npd, rank) for rank, (name, code, kind, size, npd) in enumerate(_TABLE))
BY_NAME = {d.name: d for d in ALL}
BY_CODE = {d.code: d for d in ALL}
_BY_NUMPY = {d.numpy: d for d in ALL if d.numpy is not None}

# A bare name means what np.dtype(name) means ("float" float64, "int" int64, "byte" int8, "long" C's
# long): NumPy's names are asked of NumPy itself (dtype() below), so they follow it on every platform.
# These are the names NumPy does not know, each with the one dtype it can mean.
_ALIASES = {"cfloat": "complex64", "chalf": "complex32", "complex_half": "complex32", "char": "int8",
            "float8_e4m3": "float8_e4m3fn", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
            "fp64": "float64", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
# PyTorch's names, spelt "torch.<name>" (str(torch.float) is "torch.float32", but users write
# "torch.float"): torch means float32 by float, int32 by int and uint8 by byte, where NumPy does not.
_TORCH_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64",
                  "short": "int16", "byte": "uint8", "char": "int8", "cfloat": "complex64", "cdouble": "complex128",
                  "chalf": "complex32", "complex_half": "complex32"}


def public_name(d: DType) -> str:
    """The name gpupromote exports a dtype under: its name, but bool_ for bool."""
    return "bool_" if d.name == "bool" else d.name


# The weak kinds of Python scalars, by the Python type that carries them.
PY_KINDS = {bool: "b", int: "i", float: "f", complex: "c"}


def dtype(x) -> DType:
    """Any dtype-like -> DType: names, 2-char codes, np.dtype, numpy / ml_dtypes scalar types,
    torch and jax dtypes, arrays (their dtype). A name means what ``np.dtype(name)`` means
    ("float" is float64, "int" int64), "torch.<name>" what PyTorch means ("torch.float" float32)."""
    if type(x) is DType:
        return x
    if type(x) is str:  # why: a plain name is the common case; one dict lookup answers it
        found = BY_NAME.get(x)
        if found is not None:
            return found
    elif isinstance(x, np.dtype):   # why: every result array's dtype comes here (gp.Array, 0.5 -> 0.1 us)
        found = _BY_NUMPY.get(x)
        if found is not None:
            return found
    if isinstance(x, str):
        return _by_string(x)
    if isinstance(x, type) and x in PY_KINDS:
        raise TypeError(f"{x.__name__} is a Python scalar type, not a dtype: pass a value (weak) "
                        f"or a dtype name such as 'int64'")
    mod = type(x).__module__
    if mod.startswith("torch"):  # torch.float16 -> "torch.float16"
        return dtype(str(x))
    if hasattr(x, "dtype") and not isinstance(x, type):  # arrays and numpy scalars
        return dtype(x.dtype)
    try:
        return _by_numpy(np.dtype(x))
    except (TypeError, KeyError):
        raise TypeError(f"unknown dtype {x!r}: use one of {', '.join(d.name for d in ALL)}") from None


def _by_string(text: str) -> DType:
    """A dtype name: gpupromote's names and 2-char codes, "torch.<name>" in PyTorch's meaning, the
    few names of _ALIASES, and anything else in NumPy's meaning (np.dtype(text))."""
    key = text.strip()
    if key.startswith("torch."):
        key = key[len("torch."):]
        key = _TORCH_ALIASES.get(key, key)
    found = BY_NAME.get(key) or BY_CODE.get(key) or BY_NAME.get(_ALIASES.get(key, ""))
    if found is not None:
        return found
    try:
        numpy_dtype = np.dtype(key)
    except TypeError:
        numpy_dtype = None
    found = None if numpy_dtype is None else _BY_NUMPY.get(numpy_dtype.newbyteorder("="))
    if found is not None:
        return found
    numpy_says = "" if numpy_dtype is None else f" (NumPy reads it as {numpy_dtype}, which gpupromote does not have)"
    if re.fullmatch(r"[a-z]\d+", key):
        # Note: one convention: the number in a code counts bytes, as NumPy's type codes do
        raise TypeError(f"unknown dtype {text!r}{numpy_says}: in a dtype code the number counts bytes, as in NumPy "
                        f"('f2' is float16, 'c16' complex128; codes: {', '.join(BY_CODE)}); "
                        f"or spell the name, e.g. 'float16'")
    raise TypeError(f"unknown dtype {text!r}{numpy_says}: use one of {', '.join(d.name for d in ALL)}")


def _by_numpy(np_dtype):
    # why: byte order is storage, not type: '>f4' promotes as float32 (the engines read it natively)
    if not np_dtype.isnative:
        np_dtype = np_dtype.newbyteorder("=")
    return _BY_NUMPY[np_dtype]


# Every dtype by name, declared (gp.float32, D.int64, ...). Note: bool is bool_, as NumPy's
# bool_, so that no builtin is shadowed.
(bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float8_e4m3fn, float8_e5m2,
 float16, bfloat16, float32, float64, complex32, complex64, complex128) = ALL
if [d.name for d in ALL] != ["bool", *[n for n in __all__[__all__.index("uint8"):]]]:
    raise ImportError("core/dtypes.py: the declared dtype names are out of step with _TABLE")
