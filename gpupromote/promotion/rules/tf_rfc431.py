"""TensorFlow's rules: RFC 431 for the ops TensorFlow wraps for its dtype conversion modes (a
pair table over strong dtypes and weak Python scalar nodes), its legacy rule (no promotion at
all) for every other op; then each Python scalar is converted to the result dtype, and the
kernel registered for that dtype runs (tables in promotion/policies/tf_rfc431.py)."""
from __future__ import annotations

from dataclasses import replace

from ...core import dtypes as D
from ...core.errors import PromotionError, float_overflow, kind_hint, overflow
from ...core.kinds import IntDivision, StoreRule
from ..limits import C10_SCALAR, INT_RANGES, Bound, IntRange, float_max
from ..plan import PY_KIND_NAMES
from . import NO_OPS, Rules, node_of, promoting

__all__ = ["TFRules"]

# flexible_dtypes: "Python int too large to convert to np.int32", whatever the result dtype; an
# int in range is then cast to the result dtype, wrapping (int8 [n] + 300 is int8).
_INT32 = IntRange(*INT_RANGES["int32"], "int32")
# Legacy ops convert a Python int with TF's ordinary converter: it must fit int64 (then it is
# cast, wrapping: 300 -> int8 is 44), except that the direct converters to uint64, half, float,
# double and complex128 also read it as a uint64 (a TypeError beyond that).
_LEGACY_INT = IntRange(*INT_RANGES["int64"], "int64")
_LEGACY_WIDE_INT = IntRange(*C10_SCALAR, "int64 or uint64", TypeError)
# ops along an axis (axis=0 by default), which a 0-d tensor does not have
_AXIS_OPS = frozenset({"cumsum", "cumprod", "argmax", "argmin"})
_WIDE_CONVERTERS = frozenset({"uint64", "float16", "float32", "float64", "complex128"})


