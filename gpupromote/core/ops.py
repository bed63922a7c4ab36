"""Every elementwise op, declared once: both kernel generators and the resolver read this table.

Columns:
  name      NumPy's name for the op (aliases below map the frameworks' names onto it)
  arity     number of array operands
  kind      promotion kind (kinds.PromotionKind), after PyTorch's ELEMENTWISE_TYPE_PROMOTION_KIND:
              DEFAULT          result = compute = the promoted dtype
              INT_TO_FLOAT     bool/int promoted dtypes become the policy's default float
              ALWAYS_BOOL      computed in the promoted dtype, result bool
              LOGICAL          like ALWAYS_BOOL; operands are only tested for truth
              COMPLEX_TO_FLOAT computed in the promoted dtype; a complex one gives its real dtype
  accepts   dtype kinds the op is defined on (b bool, u unsigned, i signed, f float, c complex);
            checked on the compute dtype, policies may narrow it further (ops_refusing)
  expr      the kernel expression over in0, in1 (in2 for where), already of the compute dtype

The _OVERRIDES table gives an op other expressions for some compute dtypes; "when" is one of
              "b", "ui", "c"   the compute dtype's kind is one of these letters
              "f4", "c8"       the compute dtype is exactly this one (its 2-char code)
              "xla"            integer compute under XLA's integer division (x // 0 is -1 or ~0)
              "narrow"         the result is a narrow float; "{r}" in expr is its code

Expressions are one term or two terms joined by one operator (``in0 + in1``, ``-in0``,
``gp_truth(in0) & gp_truth(in1)``): a form that Python and C++ parse alike, whatever their
operator precedences. ``gp_*`` helpers live in kernels/gpupromote_math.cuh and
kernels/gpupromote_elementwise.cuh for CUDA, and in engines/cpu/helpers.py and
engines/cpu/elementwise.py (their twins, by the same names) for Numba.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .kinds import (Form, ALL_KINDS, FLOATING, INTEGER, INTEGER_OR_BOOLEAN, NUMERIC, REAL_FLOATING, REAL_NUMERIC,
                    REAL_NUMERIC_OR_BOOLEAN, PromotionKind, categories)

__all__ = ["Op", "OPS", "UNARY_OPS", "CLIP_OPS", "CAST_OPS", "REDUCTION_OPS", "ALIASES", "op_named", "PYTHON_OPERATORS",
           "default_form"]

_DEFAULT, _TO_FLOAT, _BOOL, _LOGICAL, _TO_REAL, _ANGLE = (
    PromotionKind.DEFAULT, PromotionKind.INT_TO_FLOAT, PromotionKind.ALWAYS_BOOL, PromotionKind.LOGICAL,
    PromotionKind.COMPLEX_TO_FLOAT, PromotionKind.INT_TO_FLOAT_REAL)
_ACC, _TO_DFLOAT, _TO_DFLOAT_REAL, _INDEX = (PromotionKind.ACCUMULATE, PromotionKind.INT_TO_DEFAULT_FLOAT,
                                             PromotionKind.INT_TO_DEFAULT_FLOAT_REAL, PromotionKind.INDEX)

_NARROW_CODES = ("f2", "bf", "e4", "e5")


@dataclass(frozen=True)
class Op:
    name: str
    arity: int
    kind: PromotionKind
    accepts: str
    expr: str
    overrides: tuple = ()
    combine: str = ""   # a reduction: the binary op it folds elements with

    def __post_init__(self):
        # why: a misspelt kind or category raises here, at import, instead of acting as DEFAULT
        object.__setattr__(self, "kind", PromotionKind(self.kind))
        categories(self.accepts)

    @property
    def predicate(self) -> bool:
        """Whether the op's value is a truth value whatever it computes in."""
        return self.kind in (_BOOL, _LOGICAL)

    def expression(self, compute, result=None, int_division: str = "numpy", values: str = "numpy") -> str:
        """The expression for computing in ``compute`` (a DType) into ``result``: the first
        matching override, else ``expr``. The one place an op's kernel body is chosen."""
        for when, expr in self.overrides:
            if _matches(when, compute, result, int_division, values):
                return expr.replace("{r}", result.code) if when == "narrow" else expr
        return self.expr

    def value_kind(self, compute) -> str:
        """The kind of the op's value (before the result cast): b for predicates, the real kind
        for COMPLEX_TO_FLOAT on complex, else the compute dtype's."""
        if self.predicate:
            return "b"
        if self.kind in (_TO_REAL, _ANGLE) and compute.kind == "c":
            return "f"
        return compute.kind


