"""PyTorch's rules: dim tensors, zero-dim tensors and wrapped numbers (Python scalars) each
promote within their category, a lower category counting only by a higher kind (c10
``combine_categories``); c10's checked conversions of Python scalars. Ascend's aclnn policy
drives its pair table through the same categories (torch_npu)."""
from __future__ import annotations

from ...core import dtypes as D
from ...core.errors import PromotionError, kind_hint
from ...core.kinds import IntDivision, StoreRule
from ..limits import C10_SCALAR, INT_RANGES, IntRange, float_max
from . import CLIPS, Rules, scalar_word

__all__ = ["TorchRules", "AscendRules"]

# c10::toComplexType: the complex dtype a float tensor takes beside a complex scalar.
_TO_COMPLEX = {"float16": "complex32", "bfloat16": "complex64", "float32": "complex64", "float64": "complex128"}
# The opmath type a folded CPU scalar is kept in, by promoted dtype.
_OPMATH = {"float16": "float32", "bfloat16": "float32", "complex32": "complex64"}


class TorchRules(Rules):
    # torch.square(x) is torch.pow(x, 2): a bool tensor with a Python int is int64
    bool_kernels = {"square": "int64"}
    values = "torch"

    def accumulator(self, pol, op_name, dtype):
        # torch.sum / prod / cumsum / cumprod: bool and every integer dtype give int64
        return "int64" if dtype.kind in "bui" else dtype.name

    def result_dtype(self, pol, op_name, promoted):
        # torch.any / torch.all keep uint8 (kept for backward compatibility), bool for the rest
        return "uint8" if op_name in ("any", "all") and promoted.name == "uint8" else None
    # at::native::result_type over a list (torch.cat, TensorIterator's common dtype) folds each
    # category left to right: uint16, int8, float32 raises where uint16, float32, int8 does not
    nary = True
    int_division = IntDivision.RAISE
    out_rule = inplace_rule = StoreRule.CAN_CAST  # out= and x.add_(y): the result must pass c10::canCast
    # Note: on the CPU only mul, div and floor_divide keep a CPU scalar in float32 for half
    # tensors; add, sub, comparisons, ... cast it to the tensor's dtype first (f16 [inf] - 70000
    # is nan). PyTorch's CUDA kernels keep it in float32 for add/sub too; one plan serves both
    # devices here, and it follows the CPU, where the records come from.
    opmath_ops = frozenset({"multiply", "true_divide", "floor_divide"})
    # "Subtraction, the `-` operator, with a bool tensor is not supported"
    operand_refuses = {"subtract": "b"}
    # bool ** bool tensor: "pow" not implemented for 'Bool'; bool tensor ** True runs
    scalar_only_kernels = {"power": "b"}

    def prepare(self, pol, op, kind, values, operands, trace):
        kinds = self.operand_refuses.get(op.name, "")
        refused = [o for o in values if o.kind in kinds]
        if refused:
            what = refused[0].dtype.name if refused[0].dtype is not None else scalar_word(refused[0])
            fixes = ["cast the array explicitly, e.g. x.astype('int64')" if any(o.dtype is not None for o in refused)
                     else "", "pass the Python bool as an int (int(b))" if any(o.dtype is None for o in refused) else "",
                     "or use ~ / logical_not to invert a mask"]
            fix = "; ".join(f for f in fixes if f)
            raise PromotionError(pol.name, op.name, operands, f"{op.name} refuses {what} operands in "
                                 f"{pol.framework}", fix[0].upper() + fix[1:])
        return values, kind, False

    def promote(self, pol, op, values, trace):
        """Each category (dim tensors, zero-dim tensors, wrapped numbers) promotes within itself;
        then zero-dim with wrapped numbers, and dim tensors with that, by combine_categories."""
        state = {"array": None, "zero-dim": None, "scalar": None}
        for o in values:
            dt = o.dtype.name if o.dtype is not None else pol.scalar_dtypes[o.pykind]
            if o.beyond_int64:
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

    def check_kernel(self, pol, op, promoted, values, operands):
        if op.name in ("var", "std") and promoted.name in ("float8_e4m3fn", "float8_e5m2"):
            raise PromotionError(pol.name, op.name, operands, f"torch.{op.name} takes float and complex tensors, "
                                 f"not {promoted.name}", "Cast to float32 first, e.g. x.astype('float32')")
        if promoted.kind in self.scalar_only_kernels.get(op.name, "") and values[-1].category != "scalar":
            raise PromotionError(pol.name, op.name, operands, f"{op.name} on {promoted.name} runs only with a Python "
                                 f"scalar second operand in {pol.framework}", kind_hint("ui"))
        super().check_kernel(pol, op, promoted, values, operands)

    def scalar_dtype(self, pol, op_name, promoted):
        return D.dtype(_OPMATH.get(promoted.name, promoted.name)) if op_name in self.opmath_ops else promoted

    def int_range(self, pol, op_name, target, position):
        # torch.where and pow's Scalar exponent convert a Python scalar with c10::checked_convert
        # ("value cannot be converted to type int8_t without overflow"); arithmetic takes any
        # int a c10::Scalar holds and wraps it into the dtype.
        if op_name == "where" or op_name in CLIPS:   # clamp's bounds too
            return _checked_convert(target, exponent=False)
        if op_name == "power":
            return _checked_convert(target, exponent=True) if position == 1 else None
        return IntRange(*C10_SCALAR, "int64 or uint64")

    def float_checked(self, op_name, target, position):
        # Which targets c10 checks a Python float against differs by op (observed).
        if op_name == "where":
            return target.name in ("float32", "complex64", "complex32")
        return op_name == "power" and position == 1 and target.name in ("float16", "bfloat16")


def _checked_convert(target, exponent):
    """c10::checked_convert of a Python int into ``target``: an int type's range, but
    [-max, max] for an unsigned one (c10::overflows lets a negative value wrap); into complex32,
    and for pow's exponent into float16 / bfloat16 too, the half type's range. pow's exponent
    for a uint64 base is converted to int64."""
    if target.kind in "fc":
        if target.name == "complex32" or (exponent and target.name in ("float16", "bfloat16")):
            limit = float_max(target)
            return IntRange(-limit, limit, target.name)
        return None
    if target.kind not in "ui":
        return None
    name = "int64" if exponent and target.name == "uint64" else target.name
    lo, hi = INT_RANGES[name]
    if target.kind == "u" and name == target.name:
        lo = -hi
    return IntRange(lo, hi, name)


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
            to = _TO_COMPLEX.get(higher)
            return to if to else (None, f"{pol.framework} has no complex type for {higher}")
        return lower
    if hk == "f":
        return higher
    if hk == "b" or lk == "f":
        joined = pol.promote.join(higher, lower)
        return joined if joined else (None, f"{pol.framework} does not promote {higher} with {lower}")
    return higher


class AscendRules(TorchRules):
    """Ascend aclnn through torch_npu: PyTorch's categories and operand rules over the
    documented pair table, which defines no promotion of three or more inputs; no checked
    conversions beyond what a c10::Scalar holds."""
    nary = False

    def int_range(self, pol, op_name, target, position):
        return IntRange(*C10_SCALAR, "int64 or uint64")

    def float_checked(self, op_name, target, position):
        return False
