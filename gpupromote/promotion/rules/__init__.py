"""The rule modules: how each framework departs from the generic resolver.

promotion/resolve.py runs the same steps for every policy; at each step it asks the policy's ``rules``
(an instance of a subclass of ``Rules``, defined in ``promotion/rules/<framework>.py``). The base class
here is what most frameworks do, so a rule module overrides only its framework's quirks:

  check_arguments  value checks that precede every dtype rule (JAX's argument parsing)
  prepare          the operands as the framework first sees them (canonicalized, refused, read
                   as float) and the op's promotion kind, where an operand changes it
  promote          the operand rule: how arrays, 0-d arrays and Python scalars promote together
  kernel_dtype     the dtype a promoted dtype computes in where the framework has no kernel of it
  to_float         the float an integer promoted dtype becomes for an INT_TO_FLOAT op
  check_kernel     whether the framework has a kernel for the promoted dtype
  scalar_dtype     the dtype a folded Python scalar is kept in (PyTorch's opmath)
  int_range, float_checked, int_outside
                   the value checks of Python scalars, which ``bounds`` states as limits.Bound

and a few class attributes for the framework's fixed choices (integer division by zero, how a
result is stored into an existing array, ...).
"""
from __future__ import annotations

from types import MappingProxyType

from ...core.errors import PromotionError, check_integer_divisor, float_overflow, kind_hint, negative_operand, overflow
from ...core.kinds import IntDivision, StoreRule
from ..limits import Bound, IntRange, float_max, wrap
from ..plan import PY_KIND_NAMES

__all__ = ["Rules", "DIVISIONS", "COMPARISONS", "NO_OPS", "CLIPS", "node_of", "strong_join", "scalar_word", "promoting"]

_EMPTY = MappingProxyType({})
DIVISIONS = frozenset({"floor_divide", "remainder", "fmod"})
COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
# The names of "no op": a policy's own promotion of the operands (resolve.PROMOTION, PROMOTE_TYPES).
NO_OPS = frozenset({"result_type", "promote_types"})
# clip and its one-bound forms (core/ops.py CLIP_OPS): one rule for the three
CLIPS = frozenset({"clip", "_clip_min", "_clip_max"})