def _matches(when, compute, result, int_division, values="numpy") -> bool:
    if "." in when:   # "torch.f": the framework whose values the plan follows, and compute kinds
        style, kinds = when.split(".")
        return values == style and compute.kind in kinds
    if when.startswith("result="):   # "result=bf,e4": the result dtype's code
        return result is not None and result.code in when[7:].split(",")
    if when == "xla":
        return int_division == "xla" and compute.kind in "ui"
    if when == "narrow":
        return result is not None and result.code in _NARROW_CODES
    if len(when) >= 2 and when[1].isdigit():
        return compute.code == when
    return compute.kind in when


#     name             arity kind       accepts (core/kinds.py)  expr
_TABLE = [
    ("add",            2, _DEFAULT,  ALL_KINDS,          "in0 + in1"),
    ("subtract",       2, _DEFAULT,  NUMERIC,            "in0 - in1"),                      # why: all frameworks refuse bool - bool
    ("multiply",       2, _DEFAULT,  ALL_KINDS,          "in0 * in1"),
    ("true_divide",    2, _TO_FLOAT, FLOATING,           "in0 / in1"),
    ("floor_divide",   2, _DEFAULT,  REAL_NUMERIC,       "gp_floor_divide(in0, in1)"),      # why: no framework has a bool kernel
    ("remainder",      2, _DEFAULT,  REAL_NUMERIC,       "gp_remainder(in0, in1)"),         # (NumPy, JAX: bool computes as int)
    ("fmod",           2, _DEFAULT,  REAL_NUMERIC,       "gp_fmod(in0, in1)"),
    ("power",          2, _DEFAULT,  ALL_KINDS,          "gp_power(in0, in1)"),
    ("maximum",        2, _DEFAULT,  ALL_KINDS,          "gp_maximum(in0, in1)"),
    ("minimum",        2, _DEFAULT,  ALL_KINDS,          "gp_minimum(in0, in1)"),
    ("fmax",           2, _DEFAULT,  ALL_KINDS,          "gp_fmax(in0, in1)"),
    ("fmin",           2, _DEFAULT,  ALL_KINDS,          "gp_fmin(in0, in1)"),
    ("equal",          2, _BOOL,     ALL_KINDS,          "in0 == in1"),
    ("not_equal",      2, _BOOL,     ALL_KINDS,          "in0 != in1"),
    ("less",           2, _BOOL,     ALL_KINDS,          "in0 < in1"),
    ("less_equal",     2, _BOOL,     ALL_KINDS,          "in0 <= in1"),
    ("greater",        2, _BOOL,     ALL_KINDS,          "in0 > in1"),
    ("greater_equal",  2, _BOOL,     ALL_KINDS,          "in0 >= in1"),
    ("logical_and",    2, _LOGICAL,  ALL_KINDS,          "gp_truth(in0) & gp_truth(in1)"),
    ("logical_or",     2, _LOGICAL,  ALL_KINDS,          "gp_truth(in0) | gp_truth(in1)"),
    ("logical_xor",    2, _LOGICAL,  ALL_KINDS,          "gp_truth(in0) != gp_truth(in1)"),
    ("bitwise_and",    2, _DEFAULT,  INTEGER_OR_BOOLEAN, "in0 & in1"),
    ("bitwise_or",     2, _DEFAULT,  INTEGER_OR_BOOLEAN, "in0 | in1"),
    ("bitwise_xor",    2, _DEFAULT,  INTEGER_OR_BOOLEAN, "in0 ^ in1"),
    ("left_shift",     2, _DEFAULT,  INTEGER,            "gp_left_shift(in0, in1)"),
    ("right_shift",    2, _DEFAULT,  INTEGER,            "gp_right_shift(in0, in1)"),
    ("arctan2",        2, _TO_FLOAT, REAL_FLOATING,      "gp_atan2(in0, in1)"),
    ("hypot",          2, _TO_FLOAT, REAL_FLOATING,      "gp_hypot(in0, in1)"),
    ("copysign",       2, _TO_FLOAT, REAL_FLOATING,      "gp_copysign(in0, in1)"),
    ("logaddexp",      2, _TO_FLOAT, REAL_FLOATING,      "gp_logaddexp(in0, in1)"),
    ("nextafter",      2, _TO_FLOAT, REAL_FLOATING,      "gp_nextafter(in0, in1)"),
    ("where",          3, _DEFAULT,  ALL_KINDS,          "gp_select(in0, in1, in2)"),       # why: in0 is the bool condition
]

