"""(policy, op, operands) -> Plan. The only place promotion happens.

A Plan says everything a backend needs and nothing about arrays: the dtype each operand is read
in, which operands are CPU scalars folded into the kernel by value, the dtype the expression is
computed in (opmath) and the result dtype. Backends execute plans; they never promote.

Resolution has three steps, each driven by the policy's data:
  1. the promoted dtype of the operands, by the policy's operand rule (how arrays, 0-d arrays
     and Python scalars take part: NEP 50, PyTorch's categories, weak types on a lattice, ...);
  2. the op's promotion kind (true division to float, comparisons to bool, ...) and the dtype
     kinds the op accepts;
  3. the value checks of Python scalars (an out-of-range int raises where the framework raises).
Steps 1 and 2 depend on dtypes and categories only and are cached; step 3 looks at values.

``explain_resolution`` is ``resolve`` with a tracer attached: the same steps, nothing cached, each
rule that fires written down. ``PROMOTION`` stands for "no op": the policy's own promotion of
any number of operands (np.result_type, jnp.result_type, torch.promote_types, ...).
``check_store`` is the rule for writing a result into an existing array (out=, in place).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import dtypes as D
from .errors import PromotionError, check_integer_divisor, describe_operand, overflow
from .ops import Op, op_named
from .policies import INT_BOUNDS, get_policy

__all__ = ["Operand", "Plan", "resolve", "explain_resolution", "int_bounds", "PROMOTION", "PROMOTE_TYPES",
           "check_store", "STORE_RULES"]

# "No op": the policy's own promotion table and operand rule, with no op's promotion kind, kernel
# list or value conversion (np.result_type, jnp.result_type, xp.result_type, TF's
# flexible_dtypes.result_type, torch.result_type / promote_types). Policies give it rules of its
# own under this name in op_overrides (NumPy's result_type table, Paddle's promoteTypes).
PROMOTION = Op("result_type", 0, "DEFAULT", "buifc", "")
# The same for promote_types, which a framework may define apart from its result_type (JAX's does
# not canonicalize to 32 bits with x64 off): policies override it under this name.
PROMOTE_TYPES = Op("promote_types", 0, "DEFAULT", "buifc", "")
_NO_OP = (PROMOTION.name, PROMOTE_TYPES.name)

_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_PY_KIND_NAME = {"b": "bool", "i": "int", "f": "float", "c": "complex"}


@dataclass(frozen=True)
class Operand:
    """One argument as promotion sees it. ``category``: "array" | "zero-dim" | "scalar"."""
    dtype: D.DType | None      # None for a Python scalar
    category: str
    value: object = None       # the Python scalar (for value checks and folding)
    host: bool = True          # lives in host memory: a 0-d host array can be folded
    weak: bool = False         # a weakly typed array (a JAX weak type, a TF WeakTensor): promotes as a Python
                               # scalar of its kind does, where the policy has weak arrays

    @property
    def pykind(self):
        return D.PY_KINDS[type(self.value)] if self.category == "scalar" else None

    @property
    def kind(self):
        return self.pykind if self.category == "scalar" else self.dtype.kind

    def signature(self):
        if self.dtype is None:
            kind = _PY_KIND_NAME[self.pykind]
            if kind == "int" and self.value >= 2**63:
                kind = "int beyond int64"  # a distinct dtype in PyTorch (uint64)
            return (kind, self.category, self.host)
        if self.weak:
            return (self.dtype.name, self.category, self.host, "weak")
        return (self.dtype.name, self.category, self.host)


@dataclass(frozen=True)
class Plan:
    policy: str
    op: str
    inputs: tuple        # dtype each operand is read in (a folded scalar: the dtype its value is cast to)
    folded: tuple        # operand i is a CPU scalar passed to the kernel by value
    compute: D.DType     # the dtype the expression is evaluated in
    result: D.DType
    promoted: D.DType = None  # the dtype the operands promote to (what a Python scalar converts to)
    flush_subnormals: bool = False  # subnormal float inputs and results are zero (XLA on the CPU)
    weak: bool = False   # JAX / TF: the result is weakly typed
    int_division: str = "numpy"   # integer x // 0 semantics: "numpy" (0), "xla", "raise"
    exact_exponent: bool = False  # power: the folded int exponent counts as it is (JAX's integer_pow: int8 x ** 300
                                  # is not x ** 44); the dispatcher folds an equivalent one (_equivalent_exponent)

    @property
    def key(self):
        return (self.op, tuple(d.name for d in self.inputs), self.folded, self.compute.name,
                self.result.name, self.int_division, self.flush_subnormals)


class _Trace(list):
    def __call__(self, line):
        self.append(line)


def _quiet(line):
    pass


_cache: dict = {}


def _op(op):
    if op is None or op is PROMOTION:
        return PROMOTION
    return PROMOTE_TYPES if op == PROMOTE_TYPES.name else op_named(op)


def resolve(policy: str, op: str | None, operands, trace=None) -> Plan:
    """The plan for ``op`` on ``operands`` (a sequence of Operand) under ``policy``; ``op=None``
    (or PROMOTION): the policy's own promotion of the operands, with no op. With ``trace`` (a
    callable taking one line), every rule that fires is reported and nothing is cached."""
    the_op = _op(op)
    key = (policy, the_op.name, tuple(o.signature() for o in operands))
    no_op = the_op.name in _NO_OP
    plan = None if trace is not None or no_op else _cache.get(key)
    if not no_op and (plan is None or any(o.category == "scalar" and o.pykind == "i" for o in operands)):
        _check_argument_ints(get_policy(policy), the_op.name, operands)
    if plan is None:
        plan = _resolve_dtypes(get_policy(policy), the_op, operands, trace or _quiet)
        # why not no-op plans: their only value check is inside the operand rule (TF's int32 range);
        # api.plan_for caches them with the bounds that keep it out of the way
        if trace is None and not no_op:
            _cache[key] = plan
    if _value_checked(plan, operands):
        plan = _check_values(get_policy(policy), plan, operands, trace or _quiet)
    return plan


def _value_checked(plan, operands) -> bool:
    """Whether step 3 has anything to look at: a Python int, float or complex the op converts
    (a bool converts to anything; PROMOTION converts nothing, as np.result_type does not)."""
    return plan.op not in _NO_OP and any(o.category == "scalar" and o.pykind in "ifc" for o in operands)


def explain_resolution(policy: str, op: str | None, operands, out=None) -> tuple[list[str], Plan | Exception]:
    """The rules that fired, in order, and the plan (or the exception) they led to: ``resolve``
    with a tracer. ``out``: (target dtype, in place) to check storing the result too (check_store)."""
    trace = _Trace()
    try:
        pol, the_op = get_policy(policy), _op(op)
        trace(f"policy {pol.name}: {pol.emulates}")
        if the_op.name in _NO_OP:
            trace(f"no op: {pol.framework}'s own promotion of the operands ({the_op.name})")
        else:
            trace(f"op {the_op.name}: promotion kind {the_op.kind}, defined on kinds {the_op.accepts!r}")
        plan = resolve(policy, op, operands, trace)
        if out is not None:
            check_store(plan, *out, trace=trace)
        return trace, plan
    except Exception as exc:  # noqa: BLE001 - explain reports every failure
        trace(f"=> {type(exc).__name__}: {exc}")
        return trace, exc


# ---------------------------------------------------------------------------------------------
# step 1 and 2: dtypes

def _promoting(op_name, operands):
    """The operands that take part in promotion: all but where's condition."""
    return operands[1:] if op_name == "where" else operands


