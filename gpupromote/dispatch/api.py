"""The promotion half of the public API: policies, specs, result_type, promote_types, explain."""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os

import numpy as np

from ..core import caches
from ..core import errors as _errors
from ..core import dtypes as D
from ..core.ops import ALIASES, default_form
from . import foreign as interop
from .array import Array
from ..promotion.limits import INT64_END
from ..promotion.policies import get_policy, policy_names
from ..promotion.refusals import form_of
from ..promotion.resolve import Operand, explain_resolution, int_bounds, resolve

__all__ = ["CURRENT_POLICY", "policies", "set_policy", "use_policy", "get_policy_name", "spec", "Spec", "describe",
           "result_type", "promote_types", "explain", "plan_for", "cached_plan"]

_DEFAULT_POLICY = "numpy"
# The policy name of this thread / async context: its .get() is how the hot paths read it.
CURRENT_POLICY = contextvars.ContextVar("gpupromote_policy", default=_DEFAULT_POLICY)


def policies() -> list[str]:
    return policy_names()


def set_policy(name: str) -> None:
    """Set the policy of this thread / async context (each thread starts with 'numpy')."""
    get_policy(name)
    CURRENT_POLICY.set(name)


def get_policy_name() -> str:
    return CURRENT_POLICY.get()


@contextlib.contextmanager
def use_policy(name: str):
    """``with gp.use_policy("jax"): ...`` - scoped to this thread / async task."""
    get_policy(name)
    token = CURRENT_POLICY.set(name)
    try:
        yield name
    finally:
        CURRENT_POLICY.reset(token)


_SPEC_KEYS: dict = {}


class Spec:
    """An abstract array: a dtype and a number of dimensions, no data (like a meta tensor);
    ``weak=True``: a weakly typed array (a JAX weak type, a TensorFlow WeakTensor), which the
    policies of frameworks that have them promote as they do, and the others refuse."""
    __slots__ = ("dtype", "ndim", "device", "weak", "_key")

    def __init__(self, dtype, ndim=1, device="cpu", weak=False):
        for name, value in (("dtype", D.dtype(dtype)), ("ndim", int(ndim)), ("device", device),
                            ("weak", bool(weak))):
            object.__setattr__(self, name, value)
        signature = describe(self).signature()
        # why: its plan-cache key, built once and shared by equal specs, so that fastpath/result_type.c can
        # memoize calls on specs by identity as it does for numpy dtypes
        object.__setattr__(self, "_key", _SPEC_KEYS.setdefault(signature, (signature, None)))

    def __setattr__(self, name, value):
        raise AttributeError(f"gp.spec is immutable (its plan-cache key is built once); "
                             f"make another: gp.spec({self.dtype.name!r}, ndim=...)")

    def __repr__(self):
        return f"gp.spec({self.dtype.name!r}, ndim={self.ndim}{', weak=True' if self.weak else ''})"


def spec(dtype, ndim=1, device="cpu", weak=False) -> Spec:
    """An abstract array of ``dtype`` with ``ndim`` dimensions (0: a 0-d array); ``weak=True`` for
    a weakly typed one (JAX, TensorFlow)."""
    return Spec(dtype, ndim, device, weak)


_PY_SCALARS = (bool, int, float, complex)