class TFRules(Rules):
    """``kernels``: op -> the dtypes its TF kernel is registered for; ``converts``: the
    (dtype, Python scalar kind) conversions convert_to_tensor has; ``rfc431_ops``: the ops
    RFC 431 applies to; ``truediv``: the float an integer quotient is computed in."""

    nary = True  # flexible_dtypes.result_type(*arrays_and_dtypes): a left fold through the table
    int_division = IntDivision.RAISE  # FloorDiv / FloorMod: "Integer division by zero"
    # RFC 431, in-place ops (assign_add): "any dtype promotion that results in a dtype different
    # from the Variable's dtype is disabled", in every mode
    inplace_rule = StoreRule.SAME_DTYPE
    # Python scalars: b* a bool, i4* an int, f4* a float, c16* a complex; a weak node's dtype;
    # the dtypes a WeakTensor can have and its node
    weak_node = {"b": "b*", "i": "i4*", "f": "f4*", "c": "c16*"}
    weak_default = {"i4*": "int32", "i8*": "int64", "f4*": "float32", "f8*": "float64", "c16*": "complex128"}
    weak_arrays = {dtype: node for node, dtype in weak_default.items()}

    def __init__(self, kernels, converts, rfc431_ops, truediv):
        self.kernels, self.converts, self.rfc431_ops, self.truediv = kernels, converts, rfc431_ops, truediv

    def _legacy(self, op_name):
        return op_name in self.kernels and op_name not in self.rfc431_ops

    def check_arguments(self, pol, op_name, operands):
        values = promoting(op_name, operands)
        if self._legacy(op_name) and any(o.pykind == "c" for o in values) and all(o.category == "scalar"
                                                                                   for o in values):
            # TF converts Python scalars with no tensor beside them through NumPy, an int as np.int32
            for o in values:
                if o.pykind == "i" and not _INT32.lo <= o.value <= _INT32.hi:
                    raise overflow(pol.name, op_name, o, "int32")

    def promote(self, pol, op, values, trace):
        if self._legacy(op.name):
            return self._no_promotion(pol, op, values, trace)
        # flexible_dtypes checks a Python int's range before it looks at any dtype, so an int out of
        # range is an OverflowError even where the dtypes are refused
        for o in values:
            if o.category == "scalar" and o.pykind == "i" and not _INT32.lo <= o.value <= _INT32.hi:
                raise overflow(pol.name, op.name, o, _INT32.name)
        known = {a for a, _ in pol.promote.cells}
        nodes = [node_of(self, o) for o in values]
        missing = [n for n in nodes if n not in known]
        if missing:
            trace(f"{missing[0]} is not in the {pol.framework} table: TensorFlow falls back to its legacy rule")
            return self._no_promotion(pol, op, values, trace)
        joined = pol.promote.fold(nodes)
        trace(f"table cell of {', '.join(nodes)} -> {joined or 'refused'}")
        if joined is None:
            return None, f"{pol.framework} does not promote {' with '.join(nodes)} implicitly"
        weak = joined in self.weak_default
        return self._convert(pol, op, values, D.dtype(self.weak_default.get(joined, joined)), weak)

    def _no_promotion(self, pol, op, values, trace):
        """TensorFlow without RFC 431 (tf.math.less, logical and bitwise ops, atan2, tf.where, ...):
        tensors must share one dtype; a Python scalar is converted to it, or with no tensor the
        first scalar gives its default dtype (bool, int32, float32, complex128)."""
        tensors = list(dict.fromkeys(o.dtype.name for o in values if o.category != "scalar"))
        if len(tensors) > 1:
            return None, f"TensorFlow's {op.name} does not promote: {tensors[0]} and {tensors[1]} tensors differ"
        if tensors:
            result = D.dtype(tensors[0])
        else:  # the first scalar's dtype; its value may still widen it (the inferred bounds)
            kind = values[0].pykind
            result = D.bool_ if kind == "b" else D.dtype(self.weak_default[self.weak_node[kind]])
        trace(f"no promotion in TensorFlow's {op.name}: every operand is converted to {result.name}")
        return self._convert(pol, op, values, result, False)

    def _convert(self, pol, op, values, result, weak):
        """Each Python scalar is converted to ``result`` (True -> int32 exists, True -> uint8 does
        not), then the kernel registered for ``result`` runs."""
        for o in values:
            if op.name in NO_OPS:
                break  # flexible_dtypes.result_type reads the table only; converting is the op's business
            if o.category == "scalar" and (result.name, o.pykind) not in self.converts:
                return None, (f"TensorFlow cannot convert the Python {PY_KIND_NAMES[o.pykind]} {o.value!r} to "
                              f"{result.name} (convert_to_tensor has no such conversion)")
        kernels = self.kernels.get(op.name, pol.dtypes)
        if result.name not in kernels:
            has = ", ".join(d.name for d in D.ALL if d.name in kernels)
            return None, f"TensorFlow's {op.name} has no kernel for {result.name} (only for {has})"
        return result, weak

    def to_float(self, pol, op_name, dtype):
        return self.truediv.get(dtype.name, pol.default_float)

    def check_kernel(self, pol, op, promoted, values, operands):
        """A unary op runs the kernel registered for its operand's dtype (binary ops check theirs
        when their operands are converted, in _convert)."""
        kernels = self.kernels.get(op.name)
        if op.arity != 1 or kernels is None:
            return super().check_kernel(pol, op, promoted, values, operands)
        if op.name in _AXIS_OPS and values[0].category == "zero-dim":
            raise PromotionError(pol.name, op.name, operands, f"TensorFlow's {op.name} needs an axis: a 0-d tensor "
                                 f"has none (Expected axis in the range [0, 0))", "Reshape x to shape (1,) first")
        if promoted.name not in kernels:
            has = ", ".join(d.name for d in D.ALL if d.name in kernels)
            kinds = "".join(k for k in "buifc" if any(D.dtype(d).kind == k for d in kernels))
            raise PromotionError(pol.name, op.name, operands, f"TensorFlow's {op.name} has no kernel for "
                                 f"{promoted.name} (only for {has})", kind_hint(kinds))

    def int_range(self, pol, op_name, target, position):
        if not self._legacy(op_name):
            return _INT32
        return _LEGACY_WIDE_INT if target.name in _WIDE_CONVERTERS else _LEGACY_INT

    def bounds(self, pol, plan, operands):
        found = super().bounds(pol, plan, operands)
        values = promoting(plan.op, operands)
        if not self._legacy(plan.op) or any(o.category != "scalar" for o in values):
            return found
        # tf.where(c, 2**40, 1) is int64 and tf.where(c, 1e300, 1.5) fails: with no tensor, the first
        # scalar is converted as convert_to_tensor infers its dtype from its value; the plan holds
        # while ints fit int32 and floats float32
        first = len(operands) - len(values)
        inferred = [Bound(i, *(INT_RANGES["int32"] if o.pykind == "i" else (-float_max(D.float32), float_max(D.float32))),
                          _inferred(pol, i == first))
                    for i, o in enumerate(operands) if o.category == "scalar" and o.pykind in "if" and i >= first]
        return inferred + found


def _inferred(pol, is_first):
    """The first Python scalar's own dtype: an int beyond int32 widens the plan to int64 (beyond
    int64 it fails), a finite float beyond float32 fails. Only the first scalar's value counts."""
    def outside(plan, o, trace):
        if not is_first:
            return plan
        if o.pykind == "f" and abs(o.value) != float("inf") and abs(o.value) > float_max(plan.promoted):
            raise float_overflow(pol.name, pol.framework, plan.op, o.value, plan.promoted.name)
        if o.pykind == "i" and plan.promoted.name == "int32":
            if not INT_RANGES["int64"][0] <= o.value <= INT_RANGES["int64"][1]:
                raise overflow(pol.name, plan.op, o, "int64")
            trace(f"{o.value} does not fit int32: {pol.framework} converts it to int64")
            skip = plan.op == "where"  # the condition keeps its dtype
            inputs = tuple(D.int64 if folded and i >= skip else d
                           for i, (d, folded) in enumerate(zip(plan.inputs, plan.folded)))
            result = D.int64 if plan.result == plan.promoted else plan.result
            return replace(plan, inputs=inputs, compute=D.int64, promoted=D.int64, result=result)
        return plan
    return outside
