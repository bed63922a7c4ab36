"""TensorFlow 2.21 RFC 431 dtype conversion modes: ALL, SAFE and NONE (seed document 002).

``tf.experimental.numpy.experimental_enable_numpy_behavior(dtype_conversion_mode=...)`` turns
on RFC 431 for the ops TensorFlow wraps for it (weak_tensor_ops.py): add, subtract, multiply,
the divisions, floormod, pow, maximum, minimum and equal, as operators and as tf.math.*. The
result of two operands is a cell of flexible_dtypes._BINARY_DTYPE_RES_FULL, transcribed below:

* tensors and 0-d tensors are strong; so is a Python bool (a strong bool, but no tensor);
* a Python int is a weak int32 (``i4*``), a float a weak float32 (``f4*``), a complex a weak
  complex128 (``c16*``); a weak result (an int tensor meeting a Python float gives ``f8*``,
  a weak float64) is the default dtype, weakly typed;
* SAFE keeps the cells that neither widen past both tensors nor lose precision; NONE (which
  TensorFlow does not ship: the RFC defines it) also refuses two tensors of different dtypes.

Then TensorFlow converts each Python scalar to the result dtype, and that conversion has its
own gaps (``True`` converts to int32 but not to uint8); the kernel must exist for the dtype
(AddV2 has no bool kernel, Pow no unsigned, no op has float8); a Python int must fit int32
(flexible_dtypes raises OverflowError), then wraps into the result dtype.

Every other op (tf.math.less, logical and bitwise ops, shifts, atan2, nextafter, tf.where),
and any operand the table lacks (float8), keeps TensorFlow's legacy rule: no promotion at all.
Tensors must share one dtype and a Python scalar is converted to it (rules tf-legacy).
"""
from dataclasses import replace

from ...core import dtypes as D
from ...core.kinds import PromotionKind
from ...core.ops import UNARY_OPS
from ..lattice import PairTable, parse_grid
from ..rules.tf_rfc431 import TFRules
from . import Policy

# flexible_dtypes._BINARY_DTYPE_RES_FULL (TF 2.21), cells allowed in ALL mode. Rows and columns:
# the strong dtypes, then the Python scalars and weak tensors: b* a Python bool, i4* an int (or a
# WeakTensor of int32), i8* a WeakTensor of int64, f4* a float (or a float32 WeakTensor), f8* a
# float64 WeakTensor, c16* a complex (or a complex128 WeakTensor). A ``*`` result is weakly typed
# (f8*: float64). The table has no float8 and no complex32.
ALL = """
        b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b*  i4*  i8*  f4*  f8* c16*
    b1   b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b1  i4*  i8*  f4*  f8* c16*
    u1   u1   u1   u2   u4   u8   i2   i2   i4   i8   bf   f2   f4   f8   c8  c16   u1   u1   u1  f8*  f8* c16*
    u2   u2   u2   u2   u4   u8   i4   i4   i4   i8   bf   f2   f4   f8   c8  c16   u2   u2   u2  f8*  f8* c16*
    u4   u4   u4   u4   u4   u8   i8   i8   i8   i8   bf   f2   f4   f8   c8  c16   u4   u4   u4  f8*  f8* c16*
    u8   u8   u8   u8   u8   u8  f8*  f8*  f8*  f8*   bf   f2   f4   f8   c8  c16   u8   u8   u8  f8*  f8* c16*
    i1   i1   i2   i4   i8  f8*   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   i1   i1   i1  f8*  f8* c16*
    i2   i2   i2   i4   i8  f8*   i2   i2   i4   i8   bf   f2   f4   f8   c8  c16   i2   i2   i2  f8*  f8* c16*
    i4   i4   i4   i4   i8  f8*   i4   i4   i4   i8   bf   f2   f4   f8   c8  c16   i4   i4   i4  f8*  f8* c16*
    i8   i8   i8   i8   i8  f8*   i8   i8   i8   i8   bf   f2   f4   f8   c8  c16   i8   i8   i8  f8*  f8* c16*
    bf   bf   bf   bf   bf   bf   bf   bf   bf   bf   bf   f4   f4   f8   c8  c16   bf   bf   bf   bf   bf   c8
    f2   f2   f2   f2   f2   f2   f2   f2   f2   f2   f4   f2   f4   f8   c8  c16   f2   f2   f2   f2   f2   c8
    f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f4   f8   c8  c16   f4   f4   f4   f4   f4   c8
    f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8   f8  c16  c16   f8   f8   f8   f8   f8  c16
    c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8   c8  c16   c8  c16   c8   c8   c8   c8   c8   c8
   c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16
    b*   b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b1  i4*  i8*  f4*  f8* c16*
   i4*  i4*   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16  i4*  i4*  i8*  f4*  f8* c16*
   i8*  i8*   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16  i8*  i8*  i8*  f4*  f8* c16*
   f4*  f4*  f8*  f8*  f8*  f8*  f8*  f8*  f8*  f8*   bf   f2   f4   f8   c8  c16  f4*  f4*  f4*  f4*  f8* c16*
   f8*  f8*  f8*  f8*  f8*  f8*  f8*  f8*  f8*  f8*   bf   f2   f4   f8   c8  c16  f8*  f8*  f8*  f8*  f8* c16*
  c16* c16* c16* c16* c16* c16* c16* c16* c16* c16*   c8   c8   c8  c16   c8  c16 c16* c16* c16* c16* c16* c16*
"""