def describe(x) -> Operand:
    """An operand as promotion sees it: arrays (numpy, cupy, gp.Array, torch), 0-d arrays,
    specs, dtype-likes (a strong array of that dtype) and Python scalars (weak)."""
    t = type(x)
    if t in _PY_SCALARS:
        return Operand(None, "scalar", x)
    if t is np.ndarray:
        return Operand(D.dtype(x.dtype), "zero-dim" if x.ndim == 0 else "array")
    if x is None:
        # why: np.dtype(None) is float64, and None is never meant as that
        raise TypeError("cannot use None as an operand: pass an array, gp.spec(...), a dtype or a Python "
                        "bool/int/float/complex")
    if t is Spec:
        return Operand(x.dtype, "zero-dim" if x.ndim == 0 else "array", None, x.device == "cpu", x.weak)
    if t is D.DType:  # a dtype: a strong array of it
        return Operand(x, "array")
    if isinstance(x, np.generic):  # numpy scalars behave as 0-d arrays
        return Operand(D.dtype(x.dtype), "zero-dim")
    if isinstance(x, Array):
        return Operand(x.dtype, "zero-dim" if x.ndim == 0 else "array", None, x.device == "cpu")
    if interop.is_foreign(x):  # torch, JAX, ...: where the data lives says whether it is on the host
        dtype, ndim, host = interop.describe(x)
        return Operand(dtype, "zero-dim" if ndim == 0 else "array", None, host)
    if hasattr(x, "dtype") and hasattr(x, "ndim") and not isinstance(x, type):  # CuPy arrays
        host = type(x).__module__.split(".")[0] not in ("cupy",) and str(getattr(x, "device", "cpu")) == "cpu"
        return Operand(D.dtype(x.dtype), "zero-dim" if x.ndim == 0 else "array", None, host)
    if isinstance(x, _PY_SCALARS):  # bool / int subclasses (np.bool_ is not one)
        return Operand(None, "scalar", t.__mro__[[c in _PY_SCALARS for c in t.__mro__].index(True)](x))
    try:
        return Operand(D.dtype(x), "array")
    except TypeError:
        raise TypeError(f"cannot use {x!r} ({t.__name__}) as an operand: pass an array, gp.spec(...), "
                        f"a dtype or a Python bool/int/float/complex") from None


# (policy, op, two key fields per operand...) -> (plan, bounds of the Python ints it holds for,
# plan.result). The fields are cheap to build (no tuple per operand) and equal keys mean equal
# Operands but for the values of Python scalars. fastpath/result_type.c builds the same keys and reads the
# same values: keep it in step with _operand_key. The one plan cache: promotion/resolve.py caches nothing.
_plans: dict = {}
_PLANS_LIMIT = 65536
caches.register(_plans.clear)


_ndarray = np.ndarray


_SCALAR_TYPES = frozenset(_PY_SCALARS)
# Operand types that carry their plan-cache key, interned, in a `_key` slot (a DType operand is an
# array of that dtype); fastpath/result_type.c reads that slot directly.
_KEYED_TYPES = frozenset({Spec, D.DType})
for _d in D.ALL:
    _d._key = (describe(_d).signature(), None)


def _neutral(value):
    """A scalar of the same key as ``value`` that no policy's value check refuses."""
    if type(value) is float:
        return 1.0
    return 1 if value < INT64_END else INT64_END


def _operand_key(x):
    """Two fields of the plan-cache key: (dtype or Python type or signature, detail); the
    detail is whether an array is 0-d, or whether a Python int is beyond int64."""
    t = type(x)
    if t is _ndarray:
        return x.dtype, x.ndim == 0
    if t in _SCALAR_TYPES:
        return t, t is int and x >= INT64_END
    if t in _KEYED_TYPES:
        return x._key
    if isinstance(x, np.generic):  # a numpy scalar is described as a 0-d array
        return x.dtype, True
    return describe(x).signature(), None


def _key(policy, op, operands, form=None):
    if form is not None:
        op = _op_key(op, form)
    if len(operands) == 2:  # why: the common case, without a loop
        return (policy or CURRENT_POLICY.get(), op, *_operand_key(operands[0]), *_operand_key(operands[1]))
    return (policy or CURRENT_POLICY.get(), op, *(field for x in operands for field in _operand_key(x)))


def _op_key(op, form):
    """The op field of a plan-cache key: the op's name for its default form (the key
    fastpath/result_type.c builds), (name, form) for the other; a form a policy refuses Python scalars
    in never shares plans with one that takes them."""
    if op is None or op in ("result_type", "promote_types"):
        return op
    form = form_of(op, form)
    return op if form == default_form(op) else (op, form)


_CLIP_NAMES = frozenset({"clip", *(alias for alias, name in ALIASES.items() if name == "clip")})


