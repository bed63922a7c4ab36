"""PaddlePaddle's rules: one promotion table (promoteTypes) and several code paths that decide
whether to use it, chosen per op by the kind of each operand (``routes``, promotion/policies/paddle.py)."""
from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from ...core import dtypes as D
from ...core.errors import PromotionError
from ...core.kinds import IntDivision, StoreRule
from ..limits import INT_RANGES, IntRange
from ...core.ops import OPS
from ..plan import PY_KIND_NAMES
from . import CLIPS, NO_OPS, Rules

__all__ = ["PaddleRules", "Route", "TensorRoute", "ZeroDimRoute", "TO_TENSOR"]


class TensorRoute(StrEnum):
    """How two tensors of different dtypes meet."""
    PROMOTE = "promote"   # the op is in the type-promotion white list: promoteTypes, floats and complex only
    EXACT = "exact"       # it is not: the dtypes must match


class ZeroDimRoute(StrEnum):
    """How a 0-d tensor meets a tensor."""
    TENSOR = "tensor"     # as any tensor
    SCALAR = "scalar"     # support_promotion_ops: of the other's kind it takes the other's dtype
    PROMOTE = "promote"   # promoteTypes, whatever the kinds


class _ToTensor(StrEnum):
    TO_TENSOR = "to_tensor"


# A Python scalar's route that makes it a tensor of its default dtype first (paddle.to_tensor);
# the other routes are a (tensor dtype, scalar kind) -> dtype table, or None (no scalars taken).
TO_TENSOR = _ToTensor.TO_TENSOR


class Route(NamedTuple):
    tensors: TensorRoute
    zero_dim: ZeroDimRoute
    scalars: dict | _ToTensor | None

# Ops whose Python int goes through phi::Scalar / paddle.to_tensor / paddle.full, which take
# only what fits int64 (2**63 raises); the scale path of + - * (and of tensor / int) takes a
# double and wraps instead.
_INT64_CHECKED = frozenset({"floor_divide", "remainder", "fmod", "power", "equal", "not_equal", "less",
                            "less_equal", "greater", "greater_equal", "where"})
_INT64 = IntRange(*INT_RANGES["int64"], "int64")