# The same table, cells marked PromoMode.ALL removed: no widening past both tensors (u8 + i8),
# no precision loss (u64 + f32), and no Python float meeting an integer tensor.
SAFE = """
        b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b*  i4*  i8*  f4*  f8* c16*
    b1   b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b1  i4*  i8*  f4*  f8* c16*
    u1   u1   u1   u2   u4   u8   --   i2   i4   i8   bf   f2   f4   f8   c8  c16   u1   u1   u1   --  f8* c16*
    u2   u2   u2   u2   u4   u8   --   --   i4   i8   --   --   f4   f8   c8  c16   u2   u2   u2   --  f8* c16*
    u4   u4   u4   u4   u4   u8   --   --   --   i8   --   --   --   f8   --  c16   u4   u4   u4   --  f8* c16*
    u8   u8   u8   u8   u8   u8   --   --   --   --   --   --   --   --   --   --   u8   u8   u8   --   --   --
    i1   i1   --   --   --   --   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   i1   i1   i1   --  f8* c16*
    i2   i2   i2   --   --   --   i2   i2   i4   i8   --   --   f4   f8   c8  c16   i2   i2   i2   --  f8* c16*
    i4   i4   i4   i4   --   --   i4   i4   i4   i8   --   --   --   f8   --  c16   i4   i4   i4   --  f8* c16*
    i8   i8   i8   i8   i8   --   i8   i8   i8   i8   --   --   --   --   --   --   i8   i8   i8   --   --   --
    bf   bf   bf   --   --   --   bf   --   --   --   bf   --   f4   f8   c8  c16   bf   bf   bf   bf   bf   --
    f2   f2   f2   --   --   --   f2   --   --   --   --   f2   f4   f8   c8  c16   f2   f2   f2   f2   f2   --
    f4   f4   f4   f4   --   --   f4   f4   --   --   f4   f4   f4   f8   c8  c16   f4   f4   f4   f4   f4   --
    f8   f8   f8   f8   f8   --   f8   f8   f8   --   f8   f8   f8   f8   --  c16   f8   f8   f8   f8   f8  c16
    c8   c8   c8   c8   --   --   c8   c8   --   --   c8   c8   c8   --   c8  c16   c8   c8   c8   c8   c8   c8
   c16  c16  c16  c16  c16   --  c16  c16  c16   --  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16  c16
    b*   b1   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16   b1  i4*  i8*  f4*  f8* c16*
   i4*  i4*   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16  i4*  i4*  i8*  f4*  f8* c16*
   i8*  i8*   u1   u2   u4   u8   i1   i2   i4   i8   bf   f2   f4   f8   c8  c16  i8*  i8*  i8*  f4*  f8* c16*
   f4*  f4*   --   --   --   --   --   --   --   --   bf   f2   f4   f8   c8  c16  f4*  f4*  f4*  f4*  f8* c16*
   f8*  f8*  f8*  f8*  f8*   --  f8*  f8*  f8*   --   bf   f2   f4   f8   c8  c16  f8*  f8*  f8*  f8*  f8* c16*
  c16* c16* c16* c16* c16*   -- c16* c16* c16*   --   --   --   --  c16   c8  c16 c16* c16* c16* c16* c16* c16*
"""

