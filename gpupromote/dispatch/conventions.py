"""NumPy's ufunc keywords on the op functions: ``dtype=``, ``casting=``, ``where=`` and ``out=`` as
a 1-tuple (``gp.add(a, b, dtype="float64", casting="same_kind", where=mask, out=(o,))``).

A call without them never comes here (opfunctions' functions test for them after the compiled
dispatcher, which hands any keyword but policy= and out= to them). They are the caller's explicit
conversions, not promotion, so they mean the same under every policy; promotion still happens
only in promotion/resolve.py, on the operands as converted:

* ``dtype=X`` picks the form of the op as NumPy picks its loop: the op on the operands as given,
  where its result is X (``less(a, b, dtype=bool)``, ``absolute(complex64, dtype=float32)``:
  nothing is converted); else the op on X operands, where its result is X under the policy
  (``add(int32, int32, dtype="float64")``): each operand is converted to X first, an array as
  gp.astype converts it, a Python scalar as ``np.asarray(value, X)`` does (an int out of X's range
  raises OverflowError, as NumPy's ufuncs raise), each under ``casting``; else it is refused as
  NumPy refuses it (``true_divide(int32, int32, dtype="int32")``: "No loop matching ...").
  where's condition is never converted.
* ``casting=`` ('no', 'equiv', 'safe', 'same_kind', 'unsafe'; default 'same_kind' for dtype='s
  conversions) bounds, when given, each array operand's conversion to the dtype the op reads it in
  (the plan's ``promoted`` dtype: NumPy's loop dtype) and the result's conversion into ``out=``,
  in place of the policy's out= / in-place rule (promotion/store.py), which applies when it is
  not given. A refusal is a TypeError in NumPy's words ("Cannot cast ufunc 'add' input 0 from
  float64 to int32 with casting rule 'same_kind'") with the policy, the op and the fix.
* ``where=mask`` (a boolean array or list, or a bool; broadcast with the operands, so it may
  widen the result): the result is stored only where the mask is True. With ``out=`` the other
  elements keep out's values; without it they are zero (NumPy leaves them uninitialized and
  warns; here the result is deterministic). The op is computed on every element and then
  selected (gp.where); the checks a policy makes before a launch (an integer divisor of 0, a
  negative integer exponent or shift count) look at the selected elements only, as NumPy's loop
  never sees the others: ``floor_divide(x, y, where=y != 0)`` warns (numpy) or raises (torch) of
  nothing.

Each step is a gp op (astype, the op, where), so the keywords work on every operand kind the
ops take (gp.Array, CuPy, torch, Dask) and on gp.fuse's traced values.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core.kinds import KIND_ORDER, Form, PromotionKind
from ..core.ops import ALIASES, op_named
from .api import CURRENT_POLICY, describe, plan_for
from .checks import needs_checks
from .operands import same_array
from ..promotion.resolve import refuse_scalars
from ..promotion.store import check_store

__all__ = ["CASTINGS", "bind", "call", "can_cast", "check_astype_casting", "dtype_of"]

# The op functions by name (opfunctions.OP_FUNCTIONS), handed over by opfunctions, which imports
# this module: the steps of a call with keywords are calls of them.
_FUNCTIONS: dict = {}


def bind(functions: dict) -> None:
    _FUNCTIONS.update(functions)


CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")

# The kinds of dtype a Python scalar converts to under a rule other than 'unsafe' (NEP 50: a
# Python int fits any integer or inexact dtype, its value checked), and the dtype NumPy names
# it by in its messages.
_SCALAR_TARGETS = {"b": "buifc", "i": "uifc", "f": "fc", "c": "c"}
_SCALAR_NAMES = {"b": "bool", "i": "int64", "f": "float64", "c": "complex128"}


def dtype_of(dtype) -> D.DType:
    """A dtype= / astype argument: NumPy's meaning of the Python types too (dtype=bool, int, float,
    complex are np.dtype's: bool, int64, float64, complex128), which gp.dtype reads as scalars."""
    if type(dtype) is type and dtype in (bool, int, float, complex):
        dtype = np.dtype(dtype)
    return D.dtype(dtype)


def _checked_casting(casting, name):
    if casting is not None and casting not in CASTINGS:
        raise ValueError(f"{name}: casting must be one of {', '.join(map(repr, CASTINGS))} (got {casting!r})")
    return casting


def can_cast(src: D.DType, dst: D.DType, casting: str) -> bool:
    """np.can_cast for gpupromote dtypes; by kind and size for those NumPy has no dtype for."""
    if casting == "unsafe" or src is dst:
        return True
    if casting in ("no", "equiv"):
        return False
    if src.numpy is not None and dst.numpy is not None:
        return bool(np.can_cast(src.numpy, dst.numpy, casting))
    if casting == "same_kind":
        return KIND_ORDER[src.kind] <= KIND_ORDER[dst.kind]
    return KIND_ORDER[src.kind] <= KIND_ORDER[dst.kind] and src.itemsize <= dst.itemsize