# Unary ops. The kinds and categories are NumPy's (scipy.special's for sigmoid and erf); a
# framework that differs says so in its policy (kinds, accepts, refuses) or rule module
# (bool_kernels: the dtype a bool input computes in where the framework has no bool kernel).
#     name             arity kind       accepts (kinds.py)  expr
_UNARY_TABLE = [
    ("negative",       1, _DEFAULT,  NUMERIC,            "-in0"),
    ("positive",       1, _DEFAULT,  NUMERIC,            "in0"),
    ("absolute",       1, _TO_REAL,  ALL_KINDS,          "gp_abs(in0)"),
    ("sqrt",           1, _TO_FLOAT, FLOATING,           "gp_sqrt(in0)"),
    ("rsqrt",          1, _TO_FLOAT, FLOATING,           "gp_rsqrt(in0)"),
    ("cbrt",           1, _TO_FLOAT, REAL_FLOATING,      "gp_cbrt(in0)"),
    ("exp",            1, _TO_FLOAT, FLOATING,           "gp_exp(in0)"),
    ("exp2",           1, _TO_FLOAT, FLOATING,           "gp_exp2(in0)"),
    ("expm1",          1, _TO_FLOAT, FLOATING,           "gp_expm1(in0)"),
    ("log",            1, _TO_FLOAT, FLOATING,           "gp_log(in0)"),
    ("log2",           1, _TO_FLOAT, FLOATING,           "gp_log2(in0)"),
    ("log10",          1, _TO_FLOAT, FLOATING,           "gp_log10(in0)"),
    ("log1p",          1, _TO_FLOAT, FLOATING,           "gp_log1p(in0)"),
    ("sin",            1, _TO_FLOAT, FLOATING,           "gp_sin(in0)"),
    ("cos",            1, _TO_FLOAT, FLOATING,           "gp_cos(in0)"),
    ("tan",            1, _TO_FLOAT, FLOATING,           "gp_tan(in0)"),
    ("arcsin",         1, _TO_FLOAT, FLOATING,           "gp_asin(in0)"),
    ("arccos",         1, _TO_FLOAT, FLOATING,           "gp_acos(in0)"),
    ("arctan",         1, _TO_FLOAT, FLOATING,           "gp_atan(in0)"),
    ("sinh",           1, _TO_FLOAT, FLOATING,           "gp_sinh(in0)"),
    ("cosh",           1, _TO_FLOAT, FLOATING,           "gp_cosh(in0)"),
    ("tanh",           1, _TO_FLOAT, FLOATING,           "gp_tanh(in0)"),
    ("arcsinh",        1, _TO_FLOAT, FLOATING,           "gp_asinh(in0)"),
    ("arccosh",        1, _TO_FLOAT, FLOATING,           "gp_acosh(in0)"),
    ("arctanh",        1, _TO_FLOAT, FLOATING,           "gp_atanh(in0)"),
    ("sigmoid",        1, _TO_FLOAT, REAL_FLOATING,      "gp_sigmoid(in0)"),               # why: scipy's expit has no complex loop
    ("erf",            1, _TO_FLOAT, FLOATING,           "gp_erf(in0)"),
    ("floor",          1, _DEFAULT,  REAL_NUMERIC_OR_BOOLEAN, "gp_floor(in0)"),            # NumPy 2: integers keep their dtype
    ("ceil",           1, _DEFAULT,  REAL_NUMERIC_OR_BOOLEAN, "gp_ceil(in0)"),
    ("trunc",          1, _DEFAULT,  REAL_NUMERIC_OR_BOOLEAN, "gp_trunc(in0)"),
    ("rint",           1, _TO_FLOAT, FLOATING,           "gp_rint(in0)"),
    ("round",          1, _DEFAULT,  NUMERIC,            "gp_rint(in0)"),                  # why: round(x) is rint(x); integers keep
    ("sign",           1, _DEFAULT,  NUMERIC,            "gp_sign(in0)"),
    ("square",         1, _DEFAULT,  NUMERIC,            "in0 * in0"),
    ("reciprocal",     1, _DEFAULT,  NUMERIC,            "gp_reciprocal(in0)"),            # NumPy: integers stay integers
    ("isnan",          1, _BOOL,     ALL_KINDS,          "gp_isnan(in0)"),
    ("isinf",          1, _BOOL,     ALL_KINDS,          "gp_isinf(in0)"),
    ("isfinite",       1, _BOOL,     ALL_KINDS,          "gp_isfinite(in0)"),
    ("signbit",        1, _BOOL,     REAL_NUMERIC_OR_BOOLEAN, "gp_signbit(in0)"),
    ("logical_not",    1, _LOGICAL,  ALL_KINDS,          "gp_logical_not(in0)"),
    ("invert",         1, _DEFAULT,  INTEGER_OR_BOOLEAN, "~in0"),
    ("conj",           1, _DEFAULT,  NUMERIC,            "gp_conj(in0)"),
    ("real",           1, _TO_REAL,  ALL_KINDS,          "gp_real(in0)"),
    ("imag",           1, _TO_REAL,  ALL_KINDS,          "gp_imag(in0)"),
    ("angle",          1, _ANGLE,    ALL_KINDS,          "gp_angle(in0)"),
]