def _check_arity(pol, op, operands):
    """An op takes its arity; a binary op and PROMOTION take more where the framework promotes
    any number of operands together (its result_type), and two otherwise."""
    n = len(operands)
    no_op = op.name in _NO_OP
    if no_op and n == 0:
        raise TypeError("result_type needs at least one operand (an array, a dtype or a Python scalar)")
    if n == op.arity or (no_op and n <= 2):
        return
    if op.arity != 2 and not no_op:
        raise TypeError(f"{op.name} takes {op.arity} operands, got {n}")
    if n < 2:
        raise TypeError(f"{op.name} takes 2 operands, got {n}")
    if not pol.nary:
        raise TypeError(f"policy {pol.name!r}: {pol.framework} promotes two operands at a time only (it has no n-ary "
                        f"result_type), got {n}; promote pairwise with gp.result_type(a, b, ...) and cast explicitly")


def _check_weak(pol, op, operands):
    for o in operands:
        if o.weak and o.dtype.name not in pol.weak_arrays:
            if not pol.weak_arrays:
                why = f"{pol.framework} has no weakly typed arrays (JAX and TensorFlow do)"
            else:
                why = (f"{pol.framework} has no weakly typed {o.dtype.name} arrays (only "
                       f"{', '.join(d for d in pol.weak_arrays)})")
            raise PromotionError(pol.name, op.name, operands, why, "Pass gp.spec(dtype, ndim) without weak=True, "
                                 "or a Python scalar")


