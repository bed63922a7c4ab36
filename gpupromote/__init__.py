"""gpupromote: the dtype promotion rules of NumPy, PyTorch, JAX, PaddlePaddle, TensorFlow,
Ascend aclnn and the Array API, exactly, with fused elementwise kernels on GPU and CPU.

Every public name is declared here, so that linters and IDEs see it. As in NumPy's namespace, a
few shadow Python builtins there (never outside it): gp.abs, gp.round, gp.pow and the reductions
gp.sum, gp.max, gp.min, gp.any and gp.all, NumPy's and the Array API's names (gp.bool_ is the bool
dtype; the frameworks' elementwise max and min are gp.maximum and gp.minimum).

``import gpupromote`` imports neither Numba nor CuPy nor Dask: the engines load them with the first
op that needs them, and ``gpupromote.dask`` is imported the first time the attribute is read."""
from ._version import __version__  # noqa: F401 - gp.__version__
from .dispatch.api import explain, get_policy_name, policies, promote_types, result_type, set_policy, spec, use_policy
from .dispatch.array import Array
from .dispatch.foreign import asarray   # array.asarray, with torch / JAX / DLPack arrays adopted first
from .core.dtypes import (
    bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float8_e4m3fn, float8_e5m2, float16,
    bfloat16, float32, float64, complex32, complex64, complex128,
    DType, dtype,
)
from .core.errors import CacheWarning, FuseError, IntegerDivisionByZero, LossyPromotionError, LossyPromotionWarning, PromotionError
from .dispatch.functions import (
    add, subtract, multiply, true_divide, floor_divide, remainder, fmod, power, maximum, minimum, fmax,
    fmin, equal, not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or, logical_xor,
    bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift, arctan2, hypot, copysign, logaddexp,
    nextafter, where, negative, positive, absolute, sqrt, rsqrt, cbrt, exp, exp2, expm1, log, log2, log10,
    log1p, sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh, sigmoid, erf,
    floor, ceil, trunc, rint, sign, square, reciprocal, isnan, isinf, isfinite, signbit, logical_not,
    invert, conj, real, imag, angle, sub, mul, div, divide, atan2, eq, ne, lt, le, gt, ge, mod, floordiv,
    truediv, neg, bitwise_not, bitwise_invert, pos, asin, acos, atan, asinh, acosh, atanh, expit, conjugate,
    fix, is_nan, is_inf, is_finite, abs, round, around, pow, clip, clamp, clip_by_value, astype,
    sum, prod, mean, var, std, max, min, any, all, argmax, argmin, cumsum, cumprod,
)
from .dispatch.fuse import fuse
from .dispatch.sanitize import sanitize
from .engines.cpu.threads import get_num_threads, num_threads, set_num_threads   # numba loads on first use
from .tools.config import show_config
from .tools.compare import Comparison, compare
from .dispatch import operators as _operators  # noqa: F401  (attaches gp.Array's operators)
from .core.ops import OPS
from .dispatch.operands import register_lazy as _register_lazy


def _dask_call(op, args, policy, out, form="function"):
    from .integrations.dask import call   # imported with the first dask operand: dask stays optional
    return call(op, args, policy, out, form)


def _dask_call_fused(fused, args, out, policy):
    from .integrations.dask import call_fused
    return call_fused(fused, args, out, policy)


def _dask_reduce(op, x, axis, keepdims, dtype, ddof, out, policy):
    from .integrations.dask_reduce import reduce
    return reduce(op, x, axis, keepdims, dtype, ddof, out, policy)


_register_lazy(_dask_call, _dask_call_fused, _dask_reduce)

# Submodules that load on first access, so that `import gpupromote` stays free of what they import
# (gpupromote.dask imports dask): `gpupromote.dask.kernel_cache_stats` works without an import line.
_LAZY_SUBMODULES = ("dask", "integrations")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        try:
            return importlib.import_module(f".{name}", __name__)   # the import binds it here for later reads
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in ("dask", "distributed"):
                raise
            raise ImportError(f"gpupromote.{name} needs Dask, which is not installed ({exc}): pip install "
                              f"'dask[array]' distributed, or the dask extra in a clone, pip install '.[dask]'") from exc
    raise AttributeError(f"module 'gpupromote' has no attribute {name!r}")


__all__ = [
    "DType", "dtype", "PromotionError", "IntegerDivisionByZero", "FuseError", "CacheWarning", "OPS", "policies",
    "sanitize", "LossyPromotionWarning", "LossyPromotionError",
    "set_num_threads", "get_num_threads", "num_threads", "show_config",
    "set_policy", "use_policy", "get_policy_name", "promote_types", "result_type", "spec", "explain", "Array",
    "asarray", "fuse", "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64", "complex32", "complex64",
    "complex128", "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power",
    "maximum", "minimum", "fmax", "fmin", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "left_shift", "right_shift", "arctan2", "hypot", "copysign", "logaddexp", "nextafter", "where", "negative",
    "positive", "absolute", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "sigmoid", "erf", "floor", "ceil", "trunc", "rint", "sign", "square", "reciprocal", "isnan",
    "isinf", "isfinite", "signbit", "logical_not", "invert", "conj", "real", "imag", "angle", "sub", "mul",
    "div", "divide", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "mod", "floordiv", "truediv", "neg",
    "bitwise_not", "bitwise_invert", "pos", "asin", "acos", "atan", "asinh", "acosh", "atanh", "expit",
    "conjugate", "fix", "is_nan", "is_inf", "is_finite", "abs", "round", "around", "pow", "clip", "clamp",
    "clip_by_value", "astype",
    "sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "argmax", "argmin", "cumsum", "cumprod",
    "compare", "Comparison",
]