class PaddleRules(Rules):
    int_division = IntDivision.RAISE  # why: "Integer division by zero encountered in (floor/trunc) divide"
    # In place (x.add_(y)), Paddle casts x to the promoted dtype first (PromoteCastInplace), so x
    # takes the result's dtype: float16 x.add_(float32 y) leaves x float32.
    inplace_rule = StoreRule.RETYPE

    def __init__(self, routes):
        # why: a misspelt route raises here, at import
        self.routes = {op: Route(TensorRoute(t), ZeroDimRoute(z), s if s is None or isinstance(s, dict) else _ToTensor(s))
                       for op, (t, z, s) in routes.items()}
        missing = set(OPS) - set(self.routes)
        if missing:
            raise ValueError(f"PaddleRules: no route for {sorted(missing)}")

    def accumulator(self, pol, op_name, dtype):
        # paddle.sum: bool and int32 sum in int64, the narrower ints keep theirs (SumKernel's
        # out dtype); paddle.cumsum: every integer in int64; paddle.prod and cumprod keep the dtype
        if op_name == "sum" and dtype.name in ("bool", "int32"):
            return "int64"
        if op_name == "cumsum" and dtype.kind in "ui":   # cumprod keeps int32
            return "int64"
        return dtype.name

    def check_kernel(self, pol, op, promoted, values, operands):
        if op.name == "signbit" and promoted.name in ("float8_e4m3fn", "float8_e5m2"):
            # paddle.signbit goes through NumPy, which does not understand Paddle's float8 dtypes
            raise PromotionError(pol.name, op.name, operands, f"signbit of {promoted.name} is not defined in "
                                 f"{pol.framework} (data type not understood)", "Cast to float32 first, e.g. x.astype('float32')")
        super().check_kernel(pol, op, promoted, values, operands)

    def promote(self, pol, op, values, trace):
        if op.name in CLIPS:
            return self._clip(pol, values, trace)
        return self._routed(pol, op, values, trace)

    def _clip(self, pol, values, trace):
        """paddle.clip converts its bounds to x's dtype (Python or 0-d tensors alike); an integer x
        with a float bound is clipped in the default float."""
        x, bounds = values[0], values[1:]
        if x.dtype.kind in "bui" and any((o.pykind if o.category == "scalar" else o.dtype.kind) in "fc" for o in bounds):
            trace(f"a float bound on {x.dtype.name}: clipped in the default float {pol.default_float}")
            return D.dtype(pol.default_float), False
        trace(f"the bounds are converted to x's dtype {x.dtype.name}")
        return x.dtype, False

    def _routed(self, pol, op, values, trace):
        """Each kind of operand reaches the kernel by the op's route: a Python scalar through
        the route's table (or as a tensor of its default dtype: paddle.where), two tensors, a 0-d
        one among them, through _tensors."""
        if op.name in NO_OPS:
            return _table(pol, values, trace)
        tensors, zero_dim, scalars = self.routes[op.name]
        scalar = next((o for o in values if o.category == "scalar"), None)
        if scalar is not None and scalars is None:
            return None, f"{pol.framework}'s {op.name} takes tensors only, not a Python {PY_KIND_NAMES[scalar.pykind]}"
        if scalar is not None and scalars is not TO_TENSOR:
            tensor = next((o for o in values if o.category != "scalar"), None)
            if tensor is None:
                return None, "two Python scalars: pass at least one tensor"
            cell = scalars.get((tensor.dtype.name, scalar.pykind))
            if tensor.category == "zero-dim":
                cell = scalars.get((tensor.dtype.name, "z" + scalar.pykind), cell)
            trace(f"{tensor.dtype.name} {tensor.category} with a Python {PY_KIND_NAMES[scalar.pykind]}: "
                  f"tensor-to-scalar table -> {cell or 'refused'}")
            if cell is None:
                return None, (f"{pol.framework}'s {op.name} takes no Python {PY_KIND_NAMES[scalar.pykind]} "
                              f"with {tensor.dtype.name} tensors")
            return D.dtype(cell), False
        operands = []  # (dtype name, is 0-d) of each tensor the kernel sees
        for o in values:
            if o.category == "scalar":
                name = pol.scalar_dtypes[o.pykind]
                trace(f"the Python {PY_KIND_NAMES[o.pykind]} becomes a {name} tensor (paddle.to_tensor)")
                operands.append((name, False))
            else:
                operands.append((o.dtype.name, o.category == "zero-dim" and zero_dim != ZeroDimRoute.TENSOR))
        (x, x0), (y, y0) = operands
        result, why = _tensors(pol, op, tensors, zero_dim, x, x0, y, y0, trace)
        return (D.dtype(result), False) if result else (None, why)

    def to_float(self, pol, op_name, dtype):
        # atan2's int kernels compute in double.
        return "float64" if op_name == "arctan2" else pol.default_float

    def int_range(self, pol, op_name, target, position):
        if op_name == "copysign" and target.name == "bfloat16":
            # paddle.to_tensor(value, dtype="bfloat16") goes through a NumPy array, and NumPy
            # makes 2**63 a uint64 array, which Paddle cannot convert to bfloat16.
            return IntRange(*_INT64[:2], "int64", TypeError)
        if op_name == "power" and position == 1:
            # Paddle's integer pow loops forever on an exponent the int dtype cannot hold (2**40
            # for int32, 2**63): refused here instead of hanging.
            if target.kind not in "ui":
                return _INT64
            lo, hi = INT_RANGES[target.name]
            return IntRange(max(lo, _INT64.lo), min(hi, _INT64.hi), target.name)
        if op_name == "true_divide":
            # 2**63 / tensor raises (__rtruediv__ builds a full tensor); tensor / 2**63 is a scale
            return _INT64 if position == 0 else None
        return _INT64 if op_name in _INT64_CHECKED else None


def _kind(pol, name):
    """The class Paddle's predicates put a dtype in (is_support_int / _float / _complex):
    "i", "f", "c", or None for bool and for float8, which promoteTypes does not know."""
    if (name, name) not in pol.promote.cells:
        return None
    return {"u": "i", "i": "i", "f": "f", "c": "c"}.get(D.dtype(name).kind)


def _tensors(pol, op, tensors, zero_dim, x, x0, y, y0, trace):
    """Two tensors, as NeedTypePromotion and GetPromoteDtype decide (x0, y0: the tensor is 0-d and
    the op treats 0-d tensors as scalars): (dtype name, None) or (None, reason)."""
    if x == y:
        trace(f"{x} with {x}: no promotion")
        return x, None
    if tensors == TensorRoute.EXACT:
        return None, (f"{op.name} is not in {pol.framework}'s type-promotion white list: "
                      f"its operands must have one dtype, got {x} and {y}")
    kx, ky = _kind(pol, x), _kind(pol, y)
    joined = pol.promote.join(x, y)
    unknown = f"{pol.framework}'s promoteTypes knows no {x if (x, x) not in pol.promote.cells else y}"
    if x0 or y0:
        if zero_dim == ZeroDimRoute.SCALAR and not (x0 and y0) and kx is not None and kx == ky:
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


def _table(pol, values, trace):
    """promoteTypes on its own (Paddle has no result_type): dtypes only, two at a time; a Python
    scalar meets a tensor only through an op's own route, so it is refused here."""
    scalar = next((o for o in values if o.category == "scalar"), None)
    if scalar is not None:
        return None, (f"{pol.framework} has no op-independent rule for a Python {PY_KIND_NAMES[scalar.pykind]}: "
                      f"how a scalar meets a tensor depends on the op, so pass op=")
    names = [o.dtype.name for o in values]
    joined = pol.promote.fold(names)
    trace(f"promotion table of {', '.join(names)} -> {joined or 'refused'}")
    return (D.dtype(joined), False) if joined else (None, f"{pol.framework} does not promote {' with '.join(names)}")
