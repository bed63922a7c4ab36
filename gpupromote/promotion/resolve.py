"""(policy, op, operands) -> Plan. The only place promotion happens.

Resolution runs the same steps for every policy; at each one the policy's rule module
(gpupromote/promotion/rules/<framework>.py) says what its framework does:
  1. the promoted dtype of the operands, by the rule module's operand rule (how arrays, 0-d
     arrays and Python scalars take part: NEP 50, PyTorch's categories, weak types, ...);
  2. the op's promotion kind (true division to float, comparisons to bool, ...) and whether the
     framework has a kernel for the dtype;
  3. the value checks of Python scalars, stated by the rule module as limits.Bound.
Steps 1 and 2 depend on dtypes and categories only; step 3 looks at values, and the bounds it
states let api.plan_for cache a plan by dtypes and categories alone.

``explain_resolution`` is ``resolve`` with a tracer attached: the same steps, nothing cached,
each rule that fires written down, so explain cannot disagree with result_type. ``PROMOTION``
stands for "no op": the policy's own promotion of any number of operands (np.result_type,
jnp.result_type, torch.promote_types, ...).
"""
from __future__ import annotations

from ..core import dtypes as D
from ..core.errors import PromotionError, cast_hint
from ..core.kinds import PromotionKind as K
from .limits import cache_bounds, within
from ..core.ops import Op, op_named
from .plan import PY_KIND_NAMES, Operand, Plan
from . import refusals
from .policies import get_policy
from .rules import NO_OPS, promoting
from .store import check_store

__all__ = ["Operand", "Plan", "resolve", "explain_resolution", "int_bounds", "refuse_scalars", "PROMOTION",
           "PROMOTE_TYPES", "check_store"]

# "No op": the policy's own promotion table and operand rule, with no op's promotion kind, kernel
# list or value conversion (np.result_type, jnp.result_type, xp.result_type, TF's
# flexible_dtypes.result_type, torch.result_type / promote_types).
PROMOTION = Op("result_type", 0, "DEFAULT", "buifc", "")
# The same for promote_types, which a framework may define apart from its result_type (JAX's does
# not canonicalize to 32 bits with x64 off).
PROMOTE_TYPES = Op("promote_types", 0, "DEFAULT", "buifc", "")


class _Trace(list):
    def __call__(self, line):
        self.append(line)


def _quiet(line):
    pass


def _op(op):
    if op is None or op is PROMOTION:
        return PROMOTION
    return PROMOTE_TYPES if op == PROMOTE_TYPES.name else op_named(op)


def resolve(policy: str, op: str | None, operands, trace=None, form=None) -> Plan:
    """The plan for ``op`` on ``operands`` (a sequence of Operand) under ``policy``; ``op=None``
    (or PROMOTION): the policy's own promotion of the operands, with no op. ``form``: how the call
    is written (core/kinds.Form; None: the op's default, core/ops.default_form), which decides
    whether a Python scalar is refused outright (promotion/refusals.py); the plan of a call taken
    is the same in every form. With ``trace`` (a callable taking one line), every rule that fires
    is reported. Pure: nothing is cached here (api.plan_for keeps the one plan cache)."""
    pol, the_op = get_policy(policy), _op(op)
    if the_op.name == "astype":
        return _astype(pol, tuple(operands), trace or _quiet)
    no_op = the_op.name in NO_OPS
    if not no_op:
        refuse_scalars(policy, op, operands, form)   # step 0: the framework's argument parsing
        pol.rules.check_arguments(pol, the_op.name, operands)
    plan = _resolve_dtypes(pol, the_op, tuple(operands), trace or _quiet)
    # step 3, where there is anything to look at: a Python int, float or complex the op converts
    # (a bool converts to anything; no op converts nothing, as np.result_type does not)
    if not no_op and any(o.category == "scalar" and o.pykind in "ifc" for o in operands):
        for bound in pol.rules.bounds(pol, plan, operands):
            o = operands[bound.position]
            if not within(o.value, bound.lo, bound.hi):
                plan = bound.outside(plan, o, trace or _quiet)
    return plan