# convert_to_tensor(<Python scalar>, dtype=X): the dtypes X each kind of Python scalar converts
# to. A bool only has TF's direct converters (int32, int64, uint64, half, float, double,
# complex128, bool); an int casts to any number, a float to floats and complex, a complex only
# to complex. Anything else is "TypeError: Cannot convert True to EagerTensor of dtype uint8".
CONVERTS = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8 c16
   b  b1  --  --  --  u8  --  --  i4  i8  --  f2  f4  f8  -- c16
   i  --  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8 c16
   f  --  --  --  --  --  --  --  --  --  bf  f2  f4  f8  c8 c16
   c  --  --  --  --  --  --  --  --  --  --  --  --  --  c8 c16
"""

def _node(code):
    return D.BY_CODE[code].name if code in D.BY_CODE else code  # b*, i4*, ...: Python scalar / weak nodes


def _converts(text):
    cells = parse_grid(text, lambda c: c if c in ("b", "i", "f", "c") else _node(c))
    return {(dtype, kind): dtype for (kind, dtype), cell in cells.items() if cell is not None}


def _none_cells(safe):
    """RFC 431 NONE: SAFE, less every promotion between two tensors of different dtypes."""
    tensors = set(D.BY_NAME) & {a for a, _ in safe}
    return {(a, b): (None if a in tensors and b in tensors and a != b else cell) for (a, b), cell in safe.items()}


_B, _U = ["bool"], ["uint8", "uint16", "uint32", "uint64"]
_I = ["int8", "int16", "int32", "int64"]
_F, _C = ["bfloat16", "float16", "float32", "float64"], ["complex64", "complex128"]
_F8 = ["float8_e4m3fn", "float8_e5m2"]

# The dtypes each TF kernel is registered for (its OpDef type list, CPU), checked on the
# common dtype the operands are converted to. No op has a float8 kernel.
_KERNELS = {
    "add": _U + _I + _F + _C,             # AddV2: no bool
    "subtract": _U + _I + _F + _C,
    "multiply": _U + _I + _F + _C,
    "true_divide": _U + _I + _F + _C,     # math_ops._TRUEDIV_TABLE: no bool
    "floor_divide": _U + _I + _F,         # FloorDiv: complex is in the OpDef but has no CPU kernel
    "remainder": _U + _I + _F,            # FloorMod
    "fmod": _U + _I + _F,                 # TruncateMod
    "power": _I + _F + _C,                # Pow: no unsigned
    "maximum": _U + _I + _F, "minimum": _U + _I + _F,
    "equal": _B + _U + _I + _F + _C, "not_equal": _B + _U + _I + _F + _C,
    "less": _U + _I + _F, "less_equal": _U + _I + _F, "greater": _U + _I + _F, "greater_equal": _U + _I + _F,
    "logical_and": _B, "logical_or": _B, "logical_xor": _B,
    "bitwise_and": _U + _I, "bitwise_or": _U + _I, "bitwise_xor": _U + _I,
    "left_shift": _U + _I, "right_shift": _U + _I,
    "arctan2": _F,                        # Atan2
    "nextafter": ["float32", "float64"],  # NextAfter
    "where": _B + _U + _I + _F + _C,      # SelectV2
    # Note: tf.math has no fmax, fmin, hypot, copysign or logaddexp; they follow the nearest
    # TF op (maximum, atan2) so that the policy still answers for them.
    "fmax": _U + _I + _F, "fmin": _U + _I + _F,
    "hypot": _F, "copysign": _F, "logaddexp": _F,
    # unary tf.math ops (tf.bitwise.invert, the `+x` operator): float functions take floats and
    # complex only, integers are not converted
    **{op: _F + _C for op in ("sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sin", "cos", "tan", "arcsin",
                              "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
                              "sigmoid", "reciprocal", "angle")},
    **{op: _F for op in ("floor", "ceil", "erf", "rint", "isnan", "isinf", "isfinite")},
    "absolute": _I + _F + _C, "negative": _I + _F + _C, "sign": _I + _F + _C,
    "round": _U + _I + _F, "square": _U + _I + _F + _C, "real": _U + _I + _F + _C,
    "imag": _B + _U + _I + _F + _C, "conj": _U + _I + _F + _C + _F8, "positive": _B + _U + _I + _F + _C + _F8,
    "invert": _U + _I, "logical_not": _B,
    "clip": _U + _I + _F, "_clip_min": _U + _I + _F, "_clip_max": _U + _I + _F,   # ClipByValue
    # reductions (tf.math.reduce_*, cumsum, cumprod, argmax): the input's dtype, no conversion
    **{op: _U + _I + _F + _C for op in ("sum", "prod", "mean", "cumsum", "cumprod")},
    **{op: _U + _I + _F for op in ("max", "min")}, **{op: _B + _U + _I + _F for op in ("argmax", "argmin")},
    "var": _F + _C, "std": _F + _C, "any": _B, "all": _B,
    # Note: `~x` on a bool tensor is logical_not, while tf.bitwise.invert refuses bool; the
    # policy follows tf.bitwise.invert (as bitwise_and follows tf.bitwise.bitwise_and).
    # Note: tf.math has no exp2, log2, log10, trunc, cbrt, signbit or positive (the operator `+x`
    # is positive); the missing ones follow their nearest kin so that the policy still answers.
    "exp2": _F + _C, "log2": _F + _C, "log10": _F + _C, "trunc": _F, "cbrt": _F, "signbit": _F,
}
# Unary float functions do not convert an integer tensor to float in TensorFlow: it is refused.
_UNARY_KINDS = {op: PromotionKind.DEFAULT for op in _KERNELS if op in UNARY_OPS and UNARY_OPS[op].kind in (
    PromotionKind.INT_TO_FLOAT, PromotionKind.INT_TO_FLOAT_REAL)}
_UNARY_KINDS["angle"] = PromotionKind.COMPLEX_TO_FLOAT
_UNARY_KINDS.update(mean=PromotionKind.DEFAULT, var=PromotionKind.COMPLEX_TO_FLOAT, std=PromotionKind.COMPLEX_TO_FLOAT)

# Ops TensorFlow wraps for RFC 431 (weak_tensor_ops.py); every other op keeps the legacy rule.
_RFC431_OPS = frozenset({"add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod",
                         "power", "maximum", "minimum", "equal", "fmax", "fmin", "clip", "_clip_min", "_clip_max"})

# math_ops._TRUEDIV_TABLE: integer operands are divided in float32 up to 16 bits, float64 above.
_TRUEDIV = {"uint8": "float32", "int8": "float32", "uint16": "float32", "int16": "float32",
            "uint32": "float64", "int32": "float64", "uint64": "float64", "int64": "float64"}

TF_ALL = Policy(
    name="tf-all",
    framework="TensorFlow (RFC 431 ALL mode)",
    emulates="TensorFlow 2.21, experimental_enable_numpy_behavior(dtype_conversion_mode='all'): "
             "operators and tf.math.*",
    source="https://github.com/tensorflow/tensorflow/blob/master/tensorflow/python/framework/flexible_dtypes.py; "
           "tensorflow/python/ops/weak_tensor_ops.py; math_ops._TRUEDIV_TABLE; RFC 431 (tensorflow/community pull 431)",
    promote=PairTable(parse_grid(ALL, _node)),
    dtypes=frozenset(d.name for d in D.ALL if d.name != "complex32"),
    default_float="float32",
    scalar_dtypes={"b": "bool", "i": "int32", "f": "float32", "c": "complex128"},
    kinds=_UNARY_KINDS,
    rules=TFRules(kernels={op: frozenset(dts) for op, dts in _KERNELS.items()}, converts=_converts(CONVERTS),
                  rfc431_ops=_RFC431_OPS, truediv=_TRUEDIV),
    # Note: operator `*` with a bool tensor casts both sides to int32 and the product back to
    # bool (tensor_math_operator_overrides), and `&` on bool tensors is logical_and; the policy
    # follows tf.math.multiply / tf.bitwise.bitwise_and, which refuse bool.
    # Note: maximum / minimum return a strong tensor where the table says weak (TF's
    # "comparison-method" handling); the plan still calls such a result weak. The dtype agrees.
)

TF_SAFE = replace(
    TF_ALL,
    name="tf-safe",
    framework="TensorFlow (RFC 431 SAFE mode)",
    emulates="TensorFlow 2.21, experimental_enable_numpy_behavior(dtype_conversion_mode='safe'): "
             "operators and tf.math.*",
    promote=PairTable(parse_grid(SAFE, _node)),
)

TF_NONE = replace(
    TF_SAFE,
    name="tf-none",
    framework="TensorFlow (RFC 431 NONE mode)",
    emulates="RFC 431 NONE mode (not shipped by TensorFlow): SAFE without tensor-tensor promotion",
    promote=PairTable(_none_cells(parse_grid(SAFE, _node))),
)
