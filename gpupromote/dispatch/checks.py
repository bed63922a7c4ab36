"""The checks a framework makes on an op's operands before it launches the kernel (integer division
by zero, NumPy's INT_MIN // -1 overflow warning, negative integer powers and shift counts), and the
one place their errors and warnings are raised (report_check), for the eager call and for gp.fuse
(whose kernels report through flags).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import check_integer_divisor, warn_at_caller
from ..promotion.policies import get_policy

__all__ = ["report_check", "checks_of", "needs_checks", "pre_launch_checks"]

_INT_DIVISION_OPS = ("floor_divide", "remainder", "fmod")
_SHIFTS = ("left_shift", "right_shift")


def _float_error(kind, message):
    """Report a NumPy floating-point-error condition the way np.errstate says."""
    mode = np.geterr()[kind]
    if mode == "ignore":
        return
    if mode == "raise":
        raise FloatingPointError(message)
    if mode == "call":
        np.geterrcall()(message, 0)
        return
    warn_at_caller(message, RuntimeWarning)   # the user's line, as NumPy's own warning names it


def report_check(plan, what: str):
    """What the framework does when a check fires before (eager) or during (gp.fuse, through a
    kernel's flags) a launch: the one place these errors and warnings are raised. ``what``: one of
    the conditions checks_of() lists."""
    if what == "zero_division":
        if plan.int_division == "raise":
            check_integer_divisor(plan.policy, get_policy(plan.policy).framework, plan.op, plan.compute.name, True)
        _float_error("divide", f"divide by zero encountered in {plan.op}")
    elif what == "int_min_by_minus_one":
        _float_error("over", f"overflow encountered in {plan.op}")
    elif what == "negative_power":
        raise ValueError("Integers to negative integer powers are not allowed.")
    elif what == "negative_shift":
        raise ValueError(f"policy {plan.policy!r}: {plan.op}(x1, x2) is only defined for x2 >= 0 in "
                         f"{get_policy(plan.policy).framework}, and the shift array x2 holds a negative count "
                         f"(array-api-strict raises ValueError too); take abs() or mask it first")
    else:
        raise ValueError(f"unknown check {what!r}")


def checks_of(plan) -> tuple:
    """The conditions the framework tests on ``plan``'s operands before its kernel runs, in the
    order it tests them: "zero_division" (an integer divisor is 0: raise or warn),
    "int_min_by_minus_one" (NumPy's INT_MIN // -1 overflow warning), "negative_power" (NumPy
    refuses a negative integer exponent), "negative_shift" (the Array API refuses a negative shift
    count)."""
    if plan.compute.kind not in "ui":
        return ()
    if plan.op in _INT_DIVISION_OPS:
        if plan.int_division == "raise":
            return ("zero_division",)
        if plan.int_division == "numpy":
            return ("zero_division", "int_min_by_minus_one") if plan.op == "floor_divide" and \
                plan.compute.kind == "i" else ("zero_division",)
        return ()  # xla: defined values, no warning
    if plan.op == "power" and plan.compute.kind == "i" and get_policy(plan.policy).rules.negative_power_arrays_refused:
        return ("negative_power",)
    if plan.op in _SHIFTS and plan.compute.kind == "i" and get_policy(plan.policy).rules.negative_shift_arrays_refused:
        return ("negative_shift",)
    return ()


def _int_division_checks(plan, args, shape):
    divisor = args[1]
    folded = plan.folded[1]
    for what in checks_of(plan):
        if what == "zero_division":
            fired = (divisor == 0) if folded else (divisor.size > 0 and not bool(divisor.all()))
        else:  # INT_MIN // -1 overflows (the result wraps to INT_MIN); NumPy reports it.
            lo = -(1 << (plan.compute.bits - 1))
            minus_one = (divisor == -1) if folded else bool((divisor == -1).any())
            fired = minus_one and bool(np.logical_and(args[0] == lo, divisor == -1).any())
        if fired:
            report_check(plan, what)


def _power_checks(plan, args):
    exponent, folded = args[1], plan.folded[1]
    if folded:
        negative = exponent < 0
    else:
        negative = exponent.dtype.kind == "i" and exponent.size > 0 and bool((exponent < 0).any())
    if negative:
        report_check(plan, "negative_power")


def pre_launch_checks(plan, args, shape, raw):
    if plan.compute.kind in "ui":
        if plan.op in _INT_DIVISION_OPS:
            _int_division_checks(plan, args, shape)
        elif plan.op == "power" and get_policy(plan.policy).rules.negative_power_arrays_refused:
            # NumPy refuses a negative integer exponent inside an array too (a Python int
            # exponent the resolver has already checked).
            _power_checks(plan, args)
        elif "negative_shift" in checks_of(plan) and not plan.folded[1]:
            # the Array API refuses a negative shift count inside an array too (a Python int the
            # resolver has already checked)
            count = args[1]
            if count.size > 0 and bool((count < 0).any()):
                report_check(plan, "negative_shift")


def needs_checks(plan) -> bool:
    return plan.compute.kind in "ui" and (plan.op in _INT_DIVISION_OPS or plan.op == "power" or (
        plan.op in _SHIFTS and get_policy(plan.policy).rules.negative_shift_arrays_refused))
