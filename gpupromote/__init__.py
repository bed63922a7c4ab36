"""gpupromote: the dtype promotion rules of NumPy, PyTorch, JAX, PaddlePaddle, TensorFlow,
Ascend aclnn and the Array API, exactly, with fused elementwise kernels on GPU and CPU."""
from . import dtypes as _dtypes
from .api import explain, policies, promote_types, result_type, set_policy, spec, use_policy, get_policy_name
from .dtypes import DType, dtype
from .errors import CacheWarning, IntegerDivisionByZero, PromotionError
from .ops import OPS
from .dispatch import OP_FUNCTIONS as _OP_FUNCTIONS
from .array import Array, asarray
from .fuse import fuse

globals().update({d.name: d for d in _dtypes.ALL})
globals().update(_OP_FUNCTIONS)

__all__ = ["DType", "dtype", "PromotionError", "IntegerDivisionByZero", "CacheWarning", "OPS", "policies",
           "set_policy", "use_policy", "get_policy_name", "promote_types", "result_type", "spec", "explain",
           *(d.name for d in _dtypes.ALL), "Array", "asarray", "fuse", *_OP_FUNCTIONS]
