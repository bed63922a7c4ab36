"""Exceptions and warnings, and the one place their messages are written."""
from __future__ import annotations

import os
import sys
import warnings

from .kinds import KIND_ORDER

__all__ = ["PromotionError", "IntegerDivisionByZero", "FuseError", "CacheWarning", "OverlappingOutput", "describe_operand",
           "check_integer_divisor", "overflow", "float_overflow", "negative_operand", "cast_hint", "kind_hint",
           "warn_at_caller"]


class PromotionError(TypeError):
    """A policy refuses to promote these operands for this op.

    ``policy``, ``op`` and ``operands`` say what was asked; ``hint`` the explicit cast that works.
    """

    def __init__(self, policy, op, operands, why, hint=None):
        self.policy, self.op, self.operands, self.why, self.hint = policy, op, tuple(operands), why, hint
        args = ", ".join(describe_operand(o) for o in self.operands)
        msg = f"policy {policy!r} refuses {op}({args}): {why}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


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


class CacheWarning(RuntimeWarning):
    """A kernel cache file was damaged or unreadable (it is dropped and the kernel compiled again),
    or the cache directory cannot be written (new kernels go to the folder the message names)."""


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


def cast_hint(values) -> str:
    """The explicit cast that would let ``values`` (Operands) promote."""
    arrays = [o.dtype for o in values if o.dtype is not None]
    if len(arrays) >= 2:
        a, b = arrays[:2]
        wide = a if a.itemsize >= b.itemsize and KIND_ORDER[a.kind] >= KIND_ORDER[b.kind] else b
        other = b if wide is a else a
        return f"Cast explicitly, e.g. x.astype('{wide.name}') on the {other.name} operand"
    if arrays:
        return f"Cast the Python scalar to an array of dtype {arrays[0].name} first, or the array to a wider dtype"
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
