"""Storing a result into an existing array: ``out=``, and in place (x += y, out= one of the
inputs). Each framework picks one kinds.StoreRule for each (its rule module's ``out_rule`` and
``inplace_rule``); this module says what each rule allows."""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core.kinds import KIND_ORDER, StoreRule
from .plan import Plan
from .policies import get_policy

__all__ = ["check_store", "STORE_RULES"]


def _torch_can_cast(src: D.DType, dst: D.DType) -> bool:
    """c10::canCast: no complex -> real, no float -> integral, nothing but bool -> bool."""
    if src.kind == "c" and dst.kind != "c":
        return False
    if src.kind == "f" and dst.kind in "bui":
        return False
    return not (src.kind != "b" and dst.kind == "b")


def _same_kind(src: D.DType, dst: D.DType) -> bool:
    if src.numpy is not None and dst.numpy is not None:
        return bool(np.can_cast(src.numpy, dst.numpy, "same_kind"))
    return KIND_ORDER[src.kind] <= KIND_ORDER[dst.kind]  # complex32


#   rule                  (whether result dtype r may be stored into dtype t,  the rule as errors name it)
STORE_RULES = {
    StoreRule.SAME_KIND:  (_same_kind, "'same_kind' casting rule"),
    StoreRule.CAN_CAST:   (_torch_can_cast, "canCast rule"),
    # RFC 431's assign_add (every mode) and the Array API's x1 += x2: the target keeps its dtype
    StoreRule.SAME_DTYPE: (lambda r, t: r is t, "rule that an in-place op keeps its target's dtype"),
    # Paddle's x.add_(y) casts x to the result dtype first (PromoteCastInplace): x takes the result's
    # dtype, which an array whose storage is fixed (an out= array) cannot
    StoreRule.RETYPE:     (lambda r, t: r is t, "in-place rule (x is cast to the result dtype first, PromoteCastInplace)"),
    # JAX arrays are immutable: x += y makes a new x; out= (an extension) follows NumPy's rule
    StoreRule.REBIND:     (_same_kind, "'same_kind' casting rule (gp's out= extension: JAX arrays are immutable)"),
}
if set(STORE_RULES) != set(StoreRule):
    raise ValueError(f"STORE_RULES lacks {set(StoreRule) - set(STORE_RULES)}: every StoreRule needs its line")


def _quiet(line):
    pass


def check_store(plan: Plan, target: D.DType, inplace: bool = False, trace=_quiet) -> None:
    """Raise unless ``plan``'s result may be written into an array of dtype ``target``: ``out=``
    follows the framework's ``out_rule``; ``inplace`` (the target is one of the op's operands:
    x += y, out=x) its ``inplace_rule``, which the frameworks define apart (RFC 431's
    assign_add, the Array API's x1 += x2, PyTorch's x.add_(y), Paddle's PromoteCastInplace)."""
    pol = get_policy(plan.policy)
    name = pol.rules.inplace_rule if inplace else pol.rules.out_rule
    allowed, rule = STORE_RULES[name]
    what = "in-place target" if inplace else "out"
    ok = allowed(plan.result, target)
    trace(f"stored {'in place ' if inplace else ''}into {target.name} ({what}) under {pol.framework}'s {rule}"
          f" ({name}): {'allowed' if ok else 'refused'}")
    if ok:
        return
    if name == StoreRule.RETYPE:
        fix = (f"Use a gp.Array, which `x += y` retypes to {plan.result.name} as Paddle retypes x, or compute "
               f"without out= and cast")
    else:
        fix = (f"Pass an {what} of dtype {plan.result.name}, or cast explicitly: compute without out= and use "
               f".astype('{target.name}')")
    raise TypeError(f"policy {plan.policy!r}, {plan.op}: the result dtype {plan.result.name} cannot be stored "
                    f"into the {what} dtype {target.name} under {pol.framework}'s {rule}. {fix}")
