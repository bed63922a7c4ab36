"""Python scalars a framework refuses in one form of a call and takes in another.

torch.maximum(t, 2.0) raises "TypeError: maximum(): argument 'other' (position 2) must be Tensor,
not float"; paddle.add(x, 1) raises where x + 1 runs. The promotion of an accepted call is the same
in every form; only whether a Python scalar may stand in a place differs, by the form (core/kinds.Form:
gp.<op>(...) is the function form, gp.Array's and traced operators the operator form) and the op.

Each policy states these as a literal table (``ScalarRefusals``, in its policies/<framework>.py):
(form, op) -> (the framework's spelling of the call, {position: Python scalar kinds refused there}).
``check`` is what promotion/resolve.py asks first, before any dtype rule (a framework refuses them
while parsing the arguments). A 0-d array is never refused here: only a Python bool, int, float
or complex.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import dtypes as D
from ..core.errors import PromotionError
from ..core.kinds import Form
from ..core.ops import OPS, PYTHON_OPERATORS, default_form
from .plan import PY_KIND_NAMES, Operand

__all__ = ["ScalarRefusals", "NO_REFUSALS", "FIRST", "EITHER", "form_of", "check", "described"]

_ORDINALS = ("first", "second", "third")

# the refusals the policies' tables spell most: a Python scalar of any kind refused as the first operand,
# or in either place
FIRST = {0: "bifc"}
EITHER = {0: "bifc", 1: "bifc"}
_SCALAR_KINDS = "bifc"


@dataclass(frozen=True)
class ScalarRefusals:
    """A policy's refusals of Python scalars. ``table``: (form, op) -> (how the framework spells the
    call - "torch.maximum", or the operator "&" -, {position: the Python scalar kinds, of "bifc",
    refused there}); ``to_tensor``: the framework call that makes a Python scalar a tensor, which
    the fix names ("torch.tensor")."""
    table: dict = field(default_factory=dict)
    to_tensor: str = ""

    def __post_init__(self):
        # why: a misspelt form, op, position or kind raises here, at import
        checked = {}
        for (form, op), (called, positions) in self.table.items():
            if op not in OPS:
                raise ValueError(f"ScalarRefusals: unknown op {op!r}")
            for position, kinds in positions.items():
                if not 0 <= position < OPS[op].arity or not kinds or set(kinds) - set(_SCALAR_KINDS):
                    raise ValueError(f"ScalarRefusals: {op}: position {position!r} with kinds {kinds!r} (use a "
                                     f"position below {OPS[op].arity} and letters of {_SCALAR_KINDS!r})")
            if Form(form) == Form.OPERATOR and op not in PYTHON_OPERATORS:
                raise ValueError(f"ScalarRefusals: {op} has no Python operator")
            checked[Form(form), op] = (called, dict(positions))
        if checked and not self.to_tensor:
            raise ValueError("ScalarRefusals: a table needs the framework's to_tensor call (its fix)")
        object.__setattr__(self, "table", checked)

    def refused(self, form, op_name, operands) -> int | None:
        """The position of the first Python scalar ``form`` of ``op_name`` refuses, or None."""
        entry = self.table.get((form, op_name))
        if entry is not None:
            for i, o in enumerate(operands):
                if o.category == "scalar" and o.pykind in entry[1].get(i, ""):
                    return i
        return None


NO_REFUSALS = ScalarRefusals()


def form_of(op_name, form) -> Form:
    """``form`` checked (a Form or its name), or the op's default form where it is None."""
    if form is None:
        return default_form(op_name)
    try:
        return Form(form)
    except ValueError:
        raise ValueError(f"form={form!r}: use one of {', '.join(f.value for f in Form)} "
                         f"(default: the operator where Python has one for the op)") from None


def check(pol, op_name, operands, form, takes):
    """Raise PromotionError where ``pol``'s framework refuses a Python scalar of ``operands`` in
    ``form`` of ``op_name``. ``takes(operands, form)``: whether the policy resolves those (the
    fixes the message names are ones it takes)."""
    refusals = pol.scalar_refusals
    position = refusals.refused(form, op_name, operands)
    if position is None:
        return
    called = refusals.table[form, op_name][0]
    why = (f"{_written(pol, form, op_name, called, operands)} raises in {pol.framework}: its {_ORDINALS[position]} "
           f"operand must be a tensor, not a Python {PY_KIND_NAMES[operands[position].pykind]}")
    raise PromotionError(pol.name, op_name, operands, why, _fix(pol, form, op_name, called, operands, position, takes))


def described(pol, op_name, form) -> str | None:
    """One line on what ``form`` of ``op_name`` refuses under ``pol``, for gp.explain; None where nothing."""
    entry = pol.scalar_refusals.table.get((form, op_name))
    if entry is None:
        return None
    called, positions = entry
    where = "; ".join(f"{_ORDINALS[i]}: {', '.join(PY_KIND_NAMES[k] for k in kinds)}"
                      for i, kinds in sorted(positions.items()))
    return f"{form.value} form ({called}): no Python scalar where {pol.framework} wants a tensor ({where})"


def _names(operands):
    return ("cond", "x", "y") if len(operands) == 3 else ("x", "y")


def _written(pol, form, op_name, called, operands, replace=None):
    """The call as the framework's code would spell it: torch.maximum(x, 2.0), x & 1."""
    args = [replace[1] if replace and replace[0] == i else (repr(o.value) if o.category == "scalar" else name)
            for i, (o, name) in enumerate(zip(operands, _names(operands)))]
    if form == Form.OPERATOR:
        return f"{args[0]} {called} {args[1]}"
    return f"{called}({', '.join(args)})"


def _fix(pol, form, op_name, called, operands, position, takes):
    """The framework call that works, and its gpupromote spelling: the scalar as a 0-d tensor of its
    default dtype (else of the other operand's dtype), and, for a function, the operator form
    where that takes the scalar."""
    scalar = operands[position]
    value = repr(scalar.value)
    other = next((o for o in operands if o.category != "scalar"), None)
    wraps = [(pol.scalar_dtypes[scalar.pykind], f"{pol.scalar_refusals.to_tensor}({value})")]
    if other is not None and other.dtype is not None and other.dtype.name != wraps[0][0]:
        names = _names(operands)
        wraps.append((other.dtype.name, f"{pol.scalar_refusals.to_tensor}({value}, dtype={names[operands.index(other)]}"
                                        f".dtype)"))
    dtype, framework_call = wraps[0]
    for candidate, text in wraps:
        swapped = list(operands)
        swapped[position] = Operand(D.dtype(candidate), "zero-dim")
        if takes(swapped, form):
            dtype, framework_call = candidate, text
            break
    gp_op = PYTHON_OPERATORS[op_name] if form == Form.OPERATOR else f"gp.{op_name}"
    hint = (f"Pass a tensor: {_written(pol, form, op_name, called, operands, (position, framework_call))}; "
            f"in gpupromote a 0-d array: "
            f"{_written(pol, form, op_name, gp_op, operands, (position, f'np.asarray({value}, {dtype!r})'))}")
    operator = PYTHON_OPERATORS.get(op_name)
    if form == Form.FUNCTION and operator is not None and pol.scalar_refusals.refused(
            Form.OPERATOR, op_name, operands) is None and takes(list(operands), Form.OPERATOR):
        hint += f"; or the operator, which takes it: {_written(pol, Form.OPERATOR, op_name, operator, operands)}"
    return hint
