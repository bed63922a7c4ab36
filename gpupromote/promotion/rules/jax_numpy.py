"""JAX's rules (jax/_src/dtypes.py): Python scalars and weakly typed arrays are weak nodes on
the promotion lattice (promotion/policies/jax_numpy.py); with x64 off, 64-bit types are canonicalized to
32 bits on the way in and out; jnp.power with an integer exponent is lax.integer_pow."""
from __future__ import annotations

from dataclasses import replace

from ...core import dtypes as D
from ...core.errors import PromotionError, describe_operand, overflow
from ...core.kinds import IntDivision, PromotionKind, StoreRule
from ..limits import INT_RANGES, IntRange
from . import Rules, node_of

__all__ = ["JaxRules"]

_CANONICAL_X32 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}
# The dtype each kind of Python scalar has before any canonicalization (python_scalar_dtypes),
# and the default dtype of each kind (dtypes.default_types).
_PYTHON_SCALAR_DTYPES = {"b": "bool", "i": "int64", "f": "float64", "c": "complex128"}
_DEFAULT_TYPES = {"i": "int64", "u": "uint64", "f": "float64", "c": "complex128"}
_KIND_OF_NODE = {"i*": "i", "f*": "f", "c*": "c"}
# jnp.true_divide / arctan2 ... make int operands inexact by width (dtypes.to_inexact_dtype).
_TO_INEXACT = {"bool": "float32", "uint8": "float32", "uint16": "float32", "uint32": "float32", "uint64": "float64",
               "int8": "float32", "int16": "float32", "int32": "float32", "int64": "float64"}
_FLOAT8 = frozenset({"float8_e4m3fn", "float8_e5m2"})
# jnp.rint and jnp.angle convert an integer input to the default float (dtypes.float_), not by width
_TO_DEFAULT_FLOAT = frozenset({"rint", "angle"})
# jnp.signbit (and copysign, built on it) take 16-, 32- and 64-bit floats only
_NO_FLOAT8 = frozenset({"copysign", "signbit"})