def _resolve_dtypes(pol, op, operands, trace) -> Plan:
    operands = tuple(operands)
    _check_arity(pol, op, operands)
    _check_weak(pol, op, operands)
    values = _promoting(op.name, operands)
    for o in values:
        if o.dtype is not None and o.dtype.name not in pol.dtypes:
            raise PromotionError(pol.name, op.name, operands, f"{pol.framework} has no dtype {o.dtype.name}",
                                 f"Cast to one of {', '.join(sorted(pol.dtypes))} first")
    canonical = _op_policy(pol, op.name)   # an op may canonicalize otherwise (jnp.promote_types does not)
    if canonical.canonical:
        values = tuple(_canonical_operand(canonical, o, trace) for o in values)

    if op.name in pol.scalar_first_refused and values[0].category == "scalar":
        raise PromotionError(pol.name, op.name, operands, f"{pol.framework}'s {op.name} takes no Python scalar "
                             "as its first argument", "Wrap it in an array of the dtype you want first")
    refused_kinds = pol.operand_refuses.get(op.name, "")
    for o in values:
        if o.kind in refused_kinds:
            what = o.dtype.name if o.dtype is not None else f"Python {_PY_KIND_NAME[o.pykind]}"
            raise PromotionError(pol.name, op.name, operands, f"{op.name} refuses {what} operands in "
                                 f"{pol.framework}", "Cast it explicitly, e.g. x.astype('int64')")
    rule = pol.op_rules.get(op.name, op.kind)
    if op.name in pol.op_overrides:
        trace(f"{op.name} has its own rules in {pol.framework}: {', '.join(pol.op_overrides[op.name])}")
        pol = _op_policy(pol, op.name)
    exact_exponent = False
    if rule == "EXPONENT_KEEPS_BASE":
        if len(values) == 2 and _integer_pow(pol, op.name, values):
            # jnp.power with a concrete integer exponent is lax.integer_pow: the base's dtype
            trace(f"integer exponent {describe_operand(values[1])}: the result keeps the base's dtype")
            values, exact_exponent = values[:1], True
        rule = "DEFAULT"
    if rule == "INT_TO_FLOAT" and pol.to_float_inputs and all(o.category != "scalar" and o.dtype.kind in "bui"
                                                               for o in values):
        values = tuple(_float_operand(pol, o, trace) for o in values)
    if op.arity == 1:
        promoted, weak = _unary(pol, op, values, trace)
    else:
        promoted, weak = _OPERAND_RULES[pol.operands](pol, op, values, trace)
    if promoted is None:
        raise PromotionError(pol.name, op.name, operands, weak, _cast_hint(pol, values))

    if promoted.kind == "b" and op.name in pol.bool_to:
        trace(f"{op.name} has no bool kernel in {pol.framework}: bool computes as {pol.bool_to[op.name]}")
        promoted = D.dtype(pol.bool_to[op.name])
    if rule == "INT_TO_DEFAULT_FLOAT" and promoted.kind in "bui":
        trace(f"{op.name} takes {promoted.name} to the default float {pol.default_float}")
        promoted, weak = D.dtype(pol.default_float), weak and promoted.kind != "b"
    elif rule == "INT_TO_FLOAT" and promoted.kind in "bui":
        to = pol.to_float.get(promoted.name, pol.default_float)
        trace(f"{op.name} takes {promoted.name} to float: {to}")
        promoted, weak = D.dtype(to), weak and promoted.kind != "b"
    elif rule == "INT_TO_FLOAT_UNLESS_BOOL" and promoted.kind in "ui":  # why: paddle's bool / bool is bool
        trace(f"{op.name} takes {promoted.name} to float: {pol.default_float}")
        promoted = D.dtype(pol.default_float)

    if promoted.kind in pol.scalar_only_kernels.get(op.name, "") and values[-1].category != "scalar":
        raise PromotionError(pol.name, op.name, operands, f"{op.name} on {promoted.name} runs only with a Python "
                             f"scalar second operand in {pol.framework}", _kind_hint("ui"))
    if promoted.name in pol.refused_dtypes.get(op.name, ()):
        raise PromotionError(pol.name, op.name, operands, f"{op.name} has no {promoted.name} kernel in {pol.framework}",
                             "Cast to float32 first, e.g. x.astype('float32')")
    accepts = "".join(k for k in pol.accepts.get(op.name, op.accepts) if k not in pol.refuses.get(op.name, ""))
    if pol.check_array_kinds:  # the arrays by the API's categories, the promoted dtype by the kernels
        kernels = "".join(k for k in op.accepts if k not in pol.refuses.get(op.name, ""))
        checked = [(o.dtype, accepts) for o in values if o.category != "scalar"] + [(promoted, kernels)]
    else:
        checked = [(promoted, accepts)]
    refused = next((d for d, kinds in checked if d.kind not in kinds), None)
    if refused is not None:
        why = f"{op.name} is not defined for {refused.name} in {pol.framework}"
        raise PromotionError(pol.name, op.name, operands, why, _kind_hint(accepts))

    result = D.bool if op.kind in ("ALWAYS_BOOL", "LOGICAL") else promoted
    if op.kind == "COMPLEX_TO_FLOAT" and promoted.kind == "c":
        result = D.dtype(_REAL_PART[promoted.name])
        trace(f"{op.name} of {promoted.name} is real: {result.name}")
    if pol.canonical:
        result = D.dtype(pol.canonical.get(result.name, result.name))
    compute = D.dtype(_OPMATH.get(promoted.name, promoted.name))
    if op.kind == "LOGICAL":
        scalar_dtype = D.bool  # only a scalar's truth matters: 2**40 stays true, 0.5 too
    elif pol.opmath_ops is None or op.name in pol.opmath_ops:
        scalar_dtype = D.dtype(pol.opmath.get(promoted.name, promoted.name))
    else:
        scalar_dtype = promoted
    folded = tuple(o.category == "scalar" or (o.category == "zero-dim" and o.host and pol.fold_zero_dim)
                   for o in operands)
    inputs = tuple(scalar_dtype if f and i >= (op.name == "where") else (o.dtype or D.bool)
                   for i, (o, f) in enumerate(zip(operands, folded)))
    trace(f"result {result.name}{' (weak)' if weak else ''}, computed in {compute.name}"
          + (f", folded scalars kept in {scalar_dtype.name}" if any(folded) else ""))
    return Plan(pol.name, op.name, inputs, folded, compute, result, promoted=promoted, weak=bool(weak),
                int_division=pol.int_division,
                exact_exponent=exact_exponent and folded[-1] and compute.kind in "ui",
                flush_subnormals=pol.flush_subnormals and op.name not in _BIT_EXACT_FLOAT_OPS)


# Ops a framework computes on the bits (select, sign copy, ulp step): FTZ/DAZ do not touch them.
_BIT_EXACT_FLOAT_OPS = {"where", "copysign", "nextafter"}


# Narrow floats are computed in float32: for one correctly rounded op (+ - * / sqrt) the float32
# result rounded once to the narrow type equals the narrow type's own correctly rounded result,
# and it is what NumPy's float16 loops, ml_dtypes and PyTorch's opmath do.
_OPMATH = {"float16": "float32", "bfloat16": "float32", "float8_e4m3fn": "float32",
           "float8_e5m2": "float32", "complex32": "complex64"}


def _canonical_operand(pol, o, trace):
    if o.dtype is not None and o.dtype.name in pol.canonical:
        to = D.dtype(pol.canonical[o.dtype.name])
        trace(f"{o.dtype.name} operand canonicalized to {to.name} (64-bit types are off)")
        return replace(o, dtype=to)
    return o


_op_policies: dict = {}


def _op_policy(pol, op_name):
    """The policy with ``op_overrides[op_name]`` applied (the policy itself when there are none)."""
    if op_name not in pol.op_overrides:
        return pol
    key = (pol.name, op_name)
    if key not in _op_policies:
        _op_policies[key] = replace(pol, **pol.op_overrides[op_name])
    return _op_policies[key]


def _float_operand(pol, o, trace):
    if o.dtype is not None and o.dtype.kind in "bui":
        to = D.dtype(pol.to_float.get(o.dtype.name, pol.default_float))
        trace(f"{o.dtype.name} operand reads as {to.name} (the first float loop it casts to safely)")
        return replace(o, dtype=to)
    return o


def _cast_hint(pol, values):
    arrays = [o.dtype for o in values if o.dtype is not None]
    if len(arrays) >= 2:
        a, b = arrays[:2]
        wide = a if a.itemsize >= b.itemsize and _KIND_ORDER[a.kind] >= _KIND_ORDER[b.kind] else b
        other = b if wide is a else a
        return f"Cast explicitly, e.g. x.astype('{wide.name}') on the {other.name} operand"
    if arrays:
        return f"Cast the Python scalar to an array of dtype {arrays[0].name} first, or the array to a wider dtype"
    return "Pass arrays with explicit dtypes"