def refuse_scalars(policy: str, op: str, operands, form=None) -> None:
    """Raise PromotionError where ``policy``'s framework refuses a Python scalar among ``operands``
    in ``form`` of ``op`` (promotion/refusals.py), whatever their dtypes: the first step of resolve,
    and what the dispatcher asks before NumPy's dtype= makes a Python scalar an array."""
    pol, name = get_policy(policy), _op(op).name
    refusals.check(pol, name, operands, refusals.form_of(name, form),
                   lambda changed, in_form: _takes(policy, op, changed, in_form))


def _takes(policy, op, operands, form) -> bool:
    try:
        resolve(policy, op, operands, form=form)
    except (TypeError, ValueError, ArithmeticError):
        return False
    return True


def int_bounds(plan: Plan, operands) -> tuple | None:
    """((index, lo, hi), ...): the value checks of ``plan``'s Python scalars as bounds within
    which the plan holds as it is, so callers can cache it by dtypes alone (values outside go
    back through resolve, which decides). None where no such bounds exist (a complex scalar
    checked against a complex target: complex numbers have no order): then nothing is cached."""
    pol = get_policy(plan.policy)
    return cache_bounds(pol.rules.bounds(pol, plan, operands), operands)


def explain_resolution(policy: str, op: str | None, operands, out=None, form=None) -> tuple[list[str], Plan | Exception]:
    """The rules that fired, in order, and the plan (or the exception) they led to: ``resolve``
    with a tracer. ``out``: (target dtype, in place) to check storing the result too (check_store);
    ``form``: as for resolve."""
    trace = _Trace()
    try:
        pol, the_op = get_policy(policy), _op(op)
        trace(f"policy {pol.name}: {pol.emulates}")
        if the_op.name in NO_OPS:
            trace(f"no op: {pol.framework}'s own promotion of the operands ({the_op.name})")
        else:
            trace(f"op {the_op.name}: promotion kind {pol.kinds.get(the_op.name, the_op.kind)}, defined on kinds "
                  f"{pol.rules.kernel_kinds(pol, the_op)!r}")
            refused = refusals.described(pol, the_op.name, refusals.form_of(the_op.name, form))
            if refused:
                trace(refused)
        plan = resolve(policy, op, operands, trace, form)
        if out is not None:
            check_store(plan, *out, trace=trace)
        return trace, plan
    except Exception as exc:  # noqa: BLE001 - explain reports every failure
        trace(f"=> {type(exc).__name__}: {exc}")
        return trace, exc


# ---------------------------------------------------------------------------------------------
# steps 1 and 2: dtypes

def _check_arity(pol, op, operands):
    """An op takes its arity; a binary op and PROMOTION take more where the framework promotes
    any number of operands together (its result_type), and two otherwise."""
    n = len(operands)
    no_op = op.name in NO_OPS
    if no_op and n == 0:
        raise TypeError("result_type needs at least one operand (an array, a dtype or a Python scalar)")
    if n == op.arity or (no_op and n <= 2):
        return
    if op.arity != 2 and not no_op:
        raise TypeError(f"{op.name} takes {op.arity} operands, got {n}")
    if n < 2:
        raise TypeError(f"{op.name} takes 2 operands, got {n}")
    if not pol.rules.nary:
        raise TypeError(f"policy {pol.name!r}: {pol.framework} promotes two operands at a time only (it has no n-ary "
                        f"result_type), got {n}; promote pairwise with gp.result_type(a, b, ...) and cast explicitly")


def _check_dtypes(pol, op, operands):
    """Every dtype is one the framework has; a weakly typed array only where it has those."""
    weak_arrays = pol.rules.weak_arrays
    for o in operands:
        if o.weak and o.dtype.name not in weak_arrays:
            why = (f"{pol.framework} has no weakly typed arrays (JAX and TensorFlow do)" if not weak_arrays else
                   f"{pol.framework} has no weakly typed {o.dtype.name} arrays (only {', '.join(weak_arrays)})")
            raise PromotionError(pol.name, op.name, operands, why, "Pass gp.spec(dtype, ndim) without weak=True, "
                                 "or a Python scalar")
    for o in promoting(op.name, operands):
        if o.dtype is not None and o.dtype.name not in pol.dtypes:
            raise PromotionError(pol.name, op.name, operands, f"{pol.framework} has no dtype {o.dtype.name}",
                                 f"Cast to one of {', '.join(sorted(pol.dtypes))} first")