# clip(x, lo, hi): x and its bounds promote together, as one op of three operands. A bound
# given as None is not an operand: clip(x, None, hi) is _clip_max(x, hi), clip(x, lo, None) is
# _clip_min(x, lo) (dispatch/api.clip_form picks the form).
_CLIP_TABLE = [
    ("clip",           3, _DEFAULT,  ALL_KINDS,          "gp_clip(in0, in1, in2)"),
    ("_clip_min",      2, _DEFAULT,  ALL_KINDS,          "gp_clip_min(in0, in1)"),
    ("_clip_max",      2, _DEFAULT,  ALL_KINDS,          "gp_clip_max(in0, in1)"),
]

# astype(x, dtype): no promotion, the dtype is the result (promotion/resolve.py); the kernel reads
# x as the target, which converts as NumPy's astype converts (kernel/ir.py Cast).
_CAST_TABLE = [
    ("astype",         2, _DEFAULT,  ALL_KINDS,          "in0"),
]

# Reductions over the whole operand or some axes (issue 24 gives them kernels; the resolver knows
# their dtypes now). ``combine`` is the binary op a reduction folds its elements with.
#     name             kind       accepts             combine
_REDUCTION_TABLE = [
    ("sum",            _ACC,      ALL_KINDS,          "add"),
    ("prod",           _ACC,      ALL_KINDS,          "multiply"),
    ("cumsum",         _ACC,      ALL_KINDS,          "add"),
    ("cumprod",        _ACC,      ALL_KINDS,          "multiply"),
    ("mean",           _TO_DFLOAT, ALL_KINDS,         "add"),                            # np.mean: float64 for integers
    ("var",            _TO_DFLOAT_REAL, ALL_KINDS,    "add"),
    ("std",            _TO_DFLOAT_REAL, ALL_KINDS,    "add"),
    ("max",            _DEFAULT,  ALL_KINDS,          "maximum"),                        # np.max (amax): the reduction
    ("min",            _DEFAULT,  ALL_KINDS,          "minimum"),
    ("any",            _BOOL,     ALL_KINDS,          "logical_or"),
    ("all",            _BOOL,     ALL_KINDS,          "logical_and"),
    ("argmax",         _INDEX,    ALL_KINDS,          "maximum"),
    ("argmin",         _INDEX,    ALL_KINDS,          "minimum"),
]

