"""The Array API standard's rules, as array-api-strict enforces them: arrays (0-d too) promote
by the standard's table with mixed kinds refused; a Python scalar joins an array of a kind it may
be converted to and takes the array's dtype; each function takes only its dtype categories."""
from __future__ import annotations

from ...core import dtypes as D
from ...core.errors import PromotionError, kind_hint
from ...core.kinds import StoreRule
from ..limits import INT_RANGES, IntRange
from ..plan import PY_KIND_NAMES
from . import CLIPS, Rules, strong_join

__all__ = ["ArrayAPIRules"]


class ArrayAPIRules(Rules):
    """``scalar_kinds``: Python scalar kind -> the array kinds it may join; ``categories``: op ->
    the dtype categories the standard lists for the function."""
    clip_saturates_int_bounds = True   # array-api-strict clips with NumPy

    nary = True  # xp.result_type(*arrays_and_dtypes)
    inplace_rule = StoreRule.SAME_DTYPE  # "x1 += x2" must not change x1's dtype (array-api-strict: TypeError)
    # NumPy underneath raises for negative powers; array-api-strict itself for negative shifts
    negative_int_refused = frozenset({"power", "left_shift", "right_shift"})
    # "bitwise_left_shift(x1, x2) is only defined for x2 >= 0" comes before the range check (uint8 << -1)
    sign_checked_first = frozenset({"left_shift", "right_shift"})
    negative_power_arrays_refused = True
    negative_shift_arrays_refused = True  # bitwise_left_shift: "only defined for x2 >= 0", arrays too

    def __init__(self, scalar_kinds, categories):
        self.scalar_kinds, self.categories = scalar_kinds, categories

    def promote(self, pol, op, values, trace):
        if op.name in CLIPS:
            return self._clip(values, trace)
        strong = [o.dtype for o in values if o.category != "scalar"]
        if not strong:
            return None, "two Python scalars: pass at least one array"
        joined = strong_join(pol.promote, strong, trace)
        if joined is None:
            return None, f"{' and '.join(d.name for d in strong)} cannot be promoted together"
        result = D.dtype(joined)
        for o in values:
            if o.category != "scalar":
                continue
            allowed = self.scalar_kinds[o.pykind]
            if result.kind not in allowed:
                return None, f"a Python {PY_KIND_NAMES[o.pykind]} can only be promoted with {allowed!r}-kind arrays"
            if o.pykind == "c" and result.kind == "f":
                result = D.dtype(pol.promote.join(result.name, "complex64"))
        return result, False

    def _clip(self, values, trace):
        """xp.clip: each bound must be of x's kind (an int with an int x, a float with a float x;
        a Python int with a float x too), and the result keeps x's dtype, whatever the bounds' widths."""
        x = values[0].dtype
        family = "ui" if x.kind in "ui" else x.kind
        for o in values[1:]:
            if o.category == "scalar":
                if x.kind not in self.scalar_kinds[o.pykind]:
                    return None, (f"a Python {PY_KIND_NAMES[o.pykind]} bound can only clip "
                                  f"{self.scalar_kinds[o.pykind]!r}-kind arrays")
            elif o.dtype.kind not in family:
                return None, f"a {o.dtype.name} bound cannot clip a {x.name} array (the standard takes bounds of x's kind)"
        trace(f"clip keeps x's dtype {x.name}")
        return x, False

    def check_kernel(self, pol, op, promoted, values, operands):
        """array-api-strict checks each array's dtype against the function's categories before a
        Python scalar joins; then NumPy's kernels decide on the promoted dtype."""
        if op.name == "cumprod" and values[0].category == "zero-dim":
            # array-api-strict's cumulative_prod needs an axis, which a 0-d array does not have
            raise PromotionError(pol.name, op.name, operands, "cumulative_prod of a 0-d array: it has no axis",
                                 "Reshape x to shape (1,) first")
        refused = pol.refuses.get(op.name, "")
        standard = "".join(k for k in self.categories.get(op.name, op.accepts) if k not in refused)
        for o in values:
            if o.category != "scalar" and o.dtype.kind not in standard:
                raise PromotionError(pol.name, op.name, operands, f"{op.name} is not defined for {o.dtype.name} in "
                                     f"{pol.framework}", kind_hint(standard))
        super().check_kernel(pol, op, promoted, values, operands)

    def accumulator(self, pol, op_name, dtype):
        # xp.sum / prod / cumulative_sum: integers accumulate in the default int of their signedness
        return {"i": "int64", "u": "uint64"}.get(dtype.kind, dtype.name)

    def int_range(self, pol, op_name, target, position):
        if op_name in CLIPS:   # array-api-strict's clip takes a bound beyond x's range
            return None
        return IntRange(*INT_RANGES[target.name], target.name) if target.kind in "ui" else None
