"""Exceptions and warnings, and the one place their messages are written."""
from __future__ import annotations

import os
import sys
import threading
import warnings

from .dtypes import BY_NAME as DTYPES
from .kinds import KIND_ORDER

__all__ = ["PromotionError", "IntegerDivisionByZero", "FuseError", "VALUE_IN_FUSE", "CacheWarning", "OverlappingOutput",
           "describe_operand", "check_integer_divisor", "overflow", "float_overflow", "negative_operand", "cast_hint", "kind_hint",
           "warn_at_caller", "CastHint", "register_hint_check", "holds", "LossyPromotionWarning",
           "LossyPromotionError", "LossReport"]


class PromotionError(TypeError):
    """A policy refuses to promote these operands for this op.

    ``policy``, ``op`` and ``operands`` say what was asked; ``hint`` the explicit cast that works
    (a ``cast_hint`` is checked first: the cast it names is one the policy then takes).
    """

    def __init__(self, policy, op, operands, why, hint=None):
        if isinstance(hint, CastHint):
            hint = hint.choose(policy, op, tuple(operands))
        self.policy, self.op, self.operands, self.why, self.hint = policy, op, tuple(operands), why, hint
        args = ", ".join(describe_operand(o) for o in self.operands)
        msg = f"policy {policy!r} refuses {op}({args}): {why}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)

    def __reduce__(self):   # picklable (a Dask worker sends it back), with the hint already chosen
        return type(self), (self.policy, self.op, self.operands, self.why, self.hint)


class IntegerDivisionByZero(ZeroDivisionError, RuntimeError):
    """Integer floor_divide / remainder / fmod by zero under a policy whose framework raises for it
    (PyTorch, PaddlePaddle, TensorFlow). One class for a Python-int divisor and an array divisor
    alike: a ZeroDivisionError, and a RuntimeError as PyTorch raises it ("RuntimeError:
    ZeroDivisionError"), so either except clause catches it."""


class OverlappingOutput(ValueError, RuntimeError):
    """out= has elements that share one memory location (a stride-0, expanded view), which an
    elementwise write cannot give one value each. A ValueError, and a RuntimeError as PyTorch
    raises it ("more than one element of the written-to tensor refers to a single memory
    location"), so either except clause catches it."""


class FuseError(TypeError):
    """A function gp.fuse cannot trace (Python control flow on array values, out= inside it, ...)."""


# what bool(), float(), int() of an array value inside a fused function raise, on every path of the
# call (traced, staged, and a small call's eager run): the function runs once for all values
VALUE_IN_FUSE = ("gp.fuse: the value of an array is unknown while its function is traced (bool(), float(), "
                 "int() or an if on an array value); use gp.where instead of Python control flow on array "
                 "values, or call the function unfused")


class CacheWarning(RuntimeWarning):
    """A kernel cache file was damaged or unreadable (it is dropped and the kernel compiled again),
    or the cache directory cannot be written (new kernels go to the folder the message names)."""