# Ops the engines use that no user calls by name.
_INTERNAL_TABLE = [
    ("_flush",         1, _DEFAULT,  FLOATING,           "gp_ftz(in0)"),                    # why: XLA's FTZ / DAZ, a plan flag
]

# Expressions of an op for some compute dtypes; of an op's lines, the first that matches wins.
#      op              when     expr
_OVERRIDES = [
    ("add",            "b",     "in0 | in1"),                       # why: NumPy's bool add is or
    ("add",            "ui",    "gp_wrap_add(in0, in1)"),           # why: C++ signed overflow is undefined; NumPy wraps
    ("subtract",       "ui",    "gp_wrap_sub(in0, in1)"),
    ("multiply",       "b",     "in0 & in1"),
    ("multiply",       "ui",    "gp_wrap_mul(in0, in1)"),           # why: unsigned short * unsigned short is an int product
    ("multiply",       "c",     "gp_cmul(in0, in1)"),               # why: rounded products, never an FMA
    ("true_divide",    "c",     "gp_cdiv(in0, in1)"),               # why: Smith's algorithm, as npy_cdiv
    ("true_divide",    "b",     "gp_bool_true_divide(in0, in1)"),   # why: Paddle keeps bool / bool bool; 1/0 is true
    ("power",          "b",     "in0 | gp_not(in1)"),               # why: torch's bool ** True is x, ** False all true
    ("copysign",       "b",     "in0"),                             # why: Paddle's bool copysign: |x| of a bool is x
    ("floor_divide",   "xla",   "gp_floor_divide_xla(in0, in1)"),   # why: XLA's x // 0 is -1 (signed) or ~0
    ("remainder",      "xla",   "gp_remainder_xla(in0, in1)"),
    ("remainder",      "torch.f", "gp_remainder_keepzero(in0, in1)"),  # why: a zero remainder keeps the dividend's sign
    ("remainder",      "jax.f", "gp_remainder_keepzero(in0, in1)"),
    ("floor_divide",   "jax.f", "gp_floor_divide_jaxf(in0, in1)"),   # why: CPython's float_divmod: -0.0 // 5 is +0.0
    ("power",          "xla",   "gp_power_xla(in0, in1)"),          # why: jnp.power of int arrays: y & 63, wrapping
    # the owned math functions (kernel/math): a narrow result rounded once from the wide value
    ("power",          "narrow", "gp_powerf_{r}(in0, in1)"),
    ("power",          "f",     "gp_powerf(in0, in1)"),
    ("power",          "c",     "gp_power_complex(in0, in1)"),      # why: NumPy's npy_cpow, owned
    ("arctan2",        "narrow", "gp_atan2_{r}(in0, in1)"),
    ("hypot",          "narrow", "gp_hypot_{r}(in0, in1)"),
    ("logaddexp",      "narrow", "gp_logaddexp_{r}(in0, in1)"),
    ("less",           "c",     "gp_clt(in0, in1)"),                # why: NumPy orders complex lexicographically
    ("less_equal",     "c",     "gp_cle(in0, in1)"),
    ("greater",        "c",     "gp_cgt(in0, in1)"),
    ("greater_equal",  "c",     "gp_cge(in0, in1)"),
    ("nextafter",      "narrow", "gp_nextafter_{r}(in0, in1)"),     # why: one ulp of the narrow result, not of float32
    ("negative",       "ui",    "gp_wrap_neg(in0)"),                # why: -INT_MIN wraps
    ("invert",         "b",     "gp_not(in0)"),                     # why: ~true is -2 in C++
    *((op, "narrow", f"gp_{helper}_{{r}}(in0)") for op, helper in (    # why: one rounding from the wide value
        ("rsqrt", "rsqrt"), ("cbrt", "cbrt"), ("exp", "exp"), ("exp2", "exp2"), ("expm1", "expm1"), ("log", "log"),
        ("log2", "log2"), ("log10", "log10"), ("log1p", "log1p"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
        ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
        ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("sigmoid", "sigmoid"),
        ("erf", "erf"))),
    ("square",         "ui",    "gp_wrap_mul(in0, in0)"),
    ("positive",       "b",     "in0"),
    ("sign",           "torch.f", "gp_sign_torch(in0)"),            # why: torch.sign(nan) is 0
    ("sign",           "jax.fc", "gp_sign_jax(in0)"),               # why: lax.sign keeps -0.0; z / |z| as it comes
    ("sign",           "result=bf,e4,e5", "gp_sign_jax(in0)"),      # why: ml_dtypes' sign keeps -0.0 too
    ("angle",          "torch.f", "gp_angle_torch(in0)"),           # why: torch.angle(-0.0) is 0 (x < 0 ? pi : 0)
    ("reciprocal",     "torch.c", "gp_reciprocal_div(in0)"),        # why: c10 complex division, 1 / 0 is inf + nan j
    ("clip",           "jax.buif", "gp_clip_jax(in0, in1, in2)"),   # why: jnp.maximum(-0.0, 0.0) is +0.0: the bound wins a tie
    ("_clip_min",      "jax.buif", "gp_clip_min_jax(in0, in1)"),
    ("_clip_max",      "jax.buif", "gp_clip_max_jax(in0, in1)"),
    ("negative",       "torch.c", "gp_neg_torch(in0)"),             # why: torch negates a complex number as 0 - z
    ("reciprocal",     "jax.c", "gp_reciprocal_div(in0)"),          # (NumPy's own complex reciprocal formula gives nan)
]


def _op(row) -> Op:
    name = row[0]
    return Op(*row, overrides=tuple((when, expr) for op, when, expr in _OVERRIDES if op == name))


OPS = {row[0]: _op(row) for row in _TABLE}
UNARY_OPS = {row[0]: _op(row) for row in _UNARY_TABLE}
CLIP_OPS = {row[0]: _op(row) for row in _CLIP_TABLE}
CAST_OPS = {row[0]: _op(row) for row in _CAST_TABLE}
REDUCTION_OPS = {name: Op(name, 1, kind, accepts, "", combine=combine) for name, kind, accepts, combine in _REDUCTION_TABLE}
_INTERNAL = {row[0]: _op(row) for row in _INTERNAL_TABLE}

# The frameworks' names for the same ops.
ALIASES = {"sub": "subtract", "mul": "multiply", "div": "true_divide", "divide": "true_divide",
           "pow": "power", "atan2": "arctan2", "eq": "equal", "ne": "not_equal", "lt": "less",
           "le": "less_equal", "gt": "greater", "ge": "greater_equal", "mod": "remainder",
           "floordiv": "floor_divide", "truediv": "true_divide",
           "neg": "negative", "abs": "absolute", "bitwise_not": "invert", "bitwise_invert": "invert",
           "pos": "positive", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
           "acosh": "arccosh", "atanh": "arctanh", "expit": "sigmoid", "conjugate": "conj", "fix": "trunc",
           "is_nan": "isnan", "is_inf": "isinf", "is_finite": "isfinite",
           "around": "round", "clamp": "clip", "clip_by_value": "clip",
           "amax": "max", "amin": "min", "reduce_sum": "sum", "reduce_prod": "prod", "reduce_mean": "mean",
           "reduce_max": "max", "reduce_min": "min", "reduce_any": "any", "reduce_all": "all",
           "reduce_variance": "var", "reduce_std": "std", "cumulative_sum": "cumsum", "cumulative_prod": "cumprod",
           "product": "prod"}


def op_named(name: str) -> Op:
    op = (OPS.get(name) or UNARY_OPS.get(name) or CLIP_OPS.get(name) or CAST_OPS.get(name) or REDUCTION_OPS.get(name)
          or _INTERNAL.get(name))
    if op is None:
        target = ALIASES.get(name, "")
        op = OPS.get(target) or UNARY_OPS.get(target) or CLIP_OPS.get(target) or REDUCTION_OPS.get(target)
    if op is None:
        raise ValueError(f"unknown op {name!r}: use one of {', '.join([*OPS, *UNARY_OPS])} "
                         f"(or an alias: {', '.join(ALIASES)})")
    return op


# The ops Python writes with an operator (gp.Array's and gp.fuse's dunders, the CLI's expressions),
# and the operator. dispatch/operators.py checks its dunders against it at import.
PYTHON_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "floor_divide": "//",
                    "remainder": "%", "power": "**", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
                    "left_shift": "<<", "right_shift": ">>", "equal": "==", "not_equal": "!=", "less": "<",
                    "less_equal": "<=", "greater": ">", "greater_equal": ">="}


