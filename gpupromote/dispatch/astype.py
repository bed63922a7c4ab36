"""gp.astype: x converted to a dtype, with no promotion, and its fast path: by (policy, x's dtype,
the dtype as given), the CPU engine's runner of the plan (``x.astype`` of float32[1024]: 14 us
through the general path, about 3 here).
"""
from __future__ import annotations

import numpy as np

from ..core import caches
from .api import CURRENT_POLICY, plan_for
from ..engines import get_backend
from .checks import needs_checks
from . import conventions
from . import sanitize as _sanitize
from ..promotion.policies import get_policy

__all__ = ["make_astype"]

_ndarray = np.ndarray
_MISS = object()
_LIMIT = 4096   # runners kept (one per policy, dtype and target: the limit bounds unusual dtypes)


def make_astype(call):
    """gp.astype, whose general path is ``call`` (opfunctions.call)."""
    runners: dict = {}
    caches.register(runners.clear)
    current = CURRENT_POLICY.get
    sanitizing = _sanitize.active_anywhere

    def astype(x, dtype, /, *, policy=None, out=None, casting="unsafe"):
        if out is None and casting == "unsafe" and type(x) is _ndarray and not sanitizing[0]:
            # the fast path (the module docstring)
            try:
                key = (policy or current(), x.dtype, dtype)
                runner = runners.get(key, _MISS)
            except TypeError:   # (an unhashable dtype argument: the general path reads it)
                key, runner = None, None
            if runner is _MISS:
                runner = _astype_runner(x, dtype, key[0])
                if len(runners) >= _LIMIT:
                    runners.clear()
                runners[key] = runner
            if runner is not None:
                res = runner(x)
                if res is not None:
                    return res
        dtype = conventions.dtype_of(dtype)
        if casting != "unsafe":
            conventions.check_astype_casting(x, dtype, casting)
        return call("astype", (x, dtype), policy, out)
    astype.__doc__ = ("astype(x, dtype, *, policy=None, out=None, casting='unsafe'): x converted to dtype as NumPy's "
                      "astype converts (on x86-64: NaN and out-of-range floats to integers included), on either "
                      "engine and inside gp.fuse. No promotion: the result is dtype under every policy that has it. "
                      "casting= ('no', 'equiv', 'safe', 'same_kind'; default 'unsafe', as NumPy's astype) refuses a "
                      "conversion the rule does not allow, with a TypeError.")
    astype.__module__ = "gpupromote"
    return astype


def _astype_runner(x, dtype, policy):
    """The CPU engine's runner of astype(x, dtype) under ``policy`` for arrays like ``x``, or None
    where such calls take the general path: byte-swapped arrays, policies with canonical dtypes
    (JAX x32 converts first), plans with checks or without numpy storage, and whatever the
    general path refuses (it raises there, in its words)."""
    if not x.dtype.isnative:
        return None
    try:
        pol = get_policy(policy)
        if pol.rules.canonical:
            return None
        plan = plan_for("astype", (x, conventions.dtype_of(dtype)), policy)
    except Exception:  # noqa: BLE001 - the general path meets it again and raises it in its words
        return None
    if needs_checks(plan) or plan.inputs[0].numpy is None or plan.result.numpy is None:
        return None
    make = getattr(get_backend("cpu"), "fast_runner", None)
    return None if make is None else make(plan, [None])