class LossReport:
    """What gp.sanitize found lost in one op: ``op``, ``policy``, ``operands`` (their dtypes as
    shown, ``int64[n]``, or a Python scalar's repr), ``result`` (dtype name), ``rule`` (the
    resolver's steps, as gp.explain prints them, shortened), ``what`` (the class of loss: inexact_int,
    uint64_high, int_range, int_wrap, float_overflow, float_underflow, clip_bound), ``operand`` (the
    operand index for a conversion, None for the op's own result), ``source`` / ``target`` (the
    conversion's dtypes), ``count`` of ``size`` elements hit, the first one's flat C-order ``index``
    (None for a scalar), its ``value`` and what it ``became``."""
    __slots__ = ("op", "policy", "operands", "result", "rule", "what", "operand", "source", "target", "count",
                 "size", "index", "value", "became")

    _WHY = {"inexact_int": "is not exact in", "uint64_high": "is at or above 2**63 and read as",
            "int_range": "does not fit (it wraps) in", "float_overflow": "overflows to infinity in",
            "float_underflow": "flushes to zero in", "clip_bound": "wraps as a clip bound in"}
    _FIX = {"inexact_int": "compute in a float with more precision (gp.astype the operand to float64) or keep "
                           "the integers within the float's exact range",
            "uint64_high": "cast explicitly (gp.astype) where the high values are meant, or keep them below 2**63",
            "int_range": "cast to a wider integer type first (gp.astype)",
            "float_overflow": "pass the scalar as an array of a wider float (np.float32(x)) or cast the array up",
            "float_underflow": "pass the scalar as an array of a wider float (np.float32(x)) or cast the array up",
            "clip_bound": "pass a bound the array's dtype holds",
            "int_wrap": "compute in a wider integer type (gp.astype the operands first)"}

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))

    def __repr__(self):
        return f"LossReport({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def message(self) -> str:
        head = (f"gp.sanitize: {self.op}({', '.join(self.operands)}) -> {self.result} under policy "
                f"{self.policy!r} (rule: {self.rule})")
        if self.what == "int_wrap":
            where = f"the {self.result} result wrapped around"
            first = f"{self.op}({', '.join(map(repr, self.value))}) gave {self.became!r}"
        else:
            which = "a scalar operand" if self.index is None else f"operand {self.operand}"
            where = f"{which} ({self.source}) {self._WHY.get(self.what, 'is lost in')} {self.target}"
            first = f"{self.value!r} became {self.became!r}"
        at = "" if self.index is None else f" at flat index {self.index}"
        count = "" if self.index is None else f" for {self.count} of {self.size} element(s)"
        fix = self._FIX.get(self.what, "cast explicitly first")
        if self.what in ("float_overflow", "float_underflow") and self.index is not None:   # an array's floats
            fix = ("keep the values in a wider float (cast the other operands up; under JAX, policy 'jax-x64') "
                   "or scale them into range")
        return f"{head}: {where}{count}; the first{at}: {first}. To avoid it, {fix}."


class LossyPromotionWarning(UserWarning):
    """gp.sanitize found a value lost by a promotion's conversion or an integer op's wrap-around;
    ``report`` (a LossReport) holds the fields."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class LossyPromotionError(ArithmeticError):
    """gp.sanitize(action="raise") found a value lost; ``report`` (a LossReport) holds the fields. An
    ArithmeticError, as NumPy's FloatingPointError (np.errstate(over="raise")) and Python's
    OverflowError are: a value the arithmetic could not represent, not a wrong argument type."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report

    def __reduce__(self):   # picklable (a Dask worker sends it back)
        return type(self), (str(self), self.report)


def describe_operand(o) -> str:
    """int32[] for a 0-d array, int32[n] for an array, 300 (python int) for a scalar."""
    if o.category == "scalar":
        return f"{o.value!r} (python {type(o.value).__name__})"
    return f"{o.dtype.name}[]" if o.category == "zero-dim" else f"{o.dtype.name}[n]"


def overflow(policy, op, operand, target, exc=OverflowError):
    """The error for a Python int outside the range ``target`` (a dtype name) gives it."""
    return exc(f"policy {policy!r}, {op}: Python integer {operand.value} is out of bounds for "
               f"{target}, as in the framework this policy emulates. Convert it explicitly, "
               f"e.g. np.asarray({operand.value}).astype('{target}') to wrap, or use a wider array dtype")


def float_overflow(policy, framework, op, value, target):
    """The error for a finite Python float (or complex) beyond the largest value of ``target``."""
    return OverflowError(f"policy {policy!r}, {op}: {value!r} cannot be converted to {target} without overflow, "
                         f"as in {framework}. Pass a value within its range, or an array of a wider dtype")


def negative_operand(policy, framework, op, dtype, value):
    """The error for a negative Python int second operand an integer op refuses (x ** -1, x << -1)."""
    return ValueError(f"policy {policy!r}: {op}({dtype}, {value}) is only defined for a second operand >= 0 "
                      f"in {framework}" + ("; use a float base, e.g. x.astype('float64')" if op == "power" else ""))


