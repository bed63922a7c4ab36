"""gp.sanitize: report values that a promotion's conversions or an integer op lose.

    with gp.sanitize():                 # or action="raise"; GPUPROMOTE_SANITIZE=1 (or =raise) for
        gp.add(i64, f32)                # the whole process; gp.add(a, b, sanitize=True) for one call

While it is on, every op runs its kernel with the sanitizer's checks (kernel/lossy.py: a range
compare per converted integer, an overflow test per integer op and per narrowed float, each setting
a flag byte), on either engine, eager and fused (gp.fuse) and on Dask blocks. Only when a flag fired
does the host compute, with NumPy on the inputs, how many elements lost what and the first one
(``run``; a fused chain is run again eagerly for it, its result unused): the clean path costs the
compares. Folded Python scalars and 0-d host operands are one value each and are checked here when
they are folded (``check_folded``): a float that overflows or flushes to zero in the dtype it is
kept in (JAX's float16 + 1e5), an int that is not exact or wraps, a clip bound that wraps. JAX x32's
canonicalization of 64-bit arrays is checked on the host where the eager call makes it
(``check_canonical``). Results are the same bits with the sanitizer on and off. A report is a
LossyPromotionWarning, or with action="raise" a LossyPromotionError; both carry ``report``
(core/errors.LossReport).

The compiled dispatcher and the Python fast runners decline every call while any thread sanitizes
(``active_anywhere``: one flag they test), so a sanitized call always reaches the eager path.
"""
from __future__ import annotations

import math
import os
import threading
import warnings
from contextvars import ContextVar

import numpy as np

from ..core import dtypes as D
from ..core.errors import LossReport, LossyPromotionError, LossyPromotionWarning, describe_operand, warn_at_caller
from ..kernel import lossy
from ..promotion.plan import Operand
from ..promotion.resolve import explain_resolution
from ..promotion.rules import CLIPS

__all__ = ["sanitize", "current", "active_anywhere", "add_sink", "run", "check_folded", "folded_check",
           "check_canonical", "collecting", "emit_collected", "for_call", "quiet_rerun"]

_ACTIONS = {"warn": "warn", "raise": "raise", "off": None, True: "warn", False: None, None: None}


def _from_environment():
    text = os.environ.get("GPUPROMOTE_SANITIZE", "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return None
    return "raise" if text == "raise" else "warn"


_ENV = _from_environment()
_STATE: ContextVar = ContextVar("gpupromote_sanitize", default=_ENV)
_COLLECT: ContextVar = ContextVar("gpupromote_sanitize_collect", default=None)
# How many sanitize() blocks are open in any thread (plus one for the environment): while > 0 the
# fast paths decline every call. One list, read by the op functions without a lookup.
active_anywhere = [1 if _ENV else 0]
_sinks: list = []
_lock = threading.Lock()


def add_sink(sink):
    """``sink(on: bool)`` is told whenever sanitizing starts or stops anywhere (the compiled
    dispatcher's switch)."""
    _sinks.append(sink)
    sink(bool(active_anywhere[0]))


def _opened(delta):
    with _lock:   # (blocks open and close in several threads at once)
        before = bool(active_anywhere[0])
        active_anywhere[0] += delta
        if bool(active_anywhere[0]) != before:
            for sink in _sinks:
                sink(bool(active_anywhere[0]))


def current():
    """The action of the sanitizer here ("warn", "raise"), or None when it is off."""
    return _STATE.get()


class sanitize:
    """``with gp.sanitize(action="warn"):``: every op inside reports values its promotion loses
    (module docstring). ``action``: "warn" (a LossyPromotionWarning), "raise" (a
    LossyPromotionError), "off" (none, inside an outer block or under GPUPROMOTE_SANITIZE)."""

    def __init__(self, action="warn"):
        if action not in ("warn", "raise", "off"):
            raise ValueError(f"gp.sanitize(action={action!r}): the action is 'warn', 'raise' or 'off'")
        self.action = _ACTIONS[action]
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_STATE.set(self.action))
        _opened(1)
        return self

    def __exit__(self, *exc):
        _STATE.reset(self._tokens.pop())
        _opened(-1)
        return False