class JaxRules(Rules):
    """``x64``: jax_enable_x64 (off: 64-bit types canonicalized, the default int is int32);
    ``strict``: jax_numpy_dtype_promotion='strict' (weak operands join on the strict lattice too,
    with no all-weak shortcut)."""

    nary = True  # jnp.result_type(*args): the lattice join, in any order
    int_division = IntDivision.XLA
    # Note: JAX arrays are immutable, so `x += y` rebinds x to x + y (of the result dtype); out=, which
    # jax.numpy does not take, is stored into with NumPy's same_kind rule.
    inplace_rule = StoreRule.REBIND
    flush_subnormals = True  # XLA's CPU backend runs with FTZ/DAZ: subnormal inputs and results are 0
    values = "jax"
    # these compute bool as int32 (dtypes.to_numeric_dtype), x64 or not
    bool_kernels = {op: "int32" for op in ("floor_divide", "remainder", "fmod", "power", "left_shift", "right_shift",
                                           "square")}
    # A Python scalar's node, and a weak node's dtype (then canonicalized)
    weak_node = {"b": "bool", "i": "i*", "f": "f*", "c": "c*"}   # a Python bool is strong in JAX
    weak_default = {"i*": "int64", "f*": "float64", "c*": "complex128"}
    # A weakly typed array (jnp.asarray(1)) sits on the lattice as the Python scalar of its kind
    # does (dtypes._jax_type); bool has no weak type.
    weak_arrays = {d.name: {"b": "bool", "u": "i*", "i": "i*", "f": "f*", "c": "c*"}[d.kind]
                   for d in D.ALL if d.name != "complex32"}

    def __init__(self, x64: bool, strict: bool):
        self.x64, self.strict = x64, strict
        self.canonical = {} if x64 else _CANONICAL_X32
        # jit argument parsing: a Python int must fit the default int, before any dtype rule
        default_int = self.canonical.get("int64", "int64")
        self.argument_range = IntRange(*INT_RANGES[default_int], default_int)

    def canonical_for(self, op_name):
        # jnp.promote_types: the lattice join, with no canonicalization (int64 with int32 is int64
        # with x64 off too)
        return {} if op_name == "promote_types" else self.canonical

    def _integer_pow(self, op_name, values):
        """jnp.power with a Python int (True included) or 0-d integer array exponent is
        lax.integer_pow (a 0-d bool array is not); no argument range check runs on that path."""
        if op_name != "power":
            return False
        exponent = values[-1]
        return exponent.category != "array" and exponent.kind in ("bui" if exponent.category == "scalar" else "ui")

    def check_arguments(self, pol, op_name, operands):
        if self._integer_pow(op_name, operands):
            return
        lo, hi, name, error = self.argument_range
        for o in operands:
            if o.category == "scalar" and o.pykind == "i" and not lo <= o.value <= hi:
                raise overflow(pol.name, op_name, o, name, error)

    def prepare(self, pol, op, kind, values, operands, trace):
        canonical = self.canonical_for(op.name)
        if canonical:
            values = tuple(_canonical_operand(canonical, o, trace) for o in values)
        exact_exponent = False
        if op.name == "angle" and values[0].category == "zero-dim" and values[0].dtype.kind != "c":
            # Note: observed (JAX 0.10.2): jnp.angle of a 0-d real array is the default float
            # whatever its dtype (float16 included), while an array of rank >= 1 keeps a float dtype
            to = D.dtype(pol.default_float)
            trace(f"angle of a 0-d {values[0].dtype.name} array: the default float {to.name}")
            values = (replace(values[0], dtype=to),)
        if kind == PromotionKind.EXPONENT_KEEPS_BASE:
            if len(values) == 2 and self._integer_pow(op.name, values):
                # jnp.power with a concrete integer exponent is lax.integer_pow: the base's dtype
                trace(f"integer exponent {describe_operand(values[1])}: the result keeps the base's dtype")
                values, exact_exponent = values[:1], True
            kind = PromotionKind.DEFAULT
        return values, kind, exact_exponent

    def promote(self, pol, op, values, trace):
        """The join of all operands' nodes; a weak node as the join is its kind's default dtype,
        weakly typed. With every operand weak, the join of their strong dtypes gives the kind."""
        canonical = self.canonical_for(op.name)
        if not self.strict and all((o.category == "scalar" and o.pykind != "b") or o.weak for o in values):
            return self._all_weak(values, canonical, pol, trace)
        nodes = [node_of(self, o) for o in values]
        joined = pol.promote.join_all(nodes)
        trace(f"lattice join of {', '.join(nodes)} -> {joined or 'none'}")
        if joined is None:
            return None, f"{' and '.join(nodes)} have no implicit promotion path"
        if joined in self.weak_default:
            name = self.weak_default[joined]
            name = canonical.get(name, name)
            trace(f"weak {joined} becomes the default {name}, weakly typed")
            return D.dtype(name), True
        return D.dtype(joined), False

    def _all_weak(self, values, canonical, pol, trace):
        """_lattice_result_type with every operand weak: two weak int8 arrays give a weak int32 /
        int64, not int8; a bool result is strong."""
        strong = [_PYTHON_SCALAR_DTYPES[o.pykind] if o.category == "scalar" else o.dtype.name for o in values]
        joined = pol.promote.join_all(strong)
        trace(f"every operand is weak: the join of their dtypes {', '.join(strong)} -> {joined or 'none'}")
        if joined is None:
            return None, f"{' and '.join(strong)} have no implicit promotion path"
        if joined == "bool":
            return D.bool_, False
        # the join of two strong dtypes can be a weak node (uint64 with int8: f*, a Python float)
        kind = _KIND_OF_NODE[joined] if joined in self.weak_default else D.dtype(joined).kind
        name = _DEFAULT_TYPES[kind] if kind != "f" else self.weak_default["f*"]
        name = canonical.get(name, name)
        trace(f"a weak result of kind {kind}: the default {name}, weakly typed")
        return D.dtype(name), True

    def accumulator(self, pol, op_name, dtype):
        # jnp.sum / prod: bool and signed ints in the default int, unsigned in the default uint
        # (dtypes.canonicalize of int64 / uint64); jnp.cumsum / cumprod keep an int's dtype and
        # take bool as the default int
        if op_name in ("cumsum", "cumprod"):
            name = "int64" if dtype.kind == "b" else dtype.name
        elif dtype.kind in "bi":
            name = "int64"
        else:
            name = "uint64" if dtype.kind == "u" else dtype.name
        return self.canonical.get(name, name)

    def index_dtype(self, pol):
        return self.canonical.get("int64", "int64")

    def to_float(self, pol, op_name, dtype):
        if op_name in _TO_DEFAULT_FLOAT:
            return pol.default_float
        name = _TO_INEXACT.get(dtype.name)
        return self.canonical.get(name, name) if name else pol.default_float

    def check_kernel(self, pol, op, promoted, values, operands):
        if op.name in _NO_FLOAT8 and promoted.name in _FLOAT8:
            raise PromotionError(pol.name, op.name, operands, f"{op.name} has no {promoted.name} kernel in "
                                 f"{pol.framework}", "Cast to float32 first, e.g. x.astype('float32')")
        super().check_kernel(pol, op, promoted, values, operands)

    def ranged(self, pol, op_name, operands):
        return not self._integer_pow(op_name, operands)

    def int_range(self, pol, op_name, target, position):
        return self.argument_range


def _canonical_operand(canonical, o, trace):
    if o.dtype is not None and o.dtype.name in canonical:
        to = D.dtype(canonical[o.dtype.name])
        trace(f"{o.dtype.name} operand canonicalized to {to.name} (64-bit types are off)")
        return replace(o, dtype=to)
    return o
