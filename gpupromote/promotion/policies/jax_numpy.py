"""JAX 0.10 (jax.numpy): a promotion lattice with weak types (seed document 003).

Python scalars are weak (i*, f*, c*): they join the lattice below every dtype of their kind, so
they take the array's dtype. The least upper bound of all operands is the result; a weak node
as the result means the default dtype, weakly typed. With x64 off (JAX's default), 64-bit
inputs are canonicalized to 32 bits first, and results too. Strict mode keeps only the weak
edges: two different dtypes never promote implicitly.
"""
from dataclasses import replace

from ...core import dtypes as D
from ..lattice import Lattice
from ...core.kinds import PromotionKind
from ..rules.jax_numpy import JaxRules
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

_REFUSES = {"floor_divide": "c", "remainder": "c", "fmod": "c",
            "bitwise_and": "fc", "bitwise_or": "fc", "bitwise_xor": "fc", "left_shift": "fc", "right_shift": "fc",
            "hypot": "c", "copysign": "c", "nextafter": "c", "erf": "c",
            "clip": "c", "_clip_min": "c", "_clip_max": "c",   # jnp.clip refuses complex input
            "argmax": "c", "argmin": "c"}
# Unary ops whose kernels take more kinds than NumPy's loops: jnp.conj and jnp.positive of a bool
# array are bool; jax.nn.sigmoid refuses integers and bool (it needs an inexact input).
_ACCEPTS = {"arctan2": "fc", "logaddexp": "fc", "conj": "buifc", "positive": "buifc", "sigmoid": "fc"}
# Note: comparisons, maximum/minimum and arctan2 accept complex in jax.numpy (lexicographic order).

JAX_X64 = Policy(
    name="jax-x64",
    framework="JAX",
    emulates="JAX 0.10.2 (jax.numpy), jax_enable_x64=True",
    source="https://github.com/jax-ml/jax/blob/main/jax/_src/dtypes.py",
    promote=Lattice(LATTICE),
    dtypes=frozenset(d.name for d in D.ALL if d.name != "complex32"),
    default_float="float64",
    scalar_dtypes={"b": "bool", "i": "int64", "f": "float64", "c": "complex128"},
    # jnp.power(x, 3) or with a 0-d int exponent is lax.integer_pow: x's dtype
    kinds={"power": PromotionKind.EXPONENT_KEEPS_BASE, "reciprocal": PromotionKind.INT_TO_FLOAT,
           "sigmoid": PromotionKind.DEFAULT,   # an integer input stays integer, and sigmoid refuses it
           # jnp.mean / var / std make integers inexact by width (dtypes.to_inexact_dtype)
           "mean": PromotionKind.INT_TO_FLOAT, "var": PromotionKind.INT_TO_FLOAT_REAL,
           "std": PromotionKind.INT_TO_FLOAT_REAL},
    accepts=_ACCEPTS,
    refuses=_REFUSES,
    rules=JaxRules(x64=True, strict=False),
)

JAX = replace(
    JAX_X64,
    name="jax",
    emulates="JAX 0.10.2 (jax.numpy), jax_enable_x64=False (the default): 64-bit types canonicalized to 32-bit",
    promote=Lattice(LATTICE_X32),
    default_float="float32",
    scalar_dtypes={"b": "bool", "i": "int32", "f": "float32", "c": "complex64"},
    rules=JaxRules(x64=False, strict=False),
)

JAX_X64_STRICT = replace(JAX_X64, name="jax-x64-strict", promote=Lattice(STRICT_LATTICE),
                         emulates=JAX_X64.emulates + ", jax_numpy_dtype_promotion='strict'",
                         rules=JaxRules(x64=True, strict=True))
JAX_STRICT = replace(JAX, name="jax-strict", promote=Lattice(STRICT_LATTICE),
                     emulates=JAX.emulates + ", jax_numpy_dtype_promotion='strict'",
                     rules=JaxRules(x64=False, strict=True))