def for_call(flag):
    """The context of one call's ``sanitize=`` keyword (True / "warn", "raise", False / "off")."""
    if flag not in _ACTIONS or isinstance(flag, int) and not isinstance(flag, bool):
        raise ValueError(f"sanitize={flag!r}: pass True, False, 'warn', 'raise' or 'off'")
    return sanitize("off" if _ACTIONS[flag] is None else _ACTIONS[flag])


# ---------------------------------------------------------------------------------------------
# Reporting

class collecting:
    """Reports made inside are kept in ``reports`` instead of warned or raised (gp.fuse reruns a
    chain eagerly to say what its kernel's flags found, and reports them once)."""

    def __enter__(self):
        self.reports = []
        self._token = _COLLECT.set(self.reports)
        return self

    def __exit__(self, *exc):
        _COLLECT.reset(self._token)
        return False


def _emit(report: LossReport, action=None):
    kept = _COLLECT.get()
    if kept is not None:
        kept.append(report)
        return
    action = action or current() or "warn"
    if action == "raise":
        raise LossyPromotionError(report.message(), report)
    warn_at_caller(LossyPromotionWarning(report.message(), report), LossyPromotionWarning)


def emit_collected(reports, action=None):
    for report in reports:
        _emit(report, action)


def _rule(plan, operands) -> str:
    """The resolver's steps for the plan, as gp.explain prints them, less the policy's and the op's
    description."""
    try:
        steps, _ = explain_resolution(plan.policy, plan.op, operands)
    except Exception:  # noqa: BLE001 - a report must not fail for the sake of its explanation
        return "?"
    return "; ".join(steps[2:]) or "?"


def _shown(operands):
    return tuple(describe_operand(o) if o.category == "scalar" else
                 (f"{o.dtype.name}[]" if o.category == "zero-dim" else f"{o.dtype.name}[n]") for o in operands)


def _operands_of(plan):
    """Operands as a plan describes them (where the caller has no descriptions at hand)."""
    zero = {"b": False, "u": 0, "i": 0, "f": 0.0, "c": 0j}
    return [Operand(None, "scalar", zero[d.kind]) if f else Operand(d, "array") for d, f in zip(plan.inputs, plan.folded)]


def _report(plan, operands, **fields) -> LossReport:
    operands = operands if operands is not None else _operands_of(plan)
    return LossReport(op=plan.op, policy=plan.policy, operands=_shown(operands), result=plan.result.name,
                      rule=_rule(plan, operands), **fields)


# ---------------------------------------------------------------------------------------------
# Folded scalars: checked when they are folded

def _python(x):
    if type(x) in (bool, int, float, complex):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "biuc":
        return x.item()
    return float(x.astype(np.float64)) if x.dtype.kind == "f" or x.dtype.kind == "V" else x.item()


def folded_check(plan, i, operand, operands=None):
    """The ``check`` folding.fold_operand calls for folded operand ``i`` while sanitizing."""
    return lambda meant, folded: check_folded(plan, i, operand, meant, folded, operands)


def check_folded(plan, i, operand, value, folded, operands=None):
    """Report what folding operand ``i`` (``value``, a Python scalar or a 0-d host array) into
    ``folded`` (the kernel parameter) lost; nothing for a value that survived (rounding a float is
    no loss: that is what a narrower float is)."""
    to = D.bool_ if plan.op == "where" and i == 0 else plan.compute
    if to.kind == "b" or plan.inputs[i].kind == "b":
        return   # a truth value (logical ops keep a scalar as bool): only zero or not matters
    v, f = _python(value), _python(folded)
    if isinstance(v, bool) or isinstance(v, complex) or isinstance(f, complex) and f.imag:
        return
    f = f.real if isinstance(f, complex) else f
    what = None
    from_uint64 = getattr(getattr(operand, "dtype", None), "name", None) == "uint64"
    if isinstance(v, int) and from_uint64 and v >= 1 << 63 and to.kind in "if":
        what = "uint64_high"   # as an array's element would be (kernel/lossy.py)
    elif isinstance(v, int):
        if isinstance(f, float):
            what = None if math.isfinite(f) and int(f) == v else (
                "float_overflow" if not math.isfinite(f) else "inexact_int")
        elif int(f) != v:
            what = "clip_bound" if plan.op in CLIPS else "int_range"
    elif isinstance(v, float) and isinstance(f, float) and math.isfinite(v):
        what = "float_overflow" if not math.isfinite(f) else ("float_underflow" if v != 0 and f == 0 else None)
    if what is None:
        return
    source = operand.dtype.name if getattr(operand, "dtype", None) is not None else type(v).__name__
    kept = plan.inputs[i]   # the dtype the framework keeps the scalar in, before the compute dtype
    target = kept if kept.kind != "b" and kept.itemsize <= to.itemsize else to
    _emit(_report(plan, operands, what=what, operand=i, source=source, target=target.name,
                  count=1, size=1, index=None, value=v, became=f))