def _resolve_dtypes(pol, op, operands, trace) -> Plan:
    rules = pol.rules
    _check_arity(pol, op, operands)
    _check_dtypes(pol, op, operands)
    kind = pol.kinds.get(op.name, op.kind)
    values, kind, exact_exponent = rules.prepare(pol, op, kind, promoting(op.name, operands), operands, trace)
    promoted, weak = _unary(pol, op, values, trace) if op.arity == 1 else rules.promote(pol, op, values, trace)
    if promoted is None:
        raise PromotionError(pol.name, op.name, operands, weak, cast_hint(values))
    computes_as = rules.kernel_dtype(pol, op.name, promoted)
    if computes_as is not None:
        trace(f"{op.name} has no {promoted.name} kernel in {pol.framework}: {promoted.name} computes as {computes_as}")
        promoted = D.dtype(computes_as)
    promoted, weak = _apply_kind(pol, op, kind, promoted, weak, trace)
    rules.check_kernel(pol, op, promoted, values, operands)

    result = D.bool_ if kind in (K.ALWAYS_BOOL, K.LOGICAL) else promoted
    if kind == K.INDEX:
        result = D.dtype(rules.index_dtype(pol))
        trace(f"{op.name} gives an index: {result.name}")
    result = D.dtype(rules.result_dtype(pol, op.name, promoted) or result.name)
    if kind in (K.COMPLEX_TO_FLOAT, K.INT_TO_FLOAT_REAL, K.INT_TO_DEFAULT_FLOAT_REAL) and promoted.kind == "c":
        result = D.dtype(_REAL_PART[promoted.name])
        trace(f"{op.name} of {promoted.name} is real: {result.name}")
    canonical = rules.canonical_for(op.name)
    result = D.dtype(canonical.get(result.name, result.name))
    compute = D.dtype(_OPMATH.get(promoted.name, promoted.name))
    # LOGICAL: only a scalar's truth matters (2**40 stays true, 0.5 too)
    scalar_dtype = D.bool_ if op.kind == K.LOGICAL else rules.scalar_dtype(pol, op.name, promoted)
    folded = tuple(o.category == "scalar" or (o.category == "zero-dim" and o.host) for o in operands)
    inputs = tuple(scalar_dtype if f and i >= (op.name == "where") else (o.dtype or D.bool_)
                   for i, (o, f) in enumerate(zip(operands, folded)))
    trace(f"result {result.name}{' (weak)' if weak else ''}, computed in {compute.name}"
          + (f", folded scalars kept in {scalar_dtype.name}" if any(folded) else ""))
    return Plan(pol.name, op.name, inputs, folded, compute, result, promoted=promoted, weak=bool(weak),
                int_division=rules.int_division, values=rules.values,
                exact_exponent=exact_exponent and folded[-1] and compute.kind in "ui",
                flush_subnormals=rules.flush_subnormals and op.name not in _BIT_EXACT_FLOAT_OPS
                and not (op.name in _TESTED_ON_BITS_WHEN_NARROW and promoted.is_narrow_float))


