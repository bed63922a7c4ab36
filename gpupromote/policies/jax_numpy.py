"""JAX 0.10 (jax.numpy): a promotion lattice with weak types (seed document 003).

Python scalars are weak (i*, f*, c*): they join the lattice below every dtype of their kind, so
they take the array's dtype. The least upper bound of all operands is the result; a weak node
as the result means the default dtype, weakly typed. With x64 off (JAX's default), 64-bit
inputs are canonicalized to 32 bits first, and results too. Strict mode keeps only the weak
edges: two different dtypes never promote implicitly.
"""
from dataclasses import replace

from .. import dtypes as D
from ..lattice import Lattice
from . import Policy

_FLOAT8 = ["float8_e4m3fn", "float8_e5m2"]

# jax/_src/dtypes.py _type_promotion_lattice ("standard"): node -> nodes directly above it.
LATTICE = {
    "bool": ["i*"],
    "i*": ["uint8", "int8"],
    "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"], "uint64": ["f*"],
    "int8": ["int16"], "int16": ["int32"], "int32": ["int64"], "int64": ["f*"],
    "f*": ["c*", "float16", "bfloat16", *_FLOAT8],
    "float16": ["float32"], "bfloat16": ["float32"], "float32": ["float64", "complex64"], "float64": ["complex128"],
    **{f8: [] for f8 in _FLOAT8},  # why: float8 promotes with weak types and ints only
    "c*": ["complex64"], "complex64": ["complex128"], "complex128": [],
}

# With x64 off JAX avoids forming a 64-bit type from 32-bit inputs: its one such edge, uint32 ->
# int64, becomes uint32 -> int32 (_type_promotion_lattice(x64=False)).
LATTICE_X32 = {**LATTICE, "uint32": ["int32", "uint64"]}

_INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]
_FLOATS = ["float16", "bfloat16", "float32", "float64", *_FLOAT8]

# "strict": only weak types promote, each into its own kind or above.
STRICT_LATTICE = {
    "i*": ["f*", *_INTS], "f*": ["c*", *_FLOATS], "c*": ["complex64", "complex128"],
    **{t: [] for t in ["bool", *_INTS, *_FLOATS, "complex64", "complex128"]},
}

# A weakly typed array (lax_internal._convert_element_type(x, weak_type=True), jnp.asarray(1))
# sits on the lattice as the Python scalar of its kind does (dtypes._jax_type); bool has no weak type.
_WEAK_ARRAYS = {d.name: {"b": "bool", "u": "i*", "i": "i*", "f": "f*", "c": "c*"}[d.kind]
                for d in D.ALL if d.name != "complex32"}

_CANONICAL_X32 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}

# jnp.true_divide / arctan2 ... make int operands inexact by width (dtypes.to_inexact_dtype).
_TO_INEXACT = {"bool": "float32", "uint8": "float32", "uint16": "float32", "uint32": "float32", "uint64": "float64",
               "int8": "float32", "int16": "float32", "int32": "float32", "int64": "float64"}

_REFUSES = {"floor_divide": "c", "remainder": "c", "fmod": "c",
            "bitwise_and": "fc", "bitwise_or": "fc", "bitwise_xor": "fc", "left_shift": "fc", "right_shift": "fc",
            "hypot": "c", "copysign": "c", "nextafter": "c"}
# Note: comparisons, maximum/minimum and arctan2 accept complex in jax.numpy (lexicographic order).

JAX_X64 = Policy(
    name="jax-x64",
    framework="JAX",
    emulates="JAX 0.10.2 (jax.numpy), jax_enable_x64=True",
    operands="weak-lattice",
    promote=Lattice(LATTICE),
    dtypes=frozenset(d.name for d in D.ALL if d.name != "complex32"),
    default_float="float64",
    weak_node={"b": "bool", "i": "i*", "f": "f*", "c": "c*"},
    weak_default={"i*": "int64", "f*": "float64", "c*": "complex128"},
    int_check="int64",  # jit argument parsing: a Python int must fit the default int,
    ints_checked_first=True,  # before any dtype rule runs
    to_float=_TO_INEXACT,
    refuses=_REFUSES,
    accepts={"arctan2": "fc", "logaddexp": "fc"},
    int_division="xla",
    flush_subnormals=True,  # XLA's CPU backend runs with FTZ/DAZ: subnormal inputs and results are 0
    # these compute bool as int32 (dtypes.to_numeric_dtype), x64 or not
    bool_to={op: "int32" for op in ("floor_divide", "remainder", "fmod", "power", "left_shift", "right_shift")},
    negative_int_refused=frozenset({"power"}),  # "Integers cannot be raised to negative powers"
    # jnp.power(x, 3) or with a 0-d int exponent is lax.integer_pow: x's dtype, and the exponent
    # is not range-checked as an argument
    op_rules={"power": "EXPONENT_KEEPS_BASE"},
    refused_dtypes={"copysign": frozenset(_FLOAT8)},  # jnp.signbit takes 16, 32 and 64-bit floats only
    nary=True,  # jnp.result_type(*args): the lattice join, in any order
    weak_arrays=_WEAK_ARRAYS,
    all_weak_by_strong=True,
    # Note: JAX arrays are immutable, so `x += y` rebinds x to x + y (of the result dtype); out=, which
    # jax.numpy does not take, is stored into with NumPy's same_kind rule.
    inplace_rule="rebind",
    # jnp.promote_types: the lattice join, with no canonicalization (int64 with int32 is int64 with
    # x64 off too)
    op_overrides={"promote_types": {"canonical": {}}},
    source="https://github.com/jax-ml/jax/blob/main/jax/_src/dtypes.py",
)

JAX = replace(
    JAX_X64,
    name="jax",
    promote=Lattice(LATTICE_X32),
    emulates="JAX 0.10.2 (jax.numpy), jax_enable_x64=False (the default): 64-bit types canonicalized to 32-bit",
    canonical=_CANONICAL_X32,
    default_float="float32",
    int_check="int32",
    to_float={k: _CANONICAL_X32.get(v, v) for k, v in _TO_INEXACT.items()},
)

# strict mode joins weak operands on the strict lattice too (no all-weak shortcut)
JAX_X64_STRICT = replace(JAX_X64, name="jax-x64-strict", promote=Lattice(STRICT_LATTICE), all_weak_by_strong=False,
                         emulates=JAX_X64.emulates + ", jax_numpy_dtype_promotion='strict'")
JAX_STRICT = replace(JAX, name="jax-strict", promote=Lattice(STRICT_LATTICE), all_weak_by_strong=False,
                     emulates=JAX.emulates + ", jax_numpy_dtype_promotion='strict'")