def clip_form(op, operands):
    """(op, operands) with clip's None bounds taken out: clip(x, lo, hi) stays, clip(x, None, hi)
    is _clip_max(x, hi), clip(x, lo, None) _clip_min(x, lo); any other op is returned as it is."""
    if op not in _CLIP_NAMES:
        return op, tuple(operands)
    if len(operands) != 3:
        raise TypeError(f"clip takes (x, lo, hi), got {len(operands)} operands: pass None for a missing bound")
    x, lo, hi = operands
    if lo is None and hi is None:
        raise ValueError("clip needs a bound: lo and hi are both None (NumPy: 'One of max or min must be given')")
    if lo is None:
        return "_clip_max", (x, hi)
    if hi is None:
        return "_clip_min", (x, lo)
    return "clip", (x, lo, hi)


def plan_for(op, operands, policy=None, form=None):
    """The Plan for ``op`` on ``operands``: cached by dtypes and categories; Python ints are
    checked on every call against the bounds the policy gives them. ``form``: how the call is
    written (core/kinds.Form; None: the op's default), as resolve takes it."""
    op, operands = clip_form(op, operands)
    key = _key(policy, op, operands, form)
    hit = _plans.get(key)
    if hit is not None:
        plan, bounds, _ = hit
        for i, lo, hi in bounds:
            if not lo <= operands[i] <= hi:
                break
        else:
            return plan
    described = [describe(x) for x in operands]
    plan = resolve(key[0], op, described, form=form)
    if hit is None:
        # the plan for these dtypes with Python scalars every policy takes (1 and 1.0)
        in_range = [Operand(None, "scalar", _neutral(o.value)) if o.category == "scalar"
                    and type(o.value) in (int, float) else o for o in described]
        try:
            cached = resolve(key[0], op, in_range, form=form)
        except (TypeError, ValueError, ArithmeticError):
            return plan  # no value of this key passes: nothing worth caching
        bounds = int_bounds(cached, described)
        if bounds is not None:  # None: the scalars' values cannot be bounded, so each call resolves
            if len(_plans) >= _PLANS_LIMIT:
                _plans.clear()   # why: bounded; the compiled path's memo holds its own references
            _plans[key] = (cached, bounds, cached.result)
    return plan


def cached_plan(op, operands, policy=None, form=None):
    """(plan, bounds) as cached for ``operands``' key: the plan of ordinary values of its Python
    scalars and the ((position, lo, hi), ...) within which that plan holds; None where no such
    value passes. Raises, as resolve does, for the values given."""
    plan_for(op, operands, policy, form)
    hit = _plans.get(_key(policy, op, operands, form))
    return None if hit is None else hit[:2]


def _py_result_type(*operands, op="add", policy=None, form=None) -> D.DType:
    """The result dtype of ``op`` on ``operands`` under ``policy`` (default: the current policy).
    For ``op="where"`` pass (x, y) or (cond, x, y). More than two operands: their promotion
    together, where the framework promotes any number (np.result_type, jnp.result_type, ...; a
    TypeError where it does not), then the op's rule. ``op=None``: the policy's promotion alone,
    as the framework's result_type function gives it (no op's kind, kernels or value checks).
    ``form``: "function" (gp.<op>(a, b), torch.maximum(a, b)) or "operator" (a + b), where the
    framework refuses a Python scalar in one and takes it in the other (torch.maximum(x, 2.0)
    raises); default: the operator where Python has one for the op, else the function."""
    if form is not None and _op_key(op, form) != op:   # not the op's default form: a key of its own
        return plan_for(op, (True,) + operands if op == "where" and len(operands) == 2 else operands,
                        policy, form).result
    if len(operands) == 2 and op != "where":
        # The hot path, inlined: _operand_key of both operands, then one dict lookup.
        a, b = operands
        ta, tb = type(a), type(b)
        a0, a1 = (a.dtype, a.ndim == 0) if ta is _ndarray else _operand_key(a)
        b0, b1 = (b.dtype, b.ndim == 0) if tb is _ndarray else _operand_key(b)
        hit = _plans.get((policy or CURRENT_POLICY.get(), op, a0, a1, b0, b1))
        if hit is not None:
            for i, lo, hi in hit[1]:  # the Python scalars' values, where the policy checks them
                if not lo <= operands[i] <= hi:
                    break
            else:
                return hit[2]
    elif op == "where" and len(operands) == 2:
        operands = (True,) + operands
    return plan_for(op, operands, policy).result