# ---------------------------------------------------------------------------------------------
# Arrays: the kernel's flags, then the host's count

def _host(x):
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        x = x.get()
    return np.asarray(x)


def _conversion_mask(what, x, src: D.DType, dst: D.DType):
    """Which elements of the integer array ``x`` (of ``src``) converting to ``dst`` loses, and what
    they become."""
    if x.dtype != src.numpy and x.dtype.itemsize == src.numpy.itemsize:
        x = x.view(src.numpy)   # narrow floats a device keeps as their bit patterns
    with np.errstate(all="ignore"):
        if what in ("float_overflow", "float_underflow"):
            y = x.astype(dst.numpy)
            if what == "float_overflow":
                return np.isfinite(x) & ~np.isfinite(y), y
            return (x != 0) & (y == 0), y
        if what == "uint64_high":
            return x >= np.uint64(1 << 63), x.astype(dst.numpy if dst.numpy is not None else np.float64)
        if what == "int_range":
            lo, hi = lossy.int_range(dst)
            return (x < lo) | (x > hi), x.astype(dst.numpy)
        real = {"complex64": np.float32, "complex128": np.float64, "complex32": np.float16}.get(dst.name, dst.numpy)
        y = x.astype(real).astype(np.float64)
        top = 2.0 ** (src.bits - 1) if src.kind == "i" else 2.0 ** src.bits
        inside = np.isfinite(y) & (y >= (-top if src.kind == "i" else 0.0)) & (y < top)
        back = np.where(inside, y, 0.0).astype(src.numpy)
        return ~inside | (back != x), y


