"""The words promotion is spoken in: promotion kinds, dtype categories, and the few closed sets
of choices a framework makes (integer division by zero, storing into an existing array).

Each is an enum or a named constant checked here at import, so that a misspelt kind raises
instead of quietly acting as DEFAULT (PyTorch's ``ELEMENTWISE_TYPE_PROMOTION_KIND`` and
array-api-strict's ``_dtype_categories`` are the models).
"""
from __future__ import annotations

from enum import StrEnum

__all__ = ["PromotionKind", "IntDivision", "StoreRule", "Form", "KINDS", "KIND_ORDER", "categories",
           "BOOLEAN", "INTEGER", "INTEGER_OR_BOOLEAN", "REAL_FLOATING", "COMPLEX_FLOATING", "FLOATING", "NUMERIC",
           "REAL_NUMERIC", "REAL_NUMERIC_OR_BOOLEAN", "ALL_KINDS", "NO_KINDS"]


class PromotionKind(StrEnum):
    """How an op turns the promoted dtype of its operands into its compute and result dtypes."""
    DEFAULT = "DEFAULT"                    # result = compute = the promoted dtype
    INT_TO_FLOAT = "INT_TO_FLOAT"          # bool/int promoted dtypes become a float (the policy says which)
    INT_TO_DEFAULT_FLOAT = "INT_TO_DEFAULT_FLOAT"  # ... always the policy's default float (NumPy's true_divide)
    INT_TO_FLOAT_UNLESS_BOOL = "INT_TO_FLOAT_UNLESS_BOOL"  # ints to the default float, bool stays (Paddle's divide)
    ALWAYS_BOOL = "ALWAYS_BOOL"            # computed in the promoted dtype, result bool
    LOGICAL = "LOGICAL"                    # like ALWAYS_BOOL; operands are only tested for truth
    COMPLEX_TO_FLOAT = "COMPLEX_TO_FLOAT"  # computed in the promoted dtype; a complex one gives its real dtype
    EXPONENT_KEEPS_BASE = "EXPONENT_KEEPS_BASE"  # power with an integer exponent keeps the base's dtype (JAX)
    INT_TO_FLOAT_REAL = "INT_TO_FLOAT_REAL"  # INT_TO_FLOAT, and a complex one gives its real dtype (angle)
    INT_TO_DEFAULT_FLOAT_REAL = "INT_TO_DEFAULT_FLOAT_REAL"  # INT_TO_DEFAULT_FLOAT, complex to real (np.var)
    ACCUMULATE = "ACCUMULATE"              # a sum or product: bool/int accumulate in a wider integer (the rules say which)
    INDEX = "INDEX"                        # an index into the operand (argmax): the policy's index dtype


class IntDivision(StrEnum):
    """What integer ``x // 0`` (and ``%``, fmod) does."""
    NUMPY = "numpy"   # 0, with a RuntimeWarning
    XLA = "xla"       # a defined value (-1 or ~0 for //, x for %), no warning
    RAISE = "raise"   # an exception (gp.IntegerDivisionByZero)


class StoreRule(StrEnum):
    """Whether a result of dtype r may be written into an existing array of dtype t."""
    SAME_KIND = "same_kind"    # NumPy's 'same_kind' casting
    CAN_CAST = "can_cast"      # c10::canCast: no complex -> real, no float -> integral, nothing but bool -> bool
    SAME_DTYPE = "same_dtype"  # r must be t (RFC 431's assign_add, the Array API's x1 += x2)
    RETYPE = "retype"          # x takes the result's dtype (Paddle's PromoteCastInplace): only a gp.Array can
    REBIND = "rebind"          # x += y binds x to a new array (JAX); out= follows same_kind


class Form(StrEnum):
    """How a call is written, where a framework takes different operands in each: torch.maximum(x,
    2.0) refuses the Python float that x + 2.0 takes (promotion/refusals.py)."""
    FUNCTION = "function"   # gp.<op>(...), NumPy's ufuncs on gp arrays
    OPERATOR = "operator"   # gp.Array's operators (x + 1), and traced operators inside gp.fuse


# Dtype kinds, as DType.kind spells them, in their order of promotion.
KINDS = "buifc"   # bool, unsigned, signed, floating, complex
# The rank of each kind: bool < integer < floating < complex (unsigned and signed are one rank).
KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def categories(kinds: str) -> str:
    """``kinds`` checked: letters of KINDS, each once, in KINDS order (so that equal sets are
    equal strings). The one gate every category string of core/ops.py and the policies passes."""
    if not isinstance(kinds, str) or any(k not in KINDS for k in kinds) or kinds != "".join(
            k for k in KINDS if k in kinds):
        raise ValueError(f"{kinds!r} is not a dtype category: use letters of {KINDS!r} in that order "
                         f"(b bool, u unsigned, i signed, f floating, c complex)")
    return kinds


# The Array API standard's categories, by its names (array_api_strict._dtypes._dtype_categories).
BOOLEAN = categories("b")
INTEGER = categories("ui")
INTEGER_OR_BOOLEAN = categories("bui")
REAL_FLOATING = categories("f")
COMPLEX_FLOATING = categories("c")
FLOATING = categories("fc")
REAL_NUMERIC = categories("uif")
REAL_NUMERIC_OR_BOOLEAN = categories("buif")
NUMERIC = categories("uifc")
ALL_KINDS = categories("buifc")
NO_KINDS = categories("")