# ---------------------------------------------------------------------------------------------
# Fix hints: the explicit cast a refusal suggests is one the policy then takes

# Per float dtype: (mantissa bits, largest exponent, smallest normal exponent); a complex dtype is a
# pair of its part's float.
_FLOATS = {"float8_e4m3fn": (3, 8, -6), "float8_e5m2": (2, 15, -14), "float16": (10, 15, -14),
           "bfloat16": (7, 127, -126), "float32": (23, 127, -126), "float64": (52, 1023, -1022)}
_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def holds(target, source) -> bool:
    """Whether every value of dtype ``source`` is exact in dtype ``target`` (DTypes)."""
    if target is source or source.kind == "b":
        return True
    if target.kind == "b":
        return False
    if source.kind in "ui" and target.kind in "ui":
        if source.kind == "u":
            return target.bits > source.bits if target.kind == "i" else target.bits >= source.bits
        return target.kind == "i" and target.bits >= source.bits
    t = _FLOATS.get(_PARTS.get(target.name, target.name))
    if t is None or (source.kind == "c" and target.kind != "c"):
        return False   # an integer target holds no float; a real target no complex
    if source.kind in "ui":
        return t[0] + 1 >= source.bits - (source.kind == "i")
    s = _FLOATS[_PARTS.get(source.name, source.name)]
    return t[0] >= s[0] and t[1] >= s[1] and t[2] <= s[2]


# The dtypes a hint suggests, in order of preference: the common ones first, then by size.
_PREFERRED = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
              "complex128", "uint16", "uint32", "uint64", "bfloat16", "float8_e4m3fn", "float8_e5m2", "complex32")

_verify = None          # (policy, op, operands, what, source name, target name) -> bool; see register_hint_check
_checking = threading.local()
_chosen: dict = {}


def register_hint_check(check) -> None:
    """Install the function that tells whether a cast a hint would suggest makes the policy take the
    operands: ``check(policy, op, operands, what, source, target)``, ``what`` one of "array" (each
    array operand of dtype ``source`` cast to ``target``), "all" (every array operand cast to
    ``target``) or "scalar" (each Python scalar made an array of dtype ``target``). The dispatcher
    installs one that resolves (the core wing imports nothing that promotes)."""
    global _verify
    _verify = check
    _chosen.clear()


class CastHint(str):
    """A fix hint for a refused promotion, as ``cast_hint`` words it before it is checked; the
    PromotionError it goes into keeps the first of ``candidates`` the policy takes (``choose``)."""
    candidates: tuple = ()

    def choose(self, policy, op, operands) -> str:
        check = _verify
        if check is None or getattr(_checking, "on", False):
            return str(self)
        # a Python scalar's value is in the key: a cast that helps 300 may not help -1 (x ** -1)
        key = (policy, op, tuple((o.signature(), repr(o.value)) if hasattr(o, "signature") else repr(o)
                                 for o in operands))
        hit = _chosen.get(key)
        if hit is not None:
            return hit
        _checking.on = True   # a candidate the policy refuses raises a PromotionError of its own: unchecked
        try:
            hint = next((text for what, source, target, text in self.candidates
                         if check(policy, op, operands, what, source, target)), "")
        finally:
            _checking.on = False
        if len(_chosen) > 4096:
            _chosen.clear()
        _chosen[key] = hint
        return hint


def _hint(text, candidates) -> CastHint:
    h = CastHint(text)
    h.candidates = tuple(candidates)
    return h


def _wider(x):
    """Dtypes that hold every value of ``x``, other than ``x``, in order of preference."""
    return [t for t in map(DTYPES.get, _PREFERRED) if t is not None and t is not x and holds(t, x)]