def _kind_hint(accepts):
    names = {"b": "bool", "u": "unsigned", "i": "signed integer", "f": "floating", "c": "complex"}
    return "It accepts " + ", ".join(names[k] for k in "buifc" if k in accepts) + " operands; cast explicitly"


# ---------------------------------------------------------------------------------------------
# Operand rules: how arrays, 0-d arrays and Python scalars take part. Each returns
# (promoted dtype, weak) or (None, reason).

def _unary(pol, op, values, trace):
    """A unary op (-x, abs(x), ~x) keeps its operand's dtype in every framework."""
    (o,) = values
    if o.category == "scalar":
        return None, (f"{op.name} of a Python {_PY_KIND_NAME[o.pykind]}: Python computes it itself "
                      f"({'-' if op.name == 'negative' else op.name}x); pass an array to get a {pol.framework} dtype")
    trace(f"{op.name} keeps its operand's dtype {o.dtype.name}")
    return o.dtype, False


def _strong_join(pol, dtypes_, trace):
    names = [d.name for d in dtypes_]
    joined = pol.promote.join_all(names)
    trace(f"strong dtypes {', '.join(names)} -> {joined or 'refused'}")
    return joined


def _nep50(pol, op, values, trace):
    """NumPy 2: arrays and 0-d arrays are strong; Python scalars are weak and take the strong
    dtype when their kind is not higher (with a range check on ints, done with the values)."""
    strong = [o.dtype for o in values if o.category != "scalar"]
    weak_kinds = [o.pykind for o in values if o.category == "scalar"]
    if not strong:
        top = max(weak_kinds, key=_KIND_ORDER.__getitem__)
        name = pol.weak_default[top]
        trace(f"only Python scalars: the default {top} dtype {name}")
        return D.dtype(name), False
    joined = _strong_join(pol, strong, trace)
    if joined is None:
        return None, f"{' and '.join(d.name for d in strong)} have no common dtype"
    result = D.dtype(joined)
    for kind in weak_kinds:
        before = result
        if _KIND_ORDER[kind] > _KIND_ORDER[result.kind] or (kind == "i" and result.kind == "b"):
            target = pol.weak_upcast.get((result.name, kind)) or pol.weak_default[kind]
            if kind == "c" and result.kind == "f":
                target = pol.weak_upcast.get((result.name, kind), "complex64" if result.itemsize <= 4 else "complex128")
            joined = pol.promote.join(result.name, target)
            if joined is None:
                return None, f"{result.name} has no common dtype with a Python {_PY_KIND_NAME[kind]}"
            result = D.dtype(joined)
        else:
            result = D.dtype(pol.weak_upcast.get((result.name, kind), result.name))
        trace(f"weak Python {_PY_KIND_NAME[kind]} with {before.name} -> {result.name}")
    return result, False


def _torch_categories(pol, op, values, trace):
    """PyTorch: dim tensors, zero-dim tensors and wrapped numbers each promote within their
    category; a lower category only counts when it is of a higher kind (bool < int < float <
    complex), and then only its kind, not its width (combine_categories)."""
    state = {"array": None, "zero-dim": None, "scalar": None}
    for o in values:
        dt = o.dtype.name if o.dtype is not None else pol.weak_default[o.pykind]
        if o.pykind == "i" and o.value >= 2**63:
            dt = "uint64"  # c10::Scalar holds a Python int beyond int64 as uint64
        prev = state[o.category]
        if prev is None:
            state[o.category] = dt
        else:
            joined = pol.promote.join(prev, dt)
            if joined is None:
                return None, f"{pol.framework} does not promote {prev} with {dt}"
            state[o.category] = joined
    trace("categories: " + ", ".join(f"{k}={v}" for k, v in state.items() if v))
    lower = _combine_categories(pol, state["zero-dim"], state["scalar"])
    if isinstance(lower, tuple):
        return lower
    result = _combine_categories(pol, state["array"], lower)
    if isinstance(result, tuple):
        return result
    trace(f"combined -> {result}")
    return D.dtype(result), False