def _compiled_result_type():
    """gp.result_type with its cache-hit path in C (gpupromote/dispatch/fastpath/result_type.c), when that extension
    was built and GPUPROMOTE_PURE_PYTHON is unset; the Python function otherwise."""
    if os.environ.get("GPUPROMOTE_PURE_PYTHON"):
        return _py_result_type
    try:
        from . import _fastpath
    except ImportError:  # no C compiler at install time, or run from a source tree (PYTHONPATH=.)
        return _py_result_type
    _fastpath.bind(_plans, CURRENT_POLICY, _ndarray, np.generic, tuple(_KEYED_TYPES), _operand_key, _py_result_type)
    caches.register(_fastpath.forget)   # its memo repeats entries of _plans
    return _fastpath.result_type


result_type = _compiled_result_type()


def promote_types(a, b, policy=None) -> D.DType:
    """Promotion of two dtypes (strong arrays with dimensions) by the policy's own promotion
    table, whatever the op: np.promote_types, torch.promote_types, jnp.promote_types, the Array
    API's result_type, TensorFlow's flexible_dtypes.result_type, Paddle's promoteTypes."""
    return result_type(D.dtype(a), D.dtype(b), op="promote_types", policy=policy)


def _cast_works(policy, op, operands, what, source, target) -> bool:
    """Whether ``policy`` takes ``op`` on ``operands`` once they are cast as a fix hint would say
    (core/errors.CastHint: "array" - each array operand of dtype ``source`` -, "all" - every array
    operand -, or "scalar" - each Python scalar made an array -, to dtype ``target``). where's
    condition stays as it is."""
    to = D.dtype(target)
    cast = []
    for i, o in enumerate(operands):
        if op == "where" and i == 0 and len(operands) == 3:
            pass
        elif what == "scalar" and o.category == "scalar":
            o = Operand(to, "array")
        elif what != "scalar" and o.dtype is not None and (what == "all" or o.dtype.name == source):
            o = dataclasses.replace(o, dtype=to, weak=False)
        cast.append(o)
    try:
        resolve(policy, op, cast)
    except (TypeError, ValueError, ArithmeticError):
        return False
    return True


_errors.register_hint_check(_cast_works)


def explain(*operands, op="add", policy=None, out=None, form=None) -> str:
    """A human-readable account of the rules that fired for ``op`` on ``operands`` (the resolver's
    own steps, traced: it ends as gp.result_type ends); for a gp.fuse function and its arguments,
    ``explain(f, *args)``, the same for every step of the chain. ``out``: an array (or gp.spec)
    the result is stored into; one of ``operands`` (by identity) for an in-place op, whose rule
    differs by framework. ``form``: as for result_type."""
    if operands and hasattr(operands[0], "_traces") and callable(operands[0]):
        return operands[0].explain(*operands[1:], policy=policy)
    if op == "where" and len(operands) == 2:
        operands = (True,) + operands
    op, operands = clip_form(op, operands)
    name = policy or CURRENT_POLICY.get()
    store = None
    if out is not None:
        store = (describe(out).dtype, any(out is x for x in operands))
    trace, outcome = explain_resolution(name, op, [describe(x) for x in operands], store, form)
    lines = [f"{op or 'result_type'}({', '.join(_show(x) for x in operands)}) under policy {name!r}:"]
    lines += [f"  - {line}" for line in trace]
    if not isinstance(outcome, Exception):
        lines.append(f"  => {outcome.result.name}" + (" (weakly typed)" if outcome.weak else ""))
    return "\n".join(lines)


def _show(x):
    o = describe(x)
    if o.category == "scalar":
        return repr(x)
    return f"{o.dtype.name}[]" if o.category == "zero-dim" else f"{o.dtype.name}[n]"
