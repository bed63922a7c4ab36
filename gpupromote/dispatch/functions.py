"""The public op functions, one declared name each (gp.add, gp.where, ...), so that linters and
IDEs see them. Each is opfunctions.make_op's function for the op; an alias is the same object as
the op it names. NumPy's names abs, round and pow are declared as NumPy declares them (np.abs,
np.round, np.pow: in numpy.__all__ too), so gp.abs(x) ports as written; the frameworks' elementwise
max / min (torch.max(a, b)) are gp.maximum / gp.minimum, gp.max / gp.min being the reductions.
"""
from __future__ import annotations

import builtins

from .opfunctions import OP_FUNCTIONS as _OP_FUNCTIONS
from .reduce import REDUCTION_FUNCTIONS as _REDUCTIONS
from ..core.ops import ALIASES, OPS, REDUCTION_OPS, UNARY_OPS

# --- ops, in core/ops.py order
add = _OP_FUNCTIONS["add"]
subtract = _OP_FUNCTIONS["subtract"]
multiply = _OP_FUNCTIONS["multiply"]
true_divide = _OP_FUNCTIONS["true_divide"]
floor_divide = _OP_FUNCTIONS["floor_divide"]
remainder = _OP_FUNCTIONS["remainder"]
fmod = _OP_FUNCTIONS["fmod"]
power = _OP_FUNCTIONS["power"]
maximum = _OP_FUNCTIONS["maximum"]
minimum = _OP_FUNCTIONS["minimum"]
fmax = _OP_FUNCTIONS["fmax"]
fmin = _OP_FUNCTIONS["fmin"]
equal = _OP_FUNCTIONS["equal"]
not_equal = _OP_FUNCTIONS["not_equal"]
less = _OP_FUNCTIONS["less"]
less_equal = _OP_FUNCTIONS["less_equal"]
greater = _OP_FUNCTIONS["greater"]
greater_equal = _OP_FUNCTIONS["greater_equal"]
logical_and = _OP_FUNCTIONS["logical_and"]
logical_or = _OP_FUNCTIONS["logical_or"]
logical_xor = _OP_FUNCTIONS["logical_xor"]
bitwise_and = _OP_FUNCTIONS["bitwise_and"]
bitwise_or = _OP_FUNCTIONS["bitwise_or"]
bitwise_xor = _OP_FUNCTIONS["bitwise_xor"]
left_shift = _OP_FUNCTIONS["left_shift"]
right_shift = _OP_FUNCTIONS["right_shift"]
arctan2 = _OP_FUNCTIONS["arctan2"]
hypot = _OP_FUNCTIONS["hypot"]
copysign = _OP_FUNCTIONS["copysign"]
logaddexp = _OP_FUNCTIONS["logaddexp"]
nextafter = _OP_FUNCTIONS["nextafter"]
where = _OP_FUNCTIONS["where"]
negative = _OP_FUNCTIONS["negative"]
positive = _OP_FUNCTIONS["positive"]
absolute = _OP_FUNCTIONS["absolute"]
sqrt = _OP_FUNCTIONS["sqrt"]
rsqrt = _OP_FUNCTIONS["rsqrt"]
cbrt = _OP_FUNCTIONS["cbrt"]
exp = _OP_FUNCTIONS["exp"]
exp2 = _OP_FUNCTIONS["exp2"]
expm1 = _OP_FUNCTIONS["expm1"]
log = _OP_FUNCTIONS["log"]
log2 = _OP_FUNCTIONS["log2"]
log10 = _OP_FUNCTIONS["log10"]
log1p = _OP_FUNCTIONS["log1p"]
sin = _OP_FUNCTIONS["sin"]
cos = _OP_FUNCTIONS["cos"]
tan = _OP_FUNCTIONS["tan"]
arcsin = _OP_FUNCTIONS["arcsin"]
arccos = _OP_FUNCTIONS["arccos"]
arctan = _OP_FUNCTIONS["arctan"]
sinh = _OP_FUNCTIONS["sinh"]
cosh = _OP_FUNCTIONS["cosh"]
tanh = _OP_FUNCTIONS["tanh"]
arcsinh = _OP_FUNCTIONS["arcsinh"]
arccosh = _OP_FUNCTIONS["arccosh"]
arctanh = _OP_FUNCTIONS["arctanh"]
sigmoid = _OP_FUNCTIONS["sigmoid"]
erf = _OP_FUNCTIONS["erf"]
floor = _OP_FUNCTIONS["floor"]
ceil = _OP_FUNCTIONS["ceil"]
trunc = _OP_FUNCTIONS["trunc"]
rint = _OP_FUNCTIONS["rint"]
sign = _OP_FUNCTIONS["sign"]
square = _OP_FUNCTIONS["square"]
reciprocal = _OP_FUNCTIONS["reciprocal"]
isnan = _OP_FUNCTIONS["isnan"]
isinf = _OP_FUNCTIONS["isinf"]
isfinite = _OP_FUNCTIONS["isfinite"]
signbit = _OP_FUNCTIONS["signbit"]
logical_not = _OP_FUNCTIONS["logical_not"]
invert = _OP_FUNCTIONS["invert"]
conj = _OP_FUNCTIONS["conj"]
real = _OP_FUNCTIONS["real"]
imag = _OP_FUNCTIONS["imag"]
angle = _OP_FUNCTIONS["angle"]