def _combine_categories(pol, higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    hk, lk = D.dtype(higher).kind, D.dtype(lower).kind
    if hk == "c":
        return higher
    if lk == "c":
        if hk == "f":
            to = pol.to_complex.get(higher)
            return to if to else (None, f"{pol.framework} has no complex type for {higher}")
        return lower
    if hk == "f":
        return higher
    if hk == "b" or lk == "f":
        joined = pol.promote.join(higher, lower)
        return joined if joined else (None, f"{pol.framework} does not promote {higher} with {lower}")
    return higher


def _weak_lattice(pol, op, values, trace):
    """JAX and TF RFC 431: Python scalars are weak nodes on the promotion lattice; the join of
    all operands is the result, weakly typed when it is a weak node."""
    nodes = [_node(pol, o) for o in values]
    # a Python bool is strong in JAX (only int, float and complex are weak types)
    if pol.all_weak_by_strong and all((o.category == "scalar" and o.pykind != "b") or o.weak for o in values):
        return _all_weak(pol, values, trace)
    joined = pol.promote.join_all(nodes)
    trace(f"lattice join of {', '.join(nodes)} -> {joined or 'none'}")
    if joined is None:
        return None, f"{' and '.join(nodes)} have no implicit promotion path"
    if joined in pol.weak_default:
        name = pol.weak_default[joined]
        name = pol.canonical.get(name, name)
        trace(f"weak {joined} becomes the default {name}, weakly typed")
        return D.dtype(name), True
    return D.dtype(joined), False


def _node(pol, o):
    """An operand's node on a weak lattice or table: a Python scalar's or a weak array's weak
    node, else its dtype."""
    if o.category == "scalar":
        return pol.weak_node[o.pykind]
    return pol.weak_arrays[o.dtype.name] if o.weak else o.dtype.name


# The dtype JAX gives each kind of Python scalar before any canonicalization (python_scalar_dtypes).
_JAX_PYTHON_SCALAR_DTYPES = {"b": "bool", "i": "int64", "f": "float64", "c": "complex128"}


def _all_weak(pol, values, trace):
    """JAX with every operand weak (_lattice_result_type): the join of their strong dtypes gives
    the kind, and the result is that kind's default dtype, weakly typed (two weak int8 arrays give
    a weak int32 / int64, not int8); a bool result is strong."""
    strong = [_JAX_PYTHON_SCALAR_DTYPES[o.pykind] if o.category == "scalar" else o.dtype.name for o in values]
    joined = pol.promote.join_all(strong)
    trace(f"every operand is weak: the join of their dtypes {', '.join(strong)} -> {joined or 'none'}")
    if joined is None:
        return None, f"{' and '.join(strong)} have no implicit promotion path"
    if joined == "bool":
        return D.bool, False
    # the join of two strong dtypes can be a weak node (uint64 with int8: f*, a Python float)
    kind = _KIND_OF_NODE[joined] if joined in pol.weak_default else D.dtype(joined).kind
    name = _JAX_DEFAULT_TYPES[kind] if kind != "f" else pol.weak_default["f*"]
    name = pol.canonical.get(name, name)
    trace(f"a weak result of kind {kind}: the default {name}, weakly typed")
    return D.dtype(name), True


_KIND_OF_NODE = {"i*": "i", "f*": "f", "c*": "c"}
# dtypes.default_types, before canonicalization (x64 off makes them 32-bit)
_JAX_DEFAULT_TYPES = {"i": "int64", "u": "uint64", "f": "float64", "c": "complex128"}



def _paddle(pol, op, values, trace):
    """PaddlePaddle: each op reaches its kernel by one of a few code paths, chosen by the kind of
    each operand (``pol.routes``, see policies/paddle.py). A Python scalar meets the tensor
    through the route's table, or first becomes a tensor of its default dtype (paddle.where);
    two tensors, a 0-d one among them, go through _paddle_tensors."""
    tensors, zero_dim, scalars = pol.routes[op.name]
    scalar = next((o for o in values if o.category == "scalar"), None)
    if scalar is not None and scalars is None:
        return None, f"{pol.framework}'s {op.name} takes tensors only, not a Python {_PY_KIND_NAME[scalar.pykind]}"
    if scalar is not None and scalars != "tensor":
        tensor = next((o for o in values if o.category != "scalar"), None)
        if tensor is None:
            return None, "two Python scalars: pass at least one tensor"
        cell = scalars.get((tensor.dtype.name, scalar.pykind))
        if tensor.category == "zero-dim":
            cell = scalars.get((tensor.dtype.name, "z" + scalar.pykind), cell)
        trace(f"{tensor.dtype.name} {tensor.category} with a Python {_PY_KIND_NAME[scalar.pykind]}: "
              f"tensor-to-scalar table -> {cell or 'refused'}")
        if cell is None:
            return None, (f"{pol.framework}'s {op.name} takes no Python {_PY_KIND_NAME[scalar.pykind]} "
                          f"with {tensor.dtype.name} tensors")
        return D.dtype(cell), False
    operands = []  # (dtype name, is 0-d) of each tensor the kernel sees
    for o in values:
        if o.category == "scalar":
            name = pol.weak_default[o.pykind]
            trace(f"the Python {_PY_KIND_NAME[o.pykind]} becomes a {name} tensor (paddle.to_tensor)")
            operands.append((name, False))
        else:
            operands.append((o.dtype.name, o.category == "zero-dim" and zero_dim != "tensor"))
    (x, x0), (y, y0) = operands
    result, why = _paddle_tensors(pol, op, tensors, zero_dim, x, x0, y, y0, trace)
    return (D.dtype(result), False) if result else (None, why)


def _paddle_kind(pol, name):
    """The class Paddle's predicates put a dtype in (is_support_int / _float / _complex):
    "i", "f", "c", or None for bool and for float8, which promoteTypes does not know."""
    if (name, name) not in pol.promote.cells:
        return None
    return {"u": "i", "i": "i", "f": "f", "c": "c"}.get(D.dtype(name).kind)


def _paddle_tensors(pol, op, tensors, zero_dim, x, x0, y, y0, trace):
    """Two tensors, as NeedTypePromotion and GetPromoteDtype decide (x0, y0: the tensor is 0-d and
    the op treats 0-d tensors as scalars): (dtype name, None) or (None, reason)."""
    if x == y:
        trace(f"{x} with {x}: no promotion")
        return x, None
    if tensors == "exact":
        return None, (f"{op.name} is not in {pol.framework}'s type-promotion white list: "
                      f"its operands must have one dtype, got {x} and {y}")
    kx, ky = _paddle_kind(pol, x), _paddle_kind(pol, y)
    joined = pol.promote.join(x, y)
    unknown = f"{pol.framework}'s promoteTypes knows no {x if (x, x) not in pol.promote.cells else y}"
    if x0 or y0:
        if zero_dim == "scalar" and not (x0 and y0) and kx is not None and kx == ky:
            keep = y if x0 else x
            trace(f"0-d tensor of the other tensor's kind: {x} with {y} -> {keep}")
            return keep, None
        trace(f"0-d tensor: promoteTypes({x}, {y}) -> {joined or 'refused'}")
        return (joined, None) if joined else (None, unknown)
    if not (kx == ky == "f" or "c" in (kx, ky)):
        return None, (f"{pol.framework} promotes tensors only float with float and complex with any "
                      f"other dtype, not {x} with {y}")
    trace(f"tensors: promoteTypes({x}, {y}) -> {joined or 'refused'}")
    return (joined, None) if joined else (None, unknown)


def _array_api(pol, op, values, trace):
    """The Array API: arrays (0-d too) promote by the standard's table, mixed kinds refused;
    a Python scalar must be of a kind the array dtype can hold and takes the array's dtype."""
    strong = [o.dtype for o in values if o.category != "scalar"]
    scalars = [o for o in values if o.category == "scalar"]
    if not strong:
        return None, "two Python scalars: pass at least one array"
    joined = _strong_join(pol, strong, trace)
    if joined is None:
        return None, f"{' and '.join(d.name for d in strong)} cannot be promoted together"
    result = D.dtype(joined)
    for o in scalars:
        allowed = pol.scalar_kinds[o.pykind]
        if result.kind not in allowed:
            return None, f"a Python {_PY_KIND_NAME[o.pykind]} can only be promoted with {allowed!r}-kind arrays"
        if o.pykind == "c" and result.kind == "f":
            result = D.dtype(pol.promote.join(result.name, "complex64"))
    return result, False


def _pair_table(pol, op, values, trace):
    """A documented pair table (Ascend aclnn): Python scalars and 0-d arrays take part as
    PyTorch's wrapped numbers and zero-dim tensors do (torch_npu drives aclnn this way)."""
    return _torch_categories(pol, op, values, trace)


def _tf_rfc431(pol, op, values, trace):
    """TensorFlow RFC 431 (the ops TF wraps for its dtype conversion modes): the mode's pair table
    over strong dtypes and Python scalar nodes gives the result, a weak node its default dtype,
    weakly typed. An operand the table lacks (float8) makes TF fall back to its legacy rule."""
    _tf_int_range(pol, op, values)
    known = {a for a, _ in pol.promote.cells}
    nodes = [_node(pol, o) for o in values]
    missing = [n for n in nodes if n not in known]
    if missing:
        trace(f"{missing[0]} is not in the {pol.framework} table: TensorFlow falls back to its legacy rule")
        return _tf_legacy(pol, op, values, trace)
    # flexible_dtypes.result_type folds its operands left to right through the pair table
    joined = pol.promote.fold(nodes)
    trace(f"table cell of {', '.join(nodes)} -> {joined or 'refused'}")
    if joined is None:
        return None, f"{pol.framework} does not promote {' with '.join(nodes)} implicitly"
    weak = joined in pol.weak_default
    result = D.dtype(pol.weak_default.get(joined, joined))
    return _tf_convert(pol, op, values, result, weak, trace)


def _tf_int_range(pol, op, values):
    """flexible_dtypes checks a Python int's range before it looks at any dtype, so an int out of
    range is an OverflowError even where the dtypes are refused. (Raising here caches nothing;
    in-range ints give the cached plan, whose ints _check_values checks.)"""
    for o in values:
        if o.category == "scalar" and o.pykind == "i":
            bounds = pol.int_range(D.int32)
            if bounds is not None and not bounds[0] <= o.value <= bounds[1]:
                raise overflow(pol.name, op.name, o, bounds[2])


def _tf_legacy(pol, op, values, trace):
    """TensorFlow without RFC 431 (tf.math.less, logical and bitwise ops, atan2, tf.where, ...):
    no promotion. Tensors must share one dtype; a Python scalar is converted to it, or with no
    tensor the first scalar gives its default dtype (bool, int32, float32, complex128)."""
    tensors = list(dict.fromkeys(o.dtype.name for o in values if o.category != "scalar"))
    if len(tensors) > 1:
        return None, f"TensorFlow's {op.name} does not promote: {tensors[0]} and {tensors[1]} tensors differ"
    if tensors:
        result = D.dtype(tensors[0])
    else:  # the first scalar's dtype; its value may still widen it (_check_inferred_scalars)
        kind = values[0].pykind
        result = D.bool if kind == "b" else D.dtype(pol.weak_default[pol.weak_node[kind]])
    trace(f"no promotion in TensorFlow's {op.name}: every operand is converted to {result.name}")
    return _tf_convert(pol, op, values, result, False, trace)


def _in_range(value, int_dtype_name):
    lo, hi = INT_BOUNDS[int_dtype_name]
    return lo <= value <= hi


def _tf_convert(pol, op, values, result, weak, trace):
    """TF converts each Python scalar to ``result`` (``scalar_table`` holds the conversions that
    exist: True -> int32 does, True -> uint8 does not), then runs the kernel registered for
    ``result``: the op's ``dtypes`` (its OpDef type list, set per op in ``op_overrides``)."""
    for o in values:
        if op.name in _NO_OP:
            break  # flexible_dtypes.result_type reads the table only; converting is the op's business
        if o.category == "scalar" and (result.name, o.pykind) not in pol.scalar_table:
            return None, (f"TensorFlow cannot convert the Python {_PY_KIND_NAME[o.pykind]} {o.value!r} to "
                          f"{result.name} (convert_to_tensor has no such conversion)")
    if result.name not in pol.dtypes:
        has = ", ".join(d.name for d in D.ALL if d.name in pol.dtypes)
        return None, f"TensorFlow's {op.name} has no kernel for {result.name} (only for {has})"
    return result, weak


def _table(pol, op, values, trace):
    """A framework's promotion table on its own (Paddle's promoteTypes): dtypes only, two at a time;
    a Python scalar meets a tensor only through an op's own path, so it is refused here."""
    scalar = next((o for o in values if o.category == "scalar"), None)
    if scalar is not None:
        return None, (f"{pol.framework} has no op-independent rule for a Python {_PY_KIND_NAME[scalar.pykind]}: "
                      f"how a scalar meets a tensor depends on the op, so pass op=")
    names = [o.dtype.name for o in values]
    joined = pol.promote.fold(names)
    trace(f"promotion table of {', '.join(names)} -> {joined or 'refused'}")
    return (D.dtype(joined), False) if joined else (None, f"{pol.framework} does not promote {' with '.join(names)}")


_OPERAND_RULES = {"nep50": _nep50, "torch": _torch_categories, "weak-lattice": _weak_lattice,
                  "paddle": _paddle, "array-api": _array_api, "pair-table": _pair_table, "table": _table}
_OPERAND_RULES.update({"tf-rfc431": _tf_rfc431, "tf-legacy": _tf_legacy})


# ---------------------------------------------------------------------------------------------
# step 3: values of Python ints

def _check_argument_ints(pol, op_name, operands):
    """A Python int outside the range a framework's argument parsing takes fails before any
    dtype rule runs (JAX: "An overflow was encountered while parsing an argument")."""
    pol = _op_policy(pol, op_name)
    values = _promoting(op_name, operands)
    if pol.scalars_infer and any(o.pykind == "c" for o in values) and all(o.category == "scalar" for o in values):
        # TF converts Python scalars with no tensor beside them through NumPy, an int as np.int32
        for o in values:
            if o.pykind == "i" and not _in_range(o.value, "int32"):
                raise overflow(pol.name, op_name, o, "int32")
    if not pol.ints_checked_first or _integer_pow(pol, op_name, operands):
        return
    lo, hi, name, exc = pol.int_range(D.int64)  # a fixed range: the target does not matter
    for i, o in enumerate(operands):
        if o.category == "scalar" and o.pykind == "i" and not lo <= o.value <= hi:
            if pol.checked_operands is None or i in pol.checked_operands:
                raise overflow(pol.name, op_name, o, name, exc)


def _integer_pow(pol, op_name, values):
    """JAX's integer_pow path: power with a Python int (True included) or 0-d integer array as
    the exponent (a 0-d bool array is not one); no argument range checks run on that path."""
    if op_name != "power" or pol.op_rules.get("power") != "EXPONENT_KEEPS_BASE":
        return False
    exponent = values[-1]
    return exponent.category != "array" and exponent.kind in ("bui" if exponent.category == "scalar" else "ui")


def _check_inferred_scalars(pol, plan, operands, trace):
    """TF's convert_to_tensor with no tensor (``scalars_infer``): the first Python scalar's value
    decides its dtype, so an int beyond int32 widens the plan to int64 (beyond int64 it fails) and
    a finite float beyond float32 fails (for ints beside a complex, see _check_argument_ints)."""
    values = _promoting(plan.op, operands)
    if not pol.scalars_infer or any(o.category != "scalar" for o in values):
        return plan
    first = values[0]
    if first.pykind == "f" and abs(first.value) != float("inf") and abs(first.value) > _float_limit(plan.promoted):
        raise OverflowError(f"policy {pol.name!r}, {plan.op}: {first.value!r} is out of range for "
                            f"{plan.promoted.name}, the dtype {pol.framework} gives a Python float")
    if first.pykind == "i" and plan.promoted.name == "int32" and not _in_range(first.value, "int32"):
        if not _in_range(first.value, "int64"):
            raise overflow(pol.name, plan.op, first, "int64")
        trace(f"{first.value} does not fit int32: {pol.framework} converts it to int64")
        skip = plan.op == "where"  # the condition keeps its dtype
        inputs = tuple(D.int64 if folded and i >= skip else d
                       for i, (d, folded) in enumerate(zip(plan.inputs, plan.folded)))
        result = D.int64 if plan.result == plan.promoted else plan.result
        plan = replace(plan, inputs=inputs, compute=D.int64, promoted=D.int64, result=result)
    return plan


def _check_values(pol, plan, operands, trace):
    pol = _op_policy(pol, plan.op)
    plan = _check_inferred_scalars(pol, plan, operands, trace)
    int_arrays = any(o.dtype is not None and o.dtype.kind in "ui" for o in operands if o.category != "scalar")
    target = plan.promoted
    for i, o, ranged in _scalars(pol, plan, operands):
        if ranged and o.pykind in "fc" and target.name in pol.float_check:
            limit = _float_limit(target)
            if any(abs(v) != float("inf") and abs(v) > limit for v in (o.value.real, o.value.imag)):
                raise OverflowError(f"policy {pol.name!r}, {plan.op}: {o.value!r} cannot be converted to "
                                    f"{target.name} without overflow, as in {pol.framework}")
        if o.pykind != "i":
            continue
        bounds = pol.int_range(target, i) if ranged else None
        if bounds is not None and not bounds[0] <= o.value <= bounds[1] and plan.op not in pol.unchecked_ops:
            lo, hi, checked, exc = bounds
            if pol.exact_compare and plan.op in _COMPARISONS and int_arrays and exc is OverflowError:
                # NumPy compares an out-of-range Python int exactly: uint8 [0] < -1 is False.
                wide = D.int64 if -2**63 <= o.value < 2**63 and target.name != "uint64" else D.float64
                trace(f"{o.value} is out of range for {target.name}: compared exactly in {wide.name}")
                inputs = tuple(wide if f else d for d, f in zip(plan.inputs, plan.folded))
                plan = replace(plan, inputs=inputs, compute=wide)
                continue
            raise overflow(pol.name, plan.op, o, checked, exc)
        if i == 1 and plan.compute.kind in "ui":
            if o.value < 0 and plan.op in pol.negative_int_refused:
                raise ValueError(f"policy {pol.name!r}: {plan.op}({plan.compute.name}, {o.value}) is only defined "
                                 f"for a second operand >= 0 in {pol.framework}"
                                 + ("; use a float base, e.g. x.astype('float64')" if plan.op == "power" else ""))
            if plan.op in _DIVISIONS and plan.int_division == "raise":
                check_integer_divisor(pol.name, pol.framework, plan.op, plan.compute.name,
                                      _wrap(o.value, plan.compute) == 0, o.value)
    return plan


def int_bounds(plan: Plan, operands) -> tuple | None:
    """((index, lo, hi), ...) for each Python scalar the policy checks: values inside [lo, hi]
    leave ``plan`` as it is, so callers can cache a plan by dtypes alone (values outside go back
    through resolve, which decides). None when no such bounds exist (a complex scalar checked
    against a complex target: complex numbers have no order), so the plan must not be cached."""
    pol = _op_policy(get_policy(plan.policy), plan.op)
    bounds = []
    target = plan.promoted
    if plan.op not in _NO_OP and any(ranged and o.pykind == "c" and target.name in pol.float_check
                                         for _, o, ranged in _scalars(pol, plan, operands)):
        return None
    values = _promoting(plan.op, operands)
    if pol.scalars_infer and all(o.category == "scalar" for o in values):
        # the dtype depends on the values (_check_inferred_scalars): it holds while ints fit int32
        # and floats float32
        for i, o in enumerate(operands):
            if o.category == "scalar" and o.pykind in "if" and (i > 0 or plan.op != "where"):
                limit = INT_BOUNDS["int32"] if o.pykind == "i" else (-_FLOAT_MAX["float32"], _FLOAT_MAX["float32"])
                bounds.append((i, *limit))
    for i, o, ranged in _scalars(pol, plan, operands):
        if ranged and o.pykind == "f" and target.name in pol.float_check:
            limit = _float_limit(target)
            bounds.append((i, -limit, limit))
        if o.pykind != "i":
            continue
        lo, hi = -float("inf"), float("inf")
        rng = pol.int_range(target, i) if ranged else None
        if rng is not None and plan.op not in pol.unchecked_ops:
            lo, hi = rng[0], rng[1]
        if i == 1 and plan.compute.kind in "ui":
            if plan.op in pol.negative_int_refused:
                lo = max(lo, 0)
            if plan.op in _DIVISIONS and plan.int_division == "raise":
                lo, hi = max(lo, 1), min(hi, 2 ** (plan.compute.bits - (plan.compute.kind == "i")) - 1)
        if (lo, hi) != (-float("inf"), float("inf")):
            bounds.append((i, lo, hi))
    return tuple(bounds)


def _scalars(pol, plan, operands):
    """(position, operand, range-checked) of each Python scalar: JAX's integer_pow path and the
    positions a policy leaves out (checked_operands) skip the range checks."""
    unchecked = _integer_pow(pol, plan.op, operands)
    for i, o in enumerate(operands):
        if o.category == "scalar":
            yield i, o, not unchecked and (pol.checked_operands is None or i in pol.checked_operands)


def _float_limit(dtype):
    return _FLOAT_MAX[_REAL_PART.get(dtype.name, dtype.name)]


def _wrap(value, dtype):
    """A Python int as the two's-complement integer dtype holds it."""
    value &= (1 << dtype.bits) - 1
    return value - (1 << dtype.bits) if dtype.kind == "i" and value >> (dtype.bits - 1) else value


_DIVISIONS = {"floor_divide", "remainder", "fmod"}
_REAL_PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


# ---------------------------------------------------------------------------------------------
# Storing a result into an existing array: out=, and in place (x += y, out= one of the inputs)

def _torch_can_cast(src: D.DType, dst: D.DType) -> bool:
    """c10::canCast: no complex -> real, no float -> integral, nothing but bool -> bool."""
    if src.kind == "c" and dst.kind != "c":
        return False
    if src.kind == "f" and dst.kind in "bui":
        return False
    return not (src.kind != "b" and dst.kind == "b")


_SAME_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _same_kind(src: D.DType, dst: D.DType) -> bool:
    if src.numpy is not None and dst.numpy is not None:
        return bool(np.can_cast(src.numpy, dst.numpy, "same_kind"))
    return _SAME_KIND_ORDER[src.kind] <= _SAME_KIND_ORDER[dst.kind]  # complex32


#   rule          (whether result dtype r may be stored into dtype t,  the rule as errors name it)
STORE_RULES = {
    "same_kind":  (_same_kind, "'same_kind' casting rule"),
    "can_cast":   (_torch_can_cast, "canCast rule"),
    # RFC 431's assign_add (every mode) and the Array API's x1 += x2: the target keeps its dtype
    "same_dtype": (lambda r, t: r is t, "rule that an in-place op keeps its target's dtype"),
    # Paddle's x.add_(y) casts x to the result dtype first (PromoteCastInplace): x takes the result's
    # dtype, which an array whose storage is fixed (an out= array) cannot
    "retype":     (lambda r, t: r is t, "in-place rule (x is cast to the result dtype first, PromoteCastInplace)"),
    # JAX arrays are immutable: x += y makes a new x; out= (an extension) follows NumPy's rule
    "rebind":     (_same_kind, "'same_kind' casting rule (gp's out= extension: JAX arrays are immutable)"),
}


def check_store(plan: Plan, target: D.DType, inplace: bool = False, trace=_quiet) -> None:
    """Raise unless ``plan``'s result may be written into an array of dtype ``target``: ``out=``
    follows the policy's ``out_rule``; ``inplace`` (the target is one of the op's operands: x += y,
    out=x) its ``inplace_rule``, which the frameworks define apart (RFC 431's assign_add, the
    Array API's x1 += x2, PyTorch's x.add_(y), Paddle's PromoteCastInplace)."""
    pol = get_policy(plan.policy)
    name = pol.inplace_rule if inplace else pol.out_rule
    allowed, rule = STORE_RULES[name]
    what = "in-place target" if inplace else "out"
    ok = allowed(plan.result, target)
    trace(f"stored {'in place ' if inplace else ''}into {target.name} ({what}) under {pol.framework}'s {rule}"
          f" ({name}): {'allowed' if ok else 'refused'}")
    if ok:
        return
    if name == "retype":
        fix = (f"Use a gp.Array, which `x += y` retypes to {plan.result.name} as Paddle retypes x, or compute "
               f"without out= and cast")
    else:
        fix = (f"Pass an {what} of dtype {plan.result.name}, or cast explicitly: compute without out= and use "
               f".astype('{target.name}')")
    raise TypeError(f"policy {plan.policy!r}, {plan.op}: the result dtype {plan.result.name} cannot be stored "
                    f"into the {what} dtype {target.name} under {pol.framework}'s {rule}. {fix}")