def _wrap_mask(op, compute: D.DType, args, r):
    """Which elements of integer ``op`` on ``args`` (arrays of ``compute``) wrapped, given the
    results ``r``: exactly (the kernel's test may be wider)."""
    signed = compute.kind == "i"
    lowest = np.array(lossy.int_range(compute)[0]).astype(compute.numpy)
    a = args[0]
    b = args[1] if len(args) > 1 else a
    with np.errstate(all="ignore"):
        if op == "floor_divide":
            return (a == lowest) & (b == -1)
        if op in ("negative", "absolute"):
            return (a == lowest) if signed else (a != 0)
        if compute.bits < 64:
            wide = np.int64 if signed else np.uint64
            aw, bw = a.astype(wide), b.astype(wide)
            exact = aw + bw if op == "add" else aw - bw if op == "subtract" else aw * bw
            return exact != r.astype(wide)
        if op == "add":
            return ((a ^ r) & (b ^ r)) < 0 if signed else r < a
        if op == "subtract":
            return ((a ^ b) & (a ^ r)) < 0 if signed else a < b
        # a wrapped product is never a multiple of a that divides back to b
        nonzero = a != 0
        mask = nonzero & (r // np.where(nonzero, a, 1) != b)
        return mask | ((a == -1) & (b == lowest)) if signed else mask


def check_canonical(plan, i, x, to: D.DType, operands=None):
    """JAX with x64 off makes a 64-bit array 32-bit before any op sees it (eager._canonicalize):
    report the integers that wrap and the floats that overflow or flush to zero in ``to`` (on the
    host, from the array; a device array is copied for it)."""
    x = _host(x)
    src = D.dtype(x.dtype)
    if src.kind not in "uif" or x.size == 0:
        return
    with np.errstate(all="ignore"):
        y = x.astype(to.numpy)
        if src.kind in "ui":
            lo, hi = lossy.int_range(to)
            masks = [("int_range", (x < lo) | (x > hi))]
        else:
            finite = np.isfinite(x)
            masks = [("float_overflow", finite & ~np.isfinite(y)), ("float_underflow", (x != 0) & (y == 0))]
    for what, mask in masks:
        flat = mask.ravel()
        count = int(np.count_nonzero(flat))
        if count:
            k = int(np.argmax(flat))
            _emit(_report(plan, operands, what=what, operand=i, source=src.name, target=to.name, count=count,
                          size=int(x.size), index=k, value=x.ravel()[k].item(), became=y.ravel()[k].item()))


def _span(x):
    """(first, last + 1) byte address of an array's elements, host or device; None for a scalar."""
    iface = getattr(x, "__cuda_array_interface__", None) or getattr(x, "__array_interface__", None)
    if iface is None or not getattr(x, "ndim", 0) or x.size == 0:
        return None
    lo = hi = iface["data"][0]
    for n, st in zip(x.shape, x.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + x.dtype.itemsize


def _aliased(kargs, target) -> bool:
    out = _span(target)
    spans = [_span(x) for x in kargs]
    return out is not None and any(s is not None and s[0] < out[1] and out[0] < s[1] for s in spans)


def run(plan, backend, kargs, target, operands=None):
    """Evaluate ``plan`` on ``kargs`` into ``target`` with the sanitizer's checks, then report."""
    kernel = lossy.sanitized(plan)
    if not kernel.checks:
        backend.run(plan, kargs, target)
        return
    flags = backend.asarray(np.zeros(len(kernel.checks), np.uint8))
    if _aliased(kargs, target):
        # Note: in place (x += y), the kernel writes into a temporary, copied to ``target`` after:
        # a fired flag's count reads the operands, which the store must not have changed yet
        into = backend.empty(target.shape, plan.result)
        backend.run_kernel(kernel, kargs, into, flags, plan)
        _report_fired(plan, kernel, _host(flags), kargs, into, operands)
        backend.copyto(target, into)
        return
    backend.run_kernel(kernel, kargs, target, flags, plan)
    _report_fired(plan, kernel, _host(flags), kargs, target, operands)


def _report_fired(plan, kernel, fired, kargs, target, operands):
    if not fired.any():
        return
    shape = tuple(target.shape)
    size = int(np.prod(shape, dtype=np.int64))
    for check, hit in zip(kernel.checks, fired):
        if not hit:
            continue
        if check.what == "int_wrap":
            args = [np.broadcast_to(_host(x).astype(plan.compute.numpy), shape) for x in kargs]
            r = _host(target).astype(plan.compute.numpy)
            mask = _wrap_mask(plan.op, plan.compute, args, r)
            became = r
            value = lambda k: tuple(a.flat[k].item() for a in args)  # noqa: E731
            fields = dict(operand=None, source=plan.compute.name, target=plan.result.name)
        else:
            i, src, dst = check.info
            x = np.broadcast_to(_host(kargs[i]), shape)
            mask, became = _conversion_mask(check.what, x, D.dtype(src), D.dtype(dst))
            value = lambda k: x.flat[k].item()  # noqa: E731
            fields = dict(operand=i, source=src, target=dst)
        mask = np.broadcast_to(mask, shape).ravel()
        count = int(np.count_nonzero(mask))
        if not count:
            continue   # the kernel's range test is wider than the loss (int64 2**60 is exact in float64)
        k = int(np.argmax(mask))
        _emit(_report(plan, operands, what=check.what, count=count, size=size, index=k, value=value(k),
                      became=np.broadcast_to(became, shape).flat[k].item(), **fields))


def quiet_rerun(fn):
    """Run ``fn()`` collecting the sanitizer's reports and no other warning (the kernel that ran
    first reported those already); returns the reports."""
    with collecting() as kept, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                fn()
            except Exception:  # noqa: BLE001 - the fused run raised nothing: an eager rerun may (checks)
                pass
    return kept.reports