def _operand_can_cast(o, dst: D.DType, casting: str) -> bool:
    if o.category != "scalar":
        return can_cast(o.dtype, dst, casting)
    return casting == "unsafe" or dst.kind in _SCALAR_TARGETS[o.pykind]


def _shown(o) -> str:
    return o.dtype.name if o.category != "scalar" else _SCALAR_NAMES[o.pykind]


def _input_error(policy, name, i, arity, o, dst, casting, fix):
    which = "input" if arity == 1 else f"input {i}"
    return TypeError(f"policy {policy!r}, {name}: Cannot cast ufunc {name!r} {which} from {_shown(o)} to "
                     f"{dst.name} with casting rule {casting!r}. {fix}")


def check_astype_casting(x, dtype: D.DType, casting) -> None:
    """gp.astype(x, dtype, casting=...): NumPy's astype default is 'unsafe' (anything converts)."""
    _checked_casting(casting, "astype")
    if casting in (None, "unsafe"):
        return
    o = describe(x)
    if o.category == "scalar" or _operand_can_cast(o, dtype, casting):
        return
    raise TypeError(f"astype: Cannot cast array data from {o.dtype.name} to {dtype.name} according to the rule "
                    f"{casting!r}. Leave casting= out (astype's default is 'unsafe', as NumPy's) to convert anyway")


def _mask(where, name):
    """None for where=True (no mask), else the mask as an array-like gp.where takes as its condition."""
    if where is True:
        return None
    if type(where) in (bool, np.bool_):
        return np.bool_(where)
    if isinstance(where, (list, tuple)):
        where = np.asarray(where)
    try:
        o = describe(where)
    except TypeError:
        raise TypeError(f"{name}: where= must be a boolean array, list or bool, got {type(where).__name__}") from None
    if o.category == "scalar" or o.dtype.kind != "b":
        shown = _shown(o)
        raise TypeError(f"{name}: where= must be a boolean mask, got {shown} (NumPy: Cannot cast array data from "
                        f"{shown} to bool according to the rule 'safe'). Pass a comparison (mask != 0) or "
                        f"mask.astype(bool)")
    return where


def _result(op, args, policy):
    """The op's result dtype on ``args`` under ``policy``, or None where the policy refuses it."""
    try:
        return plan_for(op, list(args), policy).result
    except (TypeError, ValueError, ArithmeticError):
        return None


def _complex_of(real: D.DType):
    """The complex dtype whose parts are ``real`` (float32 -> complex64), or None."""
    if real.kind != "f" or real.numpy is None:
        return None
    c = D.dtype(np.result_type(real.numpy, np.complex64))
    return c if c.itemsize == 2 * real.itemsize else None


def _converted(op, name, args, policy, to: D.DType, casting, arity):
    """``args`` for ``dtype=to``, as NumPy picks a loop whose output is ``to``: as given where the
    op's result on them is ``to``; else converted to the first of ``to`` and the complex dtype
    whose real part is ``to`` (absolute(complex64, dtype=float64) reads complex128) that the op
    turns into ``to`` and every operand casts to safely; else converted to ``to`` under ``casting``
    (which may refuse). where's condition and clip's missing bounds are left as they are."""
    skip = {0} if op == "where" else set()
    skip |= {i for i, x in enumerate(args) if x is None}   # clip's missing bound
    if to.kind == "b" and op_named(op).kind in (PromotionKind.ALWAYS_BOOL, PromotionKind.LOGICAL):
        return args, False   # as NumPy's comparisons: dtype=bool is their result, the operands promote as ever
    if _result(op, args, policy) is to:
        return args, False
    described = [None if i in skip else describe(x) for i, x in enumerate(args)]
    loops = [d for d in (to, _complex_of(to)) if d is not None
             and _result(op, [x if i in skip else d for i, x in enumerate(args)], policy) is to]
    if not loops:
        got = _result(op, args, policy)
        own = _result(op, [x if i in skip else to for i, x in enumerate(args)], policy)
        gives = f"gives {got.name} on these operands" if got is not None else "is refused on these operands"
        on_to = f"gives {own.name}" if own is not None else "is refused"
        raise TypeError(f"policy {policy!r}, {name}: No loop matching the specified signature and casting was found "
                        f"for ufunc {name} (dtype={to.name}: {name} {gives}, and on {to.name} operands it {on_to}). "
                        f"Leave dtype= out, and convert the result with gp.astype if needed")
    safe = [d for d in loops if all(o is None or _operand_can_cast(o, d, "safe") for o in described)]
    to = (safe or loops)[0]
    astype = _FUNCTIONS["astype"]
    out = []
    for i, (x, o) in enumerate(zip(args, described)):
        if o is None:
            out.append(x)
            continue
        if not _operand_can_cast(o, to, casting):
            raise _input_error(policy, name, i, arity, o, to, casting,
                               f"Pass casting='unsafe' to convert anyway (as gp.astype does), or a dtype= "
                               f"{_shown(o)} can be cast to")
        if o.category == "scalar":
            try:
                out.append(np.asarray(x, to.numpy) if to.numpy is not None else x)
            except OverflowError as e:
                raise OverflowError(f"policy {policy!r}, {name}: {e} (dtype={to.name} converts every operand to "
                                    f"it). Pass a dtype= that holds {x}, or leave dtype= out") from None
        elif o.dtype is to:
            out.append(x)
        elif isinstance(x, np.generic):
            out.append(np.asarray(x).astype(to.numpy))
        else:
            out.append(astype(x, to, policy=policy))
    return tuple(out), True