def _astype(pol, operands, trace) -> Plan:
    """astype(x, dtype): no promotion. The dtype is the result (canonicalized as JAX with x64 off
    canonicalizes it), and the kernel reads x as it, which converts as NumPy's astype converts (NaN
    and out-of-range floats to integers as on x86-64)."""
    if len(operands) != 2:
        raise TypeError(f"astype takes an operand and a dtype, got {len(operands)} operands")
    x, (to_dtype, x_dtype) = operands[0], (operands[1].dtype, operands[0].dtype)
    canonical = pol.rules.canonical_for("astype")   # JAX with x64 off: astype(x, float64) is float32
    to = D.dtype(canonical.get(to_dtype.name, to_dtype.name))
    if to is not to_dtype:
        trace(f"{pol.framework} makes {to_dtype.name} {to.name}")
    if x.category == "scalar":
        raise PromotionError(pol.name, "astype", operands[:1], f"astype of a Python {PY_KIND_NAMES[x.pykind]} "
                             "gives no array", f"Pass an array: gp.asarray(x).astype('{to.name}')")
    # Note: no check of the policy's dtypes: astype is the caller's explicit conversion, and a gp
    # array may hold a dtype its policy's framework lacks (complex32 on a device, under numpy)
    trace(f"astype: {x_dtype.name} converted to {to.name}, NumPy's conversion")
    # Note: a 0-d host array is not folded: the kernel converts it, as it converts an array
    return Plan(pol.name, "astype", (x_dtype,), (False,), to, to, promoted=to,
                values=pol.rules.values)


def _apply_kind(pol, op, kind, promoted, weak, trace):
    """The promoted dtype as the op's promotion kind turns it (bool/int to float, ...)."""
    if kind in (K.DEFAULT, K.ALWAYS_BOOL, K.LOGICAL, K.COMPLEX_TO_FLOAT, K.INDEX):
        return promoted, weak
    if kind == K.ACCUMULATE:
        to = pol.rules.accumulator(pol, op.name, promoted)
        if to != promoted.name:
            trace(f"{op.name} accumulates {promoted.name} in {to}")
        return D.dtype(to), weak
    if promoted.kind not in ("ui" if kind == K.INT_TO_FLOAT_UNLESS_BOOL else "bui"):
        return promoted, weak
    if kind in (K.INT_TO_DEFAULT_FLOAT, K.INT_TO_DEFAULT_FLOAT_REAL):
        to = pol.default_float
    elif kind in (K.INT_TO_FLOAT, K.INT_TO_FLOAT_REAL):
        to = pol.rules.to_float(pol, op.name, promoted)
    elif kind == K.INT_TO_FLOAT_UNLESS_BOOL:  # why: Paddle's bool / bool is bool
        to = pol.default_float
    else:
        raise ValueError(f"policy {pol.name!r}, {op.name}: promotion kind {kind} is not handled here; "
                         f"its rule module must resolve it (as promotion/rules/jax_numpy.py resolves EXPONENT_KEEPS_BASE)")
    trace(f"{op.name} takes {promoted.name} to float: {to}")
    return D.dtype(to), weak if kind == K.INT_TO_FLOAT_UNLESS_BOOL else weak and promoted.kind != "b"


def _unary(pol, op, values, trace):
    """A unary op starts from its operand's dtype (the op's promotion kind then turns it)."""
    (o,) = values
    if o.category == "scalar":
        return None, (f"{op.name} of a Python {PY_KIND_NAMES[o.pykind]}: Python computes it itself "
                      f"({'-' if op.name == 'negative' else op.name}x); pass an array to get a {pol.framework} dtype")
    trace(f"{op.name} of {o.dtype.name}")
    return o.dtype, False


# Ops a framework computes on the bits (select, sign copy, ulp step, negation, a part of a complex
# number): FTZ/DAZ do not touch them (jnp.negative of a subnormal is one).
_BIT_EXACT_FLOAT_OPS = {"where", "copysign", "nextafter", "negative", "positive", "absolute", "conj", "real", "imag"}
# Ops XLA computes on a narrow float's bits, with no FTZ: jnp.logical_not of a bfloat16 subnormal is
# False (of a float32 subnormal: True, flushed)
_TESTED_ON_BITS_WHEN_NARROW = {"logical_not"}
_REAL_PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}

# Narrow floats are computed in float32: for one correctly rounded op (+ - * / sqrt) the float32
# result rounded once to the narrow type equals the narrow type's own correctly rounded result,
# and it is what NumPy's float16 loops, ml_dtypes and PyTorch's opmath do.
_OPMATH = {"float16": "float32", "bfloat16": "float32", "float8_e4m3fn": "float32",
           "float8_e5m2": "float32", "complex32": "complex64"}