def cast_hint(values) -> str:
    """The explicit cast that would let ``values`` (Operands) promote: the narrower array cast to the
    wider one's dtype, both cast to a dtype that holds each, or a Python scalar made an array, each
    checked against the policy when the error is made (the first the policy takes is named; none
    is named when none works, e.g. an op the framework has for no dtype of these kinds)."""
    arrays = list(dict.fromkeys(o.dtype for o in values if o.dtype is not None))
    if len(arrays) >= 2:
        a, b = arrays[:2]
        wide = a if a.itemsize >= b.itemsize and KIND_ORDER[a.kind] >= KIND_ORDER[b.kind] else b
        other = b if wide is a else a
        first = f"Cast explicitly, e.g. x.astype('{wide.name}') on the {other.name} operand"
        candidates = [("array", other.name, wide.name, first)] if holds(wide, other) else []
        both = [t for t in _wider(a) if holds(t, b)]
        candidates += [("all", None, t.name, f"Cast both operands explicitly to one dtype that holds each, e.g. "
                                             f"x.astype('{t.name}')") for t in both]
        if not holds(wide, other):
            candidates.append(("array", other.name, wide.name, first))
        return _hint(first, candidates)
    if len(arrays) == 1:
        (x,) = arrays
        if any(o.dtype is None for o in values):
            text = f"Cast the Python scalar to an array of dtype {x.name} first, or the array to a wider dtype"
            candidates = [("scalar", None, x.name, f"Make the Python scalar an array of dtype {x.name} first, e.g. "
                                                   f"np.asarray(value, '{x.name}')")]
            candidates += [("array", x.name, t.name, f"Cast the array to a wider dtype, e.g. x.astype('{t.name}')")
                           for t in _wider(x)]
            return _hint(text, candidates)
        # operands of one dtype: the op (or the framework) has none for it; another dtype may
        return _hint("Cast the operands to another dtype first", [
            ("all", None, t.name, f"Cast the operands to a dtype the op has, e.g. x.astype('{t.name}')")
            for t in _wider(x)])
    return "Pass arrays with explicit dtypes"


def kind_hint(accepts: str) -> str:
    """What an op accepts (dtype kinds), as a fix for an operand it refuses."""
    names = {"b": "bool", "u": "unsigned", "i": "signed integer", "f": "floating", "c": "complex"}
    return "It accepts " + ", ".join(names[k] for k in "buifc" if k in accepts) + " operands; cast explicitly"


def check_integer_divisor(policy, framework, op, dtype, has_zero, divisor=None):
    """Raise IntegerDivisionByZero when ``has_zero``: the one place integer division by zero is
    refused, whether the divisor is a Python int (``divisor``: the resolver checks it while it
    resolves, so gp.result_type refuses it too) or an array (the dispatcher checks it before the
    launch)."""
    if not has_zero:
        return
    if divisor is None:
        what = "a divisor array holding 0"
    elif divisor == 0:
        what = "0"
    else:
        what = f"{divisor}, which is 0 as {dtype}"
    raise IntegerDivisionByZero(
        f"policy {policy!r}, {op}: integer division by {what} ({dtype}), which {framework} refuses. "
        f"Divide in floating point (cast to a float dtype first), or replace zero divisors, "
        f"e.g. np.where(b == 0, 1, b)")


# ---------------------------------------------------------------------------------------------
# Warnings, attributed to the user's line

# gpupromote's own folder: a warning names the first frame outside it (the user's call), however
# many of the package's frames lie between (the eager call, gp.fuse, the fast runners and the C
# dispatcher reach the same check at different depths, so no fixed stacklevel is right).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn_at_caller(message, category=RuntimeWarning) -> None:
    """``warnings.warn`` with the filename and line of the code that called into gpupromote."""
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=(_PACKAGE_DIR,))
    else:
        warnings.warn(message, category, stacklevel=_first_level_outside_the_package())


def _first_level_outside_the_package() -> int:
    """The ``stacklevel`` of the innermost frame whose code is not gpupromote's (Python < 3.12,
    which has no ``skip_file_prefixes``): level 1 is warn_at_caller's own frame."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level