def _check_inputs(op, name, args, policy, casting, arity):
    """casting= without dtype=: each array operand's conversion to the dtype the op reads it in."""
    if op_named(op).kind is PromotionKind.LOGICAL:
        return   # operands only tested for truth (NumPy's logical ufuncs take any input dtype)
    plan = plan_for(op, list(args), policy)
    loop = plan.promoted or plan.result
    for i, x in enumerate(args):
        if x is None or (op == "where" and i == 0):
            continue
        o = describe(x)
        if o.category == "scalar":
            continue   # NEP 50: a Python scalar takes the loop's dtype, its value checked by the policy
        if not can_cast(o.dtype, loop, casting):
            raise _input_error(policy, name, i, arity, o, loop, casting,
                               f"Pass a casting= rule that allows it, or convert the operand first: "
                               f"gp.astype(x, {loop.name!r})")


def _masked_checks(op, args, policy, mask, gp_where):
    """``args`` whose second operand (an integer divisor, exponent or shift count the policy checks
    before a launch: checks.needs_checks) is 1 where the mask is False, so that the checks look at
    the selected elements only, as NumPy's loop never sees the others (np.floor_divide(x, y,
    where=y != 0) warns of nothing)."""
    if len(args) != 2 or not needs_checks(plan_for(op, list(args), policy)):
        return args
    o = describe(args[1])
    if o.category == "scalar" or o.dtype.numpy is None:
        return args   # a Python scalar is checked when the op is resolved, for every element alike
    return args[0], gp_where(mask, args[1], np.ones((), o.dtype.numpy), policy=policy)


def call(name, args, policy, out, dtype, casting, where):
    """``name`` (an op function's name) on ``args`` with NumPy's ufunc keywords."""
    fn, gp_where, astype = _FUNCTIONS[name], _FUNCTIONS["where"], _FUNCTIONS["astype"]
    op = ALIASES.get(name, name)
    policy = policy or CURRENT_POLICY.get()
    arity = sum(x is not None for x in args) if op == "clip" else len(args)
    _checked_casting(casting, name)
    if type(out) is tuple:
        if len(out) != 1:
            raise ValueError(f"{name}: out= as a tuple must hold exactly one array (the op has one output), "
                             f"got {len(out)}")
        out = out[0]
    mask = _mask(where, name)
    if dtype is not None:
        if op != "clip":   # (no policy refuses clip's scalars; its None bounds describe as nothing)
            # paddle.add(x, 1) raises before anything converts the 1
            refuse_scalars(policy, op, [describe(x) for x in args], Form.FUNCTION)
        args, _ = _converted(op, name, tuple(args), policy, dtype_of(dtype), casting or "same_kind", arity)
    if casting is not None:
        _check_inputs(op, name, args, policy, casting, arity)
    if out is None and mask is None:
        return fn(*args, policy=policy)
    if mask is not None:
        args = _masked_checks(op, args, policy, mask, gp_where)
    if out is None:
        result = fn(*args, policy=policy)
        r = describe(result).dtype
        fill = np.zeros((), r.numpy) if r.numpy is not None else {"b": False, "c": 0j}.get(r.kind, 0)
        return gp_where(mask, result, fill, policy=policy)
    if casting is None and mask is None:
        return fn(*args, policy=policy, out=out)   # the policy's out= rule, checked by the call
    plan = plan_for(op, list(args), policy)
    target = describe(out).dtype
    inplace = any(x is not None and same_array(x, out) for x in args)
    direct = True
    if casting is None:
        check_store(plan, target, inplace=inplace)
    elif not can_cast(plan.result, target, casting):
        raise TypeError(f"policy {policy!r}, {name}: Cannot cast ufunc {name!r} output from {plan.result.name} to "
                        f"{target.name} with casting rule {casting!r}. Pass an out= of dtype {plan.result.name}, "
                        f"or casting='unsafe' to convert anyway")
    else:
        try:
            check_store(plan, target, inplace=inplace)
        except TypeError:
            direct = False   # allowed by casting=, not by the policy's own rule: computed, then converted
    if mask is None:
        if direct:
            return fn(*args, policy=policy, out=out)
        return astype(fn(*args, policy=policy), target, policy=policy, out=out)
    result = fn(*args, policy=policy)
    if plan.result is not target:
        result = astype(result, target, policy=policy)
    return gp_where(mask, result, out, policy=policy, out=out)
