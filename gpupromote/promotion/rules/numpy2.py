"""NumPy 2's rules (NEP 50): arrays and 0-d arrays are strong, Python scalars weak; the tables
they read are in promotion/policies/numpy2.py."""
from __future__ import annotations

from dataclasses import replace

from ...core import dtypes as D
from ...core.kinds import KIND_ORDER, PromotionKind
from ..limits import INT64_END, INT_RANGES, IntRange
from ..plan import PY_KIND_NAMES
from . import CLIPS, COMPARISONS, Rules, strong_join

__all__ = ["NumPyRules"]

_LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor"})
# np.where, np.result_type and np.promote_types promote by np.result_type's table
_RESULT_TYPE_OPS = frozenset({"where", "result_type", "promote_types"})


class NumPyRules(Rules):
    """``result_type``: np.result_type's pair table and ``result_type_upcast`` its weak-float
    cells (np.where uses them); ``weak_upcast``: (dtype, Python scalar kind) -> dtype where a
    weak scalar meets a dtype otherwise than NEP 50 says (ml_dtypes); ``to_float``: the float loop
    a float-only ufunc reads each integer dtype in; ``int_via_long``: float dtypes whose
    constructor takes a Python int through a C long (ml_dtypes: a TypeError beyond int64)."""

    nary = True   # np.result_type(*arrays_and_dtypes): the least dtype all promote to, not a left fold
    clip_saturates_int_bounds = True
    negative_power_arrays_refused = True
    # ufuncs with no bool loop start at int8 ("bb->b"); np.round of a bool array is np.rint's
    # (ndarray.round rounds only integer arrays by copying them), whose first loop is float16
    bool_kernels = {**{op: "int8" for op in ("floor_divide", "remainder", "fmod", "power", "left_shift", "right_shift",
                                             "square", "reciprocal", "conj")},
                    "round": "float16"}
    # SciPy's ufuncs (expit, erf) list their double loop before the float one: an input that matches
    # no loop exactly takes the first it casts to safely, float64 (float16 included)
    scipy_loops = {"sigmoid": ("float64", "float32"),
                   "erf": ("float64", "float32", "complex128", "complex64")}

    def __init__(self, result_type, result_type_upcast, weak_upcast, to_float, int_via_long):
        self.result_type, self.result_type_upcast = result_type, result_type_upcast
        self.weak_upcast, self.float_loops, self.int_via_long = weak_upcast, to_float, int_via_long

    def prepare(self, pol, op, kind, values, operands, trace):
        if op.name in _RESULT_TYPE_OPS:
            trace(f"{op.name} promotes by np.result_type's table")
        if op.name in self.scipy_loops:
            values = tuple(self._scipy_operand(pol, op.name, o, trace) for o in values)
        elif kind in (PromotionKind.INT_TO_FLOAT, PromotionKind.INT_TO_FLOAT_REAL) and \
                all(o.category != "scalar" and o.dtype.kind in "bui" for o in values):
            # ufunc loop selection: the first float loop every input casts to safely
            values = tuple(self._float_operand(pol, op.name, o, trace) for o in values)
        return values, kind, False

    def _scipy_operand(self, pol, op_name, o, trace):
        loops = self.scipy_loops[op_name]
        if o.category == "scalar" or o.dtype.name in loops:
            return o
        to = next((loop for loop in loops if pol.promote.join_all([o.dtype.name, loop]) == loop), None)
        if to is None:
            return o   # no loop takes it: check_kernel refuses it in the op's words
        trace(f"{o.dtype.name} operand reads as {to} (scipy.special's first loop it casts to safely)")
        return replace(o, dtype=D.dtype(to))

    def _float_operand(self, pol, op_name, o, trace):
        to = D.dtype(self.to_float(pol, op_name, o.dtype))
        trace(f"{o.dtype.name} operand reads as {to.name} (the first float loop it casts to safely)")
        return replace(o, dtype=to)

    def accumulator(self, pol, op_name, dtype):
        # np.sum / np.prod / np.cumsum: bool and integers narrower than the platform's long
        # accumulate in it (int64), unsigned ones in its unsigned twin (uint64)
        if dtype.kind in "bi":
            return "int64"
        return "uint64" if dtype.kind == "u" else dtype.name

    def kernel_dtype(self, pol, op_name, promoted):
        if op_name in CLIPS and promoted.name in self.int_via_long:
            # ml_dtypes registers no clip loop: bfloat16 and float8 take the first loop they cast
            # to safely, float32
            return "float32"
        return super().kernel_dtype(pol, op_name, promoted)

    def to_float(self, pol, op_name, dtype):
        if op_name == "angle" and dtype.kind == "b":
            # np.angle(x) is arctan2(0, x): a Python 0 with a bool array is int64, read as float64
            return pol.default_float
        return self.float_loops.get(dtype.name, pol.default_float)

    def promote(self, pol, op, values, trace):
        """Strong dtypes join by the table; each weak Python scalar then takes the joined dtype
        when its kind is not higher, else the table's join with its kind's default dtype."""
        table, upcast = (self.result_type, self.result_type_upcast) if op.name in _RESULT_TYPE_OPS else \
            (pol.promote, self.weak_upcast)
        strong = [o.dtype for o in values if o.category != "scalar"]
        weak_kinds = [o.pykind for o in values if o.category == "scalar"]
        if not strong:
            top = max(weak_kinds, key=KIND_ORDER.__getitem__)
            name = pol.scalar_dtypes[top]
            trace(f"only Python scalars: the default {top} dtype {name}")
            return D.dtype(name), False
        joined = strong_join(table, strong, trace)
        if joined is None:
            return None, f"{' and '.join(d.name for d in strong)} have no common dtype"
        result = D.dtype(joined)
        for kind in weak_kinds:
            before = result
            if KIND_ORDER[kind] > KIND_ORDER[result.kind] or (kind == "i" and result.kind == "b"):
                target = upcast.get((result.name, kind)) or pol.scalar_dtypes[kind]
                if kind == "c" and result.kind == "f":
                    target = upcast.get((result.name, kind), "complex64" if result.itemsize <= 4 else "complex128")
                joined = table.join(result.name, target)
                if joined is None:
                    return None, f"{result.name} has no common dtype with a Python {PY_KIND_NAMES[kind]}"
                result = D.dtype(joined)
            else:
                result = D.dtype(upcast.get((result.name, kind), result.name))
            trace(f"weak Python {PY_KIND_NAMES[kind]} with {before.name} -> {result.name}")
        return result, False

    def int_range(self, pol, op_name, target, position):
        if op_name in _LOGICAL:  # the logical ufuncs test a Python int for truth, after converting it to a C long
            return IntRange(*INT_RANGES["int64"], "int64")
        if op_name in CLIPS and target.kind in "ui":
            # np.clip drops a bound beyond the dtype's range that clips nothing (clip(int8, 0, 300)
            # is int8, nothing clipped at the top) and raises for one that would clip everything
            # (clip(int8, 300, None): "Python integer 300 out of bounds for int8")
            lo, hi = INT_RANGES[target.name]
            upper = position == 2 or op_name == "_clip_max"
            return IntRange(lo, float("inf"), target.name) if upper else IntRange(float("-inf"), hi, target.name)
        if op_name == "where" or op_name in CLIPS:
            # np.where casts a Python int into the dtype, wrapping
            return None
        if target.name in self.int_via_long:   # "TypeError: expected number, got int"
            return IntRange(*INT_RANGES["int64"], "int64", TypeError)
        return IntRange(*INT_RANGES[target.name], target.name) if target.kind in "ui" else None

    def int_outside(self, pol, plan, operands, rng):
        int_arrays = any(o.dtype is not None and o.dtype.kind in "ui" for o in operands if o.category != "scalar")
        if plan.op not in COMPARISONS or not int_arrays or rng.error is not OverflowError:
            return super().int_outside(pol, plan, operands, rng)

        def compare_exactly(plan, o, trace):
            # NumPy compares an out-of-range Python int exactly: uint8 [0] < -1 is False.
            target = plan.promoted
            wide = D.int64 if -INT64_END <= o.value < INT64_END and target.name != "uint64" else D.float64
            trace(f"{o.value} is out of range for {target.name}: compared exactly in {wide.name}")
            inputs = tuple(wide if f else d for d, f in zip(plan.inputs, plan.folded))
            return replace(plan, inputs=inputs, compute=wide)
        return compare_exactly
