"""gp.Array's operators: + - * / // % ** == != < <= > >= & | ^ << >> (reflected and in-place),
and -x, abs(x), ~x, as the gp ops.

They run under the *current* policy (gp.set_policy / gp.use_policy), not the policy active when
the array was made: an Array is data, the policy is how a computation promotes. In-place
operators follow the policy's in-place rule (store.STORE_RULES): NumPy writes into self with
'same_kind' casting (``x += 1.5`` on an int8 Array raises like NumPy's UFuncTypeError), PyTorch
with canCast; TensorFlow's assign_add and the Array API keep self's dtype or refuse; Paddle
casts self to the result dtype first, so self takes the result's dtype; JAX arrays are
immutable, so ``x += y`` binds x to a new Array (x + y), leaving other references alone.

Note: the operators are attached to Array here, at import (gpupromote/__init__ imports this
module), because they dispatch and the dispatcher makes Arrays: neither dispatch/array.py nor
dispatch/eager.py imports the other.
"""
from __future__ import annotations

import numpy as np

from . import foreign as interop
from .api import CURRENT_POLICY
from .array import Array
from .opfunctions import OP_FUNCTIONS, call
from ..core.kinds import StoreRule
from ..promotion.policies import get_policy

__all__ = ["BINARY_OPERATORS", "COMPARISON_OPERATORS", "UNARY_OPERATORS"]

_SCALARS = (bool, int, float, complex)

#                        dunder       op
BINARY_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
                    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}
COMPARISON_OPERATORS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                        "gt": "greater", "ge": "greater_equal"}
# Kernels of the current policy, as the binary operators: on narrow storage (float8, bfloat16
# as bits) the storage's own operator would act on bit patterns.
UNARY_OPERATORS = {"neg": "negative", "abs": "absolute", "invert": "invert"}


def _is_operand(x) -> bool:
    return (isinstance(x, (Array, np.ndarray, np.generic, *_SCALARS))
            or hasattr(x, "__cuda_array_interface__") or interop.is_foreign(x))


def _binary(op):
    fn = OP_FUNCTIONS[op]

    def forward(self, other):
        return fn(self, other) if _is_operand(other) else NotImplemented

    def reflected(self, other):
        return fn(other, self) if _is_operand(other) else NotImplemented

    def inplace(self, other):
        if not _is_operand(other):
            return NotImplemented
        rule = get_policy(CURRENT_POLICY.get()).rules.inplace_rule
        if rule == StoreRule.REBIND:     # JAX: x += y is x = x + y
            return fn(self, other)
        if rule == StoreRule.RETYPE:     # Paddle: x is cast to the result dtype, then updated in place
            result = fn(self, other)
            if result.shape != self.shape:
                raise ValueError(f"{op}: the in-place result has shape {result.shape}, not the target's "
                                 f"{self.shape} (an in-place op cannot broadcast its target)")
            return self.replace_with(result)
        call(op, (self, other), None, out=self)
        return self
    return forward, reflected, inplace


def _unary(op):
    fn = OP_FUNCTIONS[op]
    return lambda self: fn(self)


for _dunder, _op in BINARY_OPERATORS.items():
    _f, _r, _i = _binary(_op)
    setattr(Array, f"__{_dunder}__", _f)
    setattr(Array, f"__r{_dunder}__", _r)
    setattr(Array, f"__i{_dunder}__", _i)
for _dunder, _op in COMPARISON_OPERATORS.items():
    setattr(Array, f"__{_dunder}__", _binary(_op)[0])
for _dunder, _op in UNARY_OPERATORS.items():
    setattr(Array, f"__{_dunder}__", _unary(_op))
Array.__pos__ = lambda self: self
Array.astype = lambda self, dtype, *, policy=None: OP_FUNCTIONS["astype"](self, dtype, policy=policy)   # gp.astype