class Rules:
    """What most frameworks do. Subclasses set the class attributes their framework differs in
    and override the methods below where its rules differ."""

    nary = False                         # promotes any number of operands together (np.result_type, ...);
                                         # False: two at a time, an n-ary result_type is refused
    int_division = IntDivision.NUMPY     # what integer x // 0 does
    out_rule = StoreRule.SAME_KIND       # storing a result into an out= array
    inplace_rule = StoreRule.SAME_KIND   # ... into one of the op's own operands (x += y)
    flush_subnormals = False             # CPU kernels flush subnormal floats to zero (XLA)
    values = "numpy"                     # whose values kernels give where frameworks differ (core/ops.py)
    clip_saturates_int_bounds = False    # clip takes a Python int bound beyond the dtype as the dtype's end
                                         # (NumPy), not wrapped into it (JAX: 300 clips int8 at 44)
    canonical = _EMPTY                   # dtype -> the dtype an input of it becomes (JAX with x64 off)
    weak_arrays = _EMPTY                 # dtype -> weak node of a weakly typed array of it (JAX, TF)
    bool_kernels = _EMPTY                # op -> dtype a bool promoted dtype computes in (no bool kernel)
    negative_int_refused = frozenset({"power"})  # ops refusing a negative Python int second operand on ints
    sign_checked_first = frozenset()     # ... whose sign is checked before the int's range
    negative_power_arrays_refused = False  # int ** an array holding a negative int raises (NumPy)
    negative_shift_arrays_refused = False  # a shift by an array holding a negative count raises (Array API)

    def canonical_for(self, op_name):
        """The canonicalization an op applies to its inputs and result."""
        return self.canonical

    # --- dtypes --------------------------------------------------------------------------------

    def check_arguments(self, pol, op_name, operands):
        """Value checks that run before any dtype rule (and so before any PromotionError)."""

    def prepare(self, pol, op, kind, values, operands, trace):
        """(values, kind, exact_exponent): the promoting operands as the op's rules see them, its
        promotion kind, and whether a folded int exponent counts exactly (JAX's integer_pow)."""
        return values, kind, False

    def promote(self, pol, op, values, trace):
        """(promoted DType, weakly typed) of the promoting operands, or (None, why refused)."""
        raise NotImplementedError(f"{type(self).__name__} has no operand rule")

    def kernel_dtype(self, pol, op_name, promoted):
        """The dtype the framework's kernel computes ``promoted`` in where it has no kernel of that
        dtype (a bool input of a ufunc with no bool loop), or None: as it is."""
        return self.bool_kernels.get(op_name) if promoted.kind == "b" else None

    def accumulator(self, pol, op_name, dtype) -> str:
        """The dtype a sum or product (ACCUMULATE) of ``dtype`` accumulates in and returns."""
        return dtype.name

    def index_dtype(self, pol) -> str:
        """The dtype of an index (argmax)."""
        return "int64"

    def result_dtype(self, pol, op_name, promoted):
        """The result dtype where the framework departs from the op's kind (torch.any of uint8),
        or None."""
        return None

    def to_float(self, pol, op_name, dtype) -> str:
        """The float dtype an INT_TO_FLOAT op makes of a bool or integer ``dtype``."""
        return pol.default_float

    def kernel_kinds(self, pol, op) -> str:
        """The dtype kinds the framework's kernels for ``op`` take."""
        refused = pol.refuses.get(op.name, "")
        return "".join(k for k in pol.accepts.get(op.name, op.accepts) if k not in refused)

    def check_kernel(self, pol, op, promoted, values, operands):
        """Raise PromotionError where the framework has no kernel for the promoted dtype."""
        accepts = self.kernel_kinds(pol, op)
        if promoted.kind not in accepts:
            raise PromotionError(pol.name, op.name, operands, f"{op.name} is not defined for {promoted.name} in "
                                 f"{pol.framework}", kind_hint(accepts))

    def scalar_dtype(self, pol, op_name, promoted):
        """The dtype a folded Python scalar (or 0-d host array) is converted to first."""
        return promoted

    # --- values ----------------------------------------------------------------------------------

    def ranged(self, pol, op_name, operands) -> bool:
        """Whether the range checks apply at all (JAX's integer_pow skips them)."""
        return True

    def int_range(self, pol, op_name, target, position) -> IntRange | None:
        """Where a Python int operand at ``position`` must lie when it meets ``target`` (the
        promoted dtype), or None where any int is taken (and wraps)."""
        return None

    def float_checked(self, op_name, target, position) -> bool:
        """Whether a finite Python float must fit ``target`` (c10::checked_convert)."""
        return False

    def int_outside(self, pol, plan, operands, rng):
        """What an int outside ``rng`` does: the framework's error."""
        def outside(plan, o, trace):
            raise overflow(pol.name, plan.op, o, rng.name, rng.error)
        return outside

    def bounds(self, pol, plan, operands) -> list:
        """Every value check of ``plan``'s Python scalars, as limits.Bound, in the order the
        framework makes them."""
        found = []
        ranged = self.ranged(pol, plan.op, operands)
        target = plan.promoted
        for i, o in enumerate(operands):
            if o.category != "scalar":
                continue
            if ranged and o.pykind in "fc" and self.float_checked(plan.op, target, i):
                limit = float_max(target)
                found.append(Bound(i, -limit, limit, _float_outside(pol, target)))
            if o.pykind != "i":
                continue
            sign_checked = i == 1 and plan.compute.kind in "ui" and plan.op in self.negative_int_refused
            if sign_checked and plan.op in self.sign_checked_first:
                found.append(Bound(1, 0, float("inf"), _negative_outside(pol)))
            rng = self.int_range(pol, plan.op, target, i) if ranged else None
            if rng is not None:
                found.append(Bound(i, rng.lo, rng.hi, self.int_outside(pol, plan, operands, rng)))
            if i == 1 and plan.compute.kind in "ui":
                if sign_checked and plan.op not in self.sign_checked_first:
                    found.append(Bound(1, 0, float("inf"), _negative_outside(pol)))
                if plan.op in DIVISIONS:
                    # raise: the divisor's check; else the launch checks' (NumPy warns for x // 0 and
                    # INT_MIN // -1): the plan holds, but a call that may warn takes the full path
                    compute = plan.compute
                    outside = _divisor_outside(pol) if plan.int_division == IntDivision.RAISE else _plan_holds
                    found.append(Bound(1, 1, 2 ** (compute.bits - (compute.kind == "i")) - 1, outside))
        return found


def _plan_holds(plan, o, trace):
    return plan


def _float_outside(pol, target):
    def outside(plan, o, trace):
        limit = float_max(target)
        parts = (o.value.real, o.value.imag) if type(o.value) is complex else (o.value,)
        if any(abs(v) != float("inf") and abs(v) > limit for v in parts):  # inf and nan convert
            raise float_overflow(pol.name, pol.framework, plan.op, o.value, target.name)
        return plan
    return outside


def _negative_outside(pol):
    def outside(plan, o, trace):
        raise negative_operand(pol.name, pol.framework, plan.op, plan.compute.name, o.value)
    return outside


def _divisor_outside(pol):
    def outside(plan, o, trace):
        check_integer_divisor(pol.name, pol.framework, plan.op, plan.compute.name,
                              wrap(o.value, plan.compute) == 0, o.value)
        return plan
    return outside


# --- helpers several rule modules share -------------------------------------------------------

def node_of(rules, o):
    """An operand's node on a weak lattice or table: a Python scalar's or a weak array's weak
    node, else its dtype's name."""
    if o.category == "scalar":
        return rules.weak_node[o.pykind]
    return rules.weak_arrays[o.dtype.name] if o.weak else o.dtype.name


def strong_join(table, dtypes, trace):
    """The join of strong dtypes on ``table`` (a Lattice or PairTable): a dtype name or None."""
    names = [d.name for d in dtypes]
    joined = table.join_all(names)
    trace(f"strong dtypes {', '.join(names)} -> {joined or 'refused'}")
    return joined


def scalar_word(o) -> str:
    """'Python int', 'Python float', ... for a Python scalar operand."""
    return f"Python {PY_KIND_NAMES[o.pykind]}"


def promoting(op_name, operands):
    """The operands that take part in promotion: all but where's condition."""
    return operands[1:] if op_name == "where" else operands