# --- the frameworks' names for them
sub = subtract
mul = multiply
div = true_divide
divide = true_divide
atan2 = arctan2
eq = equal
ne = not_equal
lt = less
le = less_equal
gt = greater
ge = greater_equal
mod = remainder
floordiv = floor_divide
truediv = true_divide
neg = negative
bitwise_not = invert
bitwise_invert = invert
pos = positive
asin = arcsin
acos = arccos
atan = arctan
asinh = arcsinh
acosh = arccosh
atanh = arctanh
expit = sigmoid
conjugate = conj
fix = trunc
is_nan = isnan
is_inf = isinf
is_finite = isfinite
# Note: abs, round and pow shadow Python's builtins inside gpupromote's namespace only (gp.abs), as
# np.abs, np.round and np.pow do; a user porting NumPy code writes them, and gp.sum / gp.max already did
abs = absolute   # noqa: A001
round = _OP_FUNCTIONS["round"]   # noqa: A001
around = round
pow = power   # noqa: A001
clip = _OP_FUNCTIONS["clip"]
clamp = clip
clip_by_value = clip
astype = _OP_FUNCTIONS["astype"]

# --- reductions (dispatch/reduce.py). Note: sum, max, min, any and all are NumPy's and the Array
# API's names; they shadow Python's builtins inside gpupromote's namespace only (gp.sum), as np.sum does.
sum = _REDUCTIONS["sum"]   # noqa: A001
prod = _REDUCTIONS["prod"]
mean = _REDUCTIONS["mean"]
var = _REDUCTIONS["var"]
std = _REDUCTIONS["std"]
max = _REDUCTIONS["max"]   # noqa: A001
min = _REDUCTIONS["min"]   # noqa: A001
any = _REDUCTIONS["any"]   # noqa: A001
all = _REDUCTIONS["all"]   # noqa: A001
argmax = _REDUCTIONS["argmax"]
argmin = _REDUCTIONS["argmin"]
cumsum = _REDUCTIONS["cumsum"]
cumprod = _REDUCTIONS["cumprod"]
REDUCTION_NAMES = ("sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "argmax", "argmin", "cumsum",
                   "cumprod")

__all__ = [
    "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power", "maximum",
    "minimum", "fmax", "fmin", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "arctan2", "hypot", "copysign", "logaddexp", "nextafter", "where", "negative", "positive",
    "absolute", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid",
    "erf", "floor", "ceil", "trunc", "rint", "sign", "square", "reciprocal", "isnan", "isinf",
    "isfinite", "signbit", "logical_not", "invert", "conj", "real", "imag", "angle", "sub", "mul", "div",
    "divide", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "mod", "floordiv", "truediv", "neg", "bitwise_not",
    "bitwise_invert", "pos", "asin", "acos", "atan", "asinh", "acosh", "atanh", "expit", "conjugate", "fix",
    "is_nan", "is_inf", "is_finite", "abs", "round", "around", "pow", "clip", "clamp", "clip_by_value", "astype",
    *REDUCTION_NAMES,
]

# why: an op added to core/ops.py without its line here would be missing from gp; fail at import instead
_declared = set(__all__)
_expected = {*OPS, *UNARY_OPS, "clip", "astype", *(a for a, t in ALIASES.items() if t in _OP_FUNCTIONS), *REDUCTION_OPS}
if _declared != _expected or set(REDUCTION_NAMES) != set(REDUCTION_OPS) or builtins.any(
        globals().get(name) is not (_REDUCTIONS[name] if name in REDUCTION_OPS else _OP_FUNCTIONS[ALIASES.get(name, name)])
        for name in __all__):
    raise ImportError(f"gpupromote/dispatch/functions.py declares {sorted(_declared ^ _expected)} wrongly: one line per op "
                      f"and per alias")