def default_form(name: str) -> Form:
    """The form gp.result_type and gp.explain answer for when no form= is given: the operator where
    Python has one for the op (x + 1), else the function (maximum(x, 1))."""
    return Form.OPERATOR if ALIASES.get(name, name) in PYTHON_OPERATORS else Form.FUNCTION

# ---------------------------------------------------------------------------------------------
# Checked at import: the expression form both generators rely on, and the override selectors.

_TERM = r"(?:-|~)?(?:in\d|gp_\w+\((?:in\d(?:, )?)+\))"
_EXPR = re.compile(rf"{_TERM}(?: (?:[-+*/&|^]|==|!=|<|<=|>|>=) {_TERM})?")
_WHEN = re.compile(r"[buifc]+|[buifce][0-9f]\d?|xla|narrow|(?:numpy|torch|jax)\.[buifc]+|result=\w\w(?:,\w\w)*")


def _check_table():
    known = {*OPS, *UNARY_OPS, *CLIP_OPS, *CAST_OPS, *_INTERNAL}
    for name, _, _ in _OVERRIDES:
        if name not in known:
            raise ValueError(f"_OVERRIDES names an unknown op {name!r}")
    for op in (*OPS.values(), *UNARY_OPS.values(), *CLIP_OPS.values(), *CAST_OPS.values(), *_INTERNAL.values()):
        for when, expr in ((None, op.expr), *op.overrides):
            if when is not None and not _WHEN.fullmatch(when):
                raise ValueError(f"{op.name}: unknown override selector {when!r}")
            if not _EXPR.fullmatch(expr.replace("{r}", "f2")):
                raise ValueError(f"{op.name}: expression {expr!r} is not one term or two joined by one operator")
            if not set(re.findall(r"in(\d)", expr)) <= {str(i) for i in range(op.arity)}:
                raise ValueError(f"{op.name}: {expr!r} reads beyond its {op.arity} operands")


_check_table()
