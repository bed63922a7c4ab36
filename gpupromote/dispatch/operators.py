"""gp.Array's operators: + - * / // % ** == != < <= > >= & | ^ << >> (reflected and in-place),
and -x, abs(x), ~x, as the gp ops; NumPy's methods of the functions (x.round(), x.clip(),
x.conj(), x.real, ...).

They run under the *current* policy (gp.set_policy / gp.use_policy), not the policy active when
the array was made: an Array is data, the policy is how a computation promotes. In-place
operators follow the policy's in-place rule (store.STORE_RULES): NumPy writes into self with
'same_kind' casting (``x += 1.5`` on an int8 Array raises like NumPy's UFuncTypeError), PyTorch
with canCast; TensorFlow's assign_add and the Array API keep self's dtype or refuse; Paddle
casts self to the result dtype first, so self takes the result's dtype; JAX arrays are
immutable, so ``x += y`` binds x to a new Array (x + y), leaving other references alone.

NumPy's protocols are attached here too, to Array and to gp.fuse's traced arrays:
``__array_ufunc__`` runs a NumPy ufunc called on them (``np.exp(x)``, ``np.add(x, 1)``,
``np.add(np_array, x)``, ``np_array += x``) as the gp op of the ufunc's name, under the current
policy, with its out= / dtype= / casting= / where=; a ufunc gp has no op for, another method
(reduce, accumulate, outer, at) or another keyword returns NotImplemented, so NumPy raises its own
TypeError. NumPy's operators on (ndarray, Array) reach the same gp op through the ufunc as the
reflected operator does. ``__array_function__`` runs np.clip and np.where (three arguments) as
gp.clip and gp.where; every other NumPy function runs NumPy's own implementation, as before
(the Array is read through ``__array__``).

Note: the operators are attached to Array here, at import (gpupromote/__init__ imports this
module), because they dispatch and the dispatcher makes Arrays: neither dispatch/array.py nor
dispatch/eager.py imports the other.
"""
from __future__ import annotations

import numpy as np

from . import foreign as interop
from .api import CURRENT_POLICY
from .array import Array
from .host_arrays import forms_agree
from .opfunctions import OP_FUNCTIONS, call
from .fuse_stages import Staged
from .traced import Traced
from ..core.kinds import Form, StoreRule
from ..core.ops import PYTHON_OPERATORS
from ..promotion.policies import get_policy

__all__ = ["BINARY_OPERATORS", "COMPARISON_OPERATORS", "UNARY_OPERATORS", "UFUNCS"]

_SCALARS = (bool, int, float, complex)
_ndarray = np.ndarray

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
    # The operator form: a policy may take a Python scalar here that its function refuses (paddle.add(x, 1)
    # raises, x + 1 runs); a host Array takes the op function's fast path only where the policy's
    # refusals are the same in both forms (host_arrays.host_storages, forms_agree).
    def fn(a, b):
        return call(op, (a, b), None, form=Form.OPERATOR)
    compiled = OP_FUNCTIONS[op]

    # two arrays, or a Python scalar where the policy refuses the same scalars in both forms
    # (host_arrays.forms_agree: paddle.add(x, 1) raises, x + 1 runs): the op function, whose compiled
    # dispatcher reads a host Array's storage (fastpath/host_array.c): 1.5 -> 0.6 us, x * 2.0 1.7 -> 0.7
    def forward(self, other):
        t = type(other)
        if t is Array or t is _ndarray or (t in _SCALARS and forms_agree(op, None)):
            return compiled(self, other)
        return fn(self, other) if _is_operand(other) else NotImplemented

    def reflected(self, other):
        t = type(other)
        if t is Array or t is _ndarray or (t in _SCALARS and forms_agree(op, None)):
            return compiled(other, self)
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
        call(op, (self, other), None, out=self, form=Form.OPERATOR)
        return self
    return forward, reflected, inplace


def _unary(op):
    fn = OP_FUNCTIONS[op]
    return lambda self: fn(self)


# why: the resolver's default form (core/ops.default_form) is the operator for exactly these ops
if set(BINARY_OPERATORS.values()) | set(COMPARISON_OPERATORS.values()) != set(PYTHON_OPERATORS):
    raise ImportError("dispatch/operators.py: the dunders and core/ops.py PYTHON_OPERATORS name different ops")
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
Array.astype = lambda self, dtype, *, policy=None, casting="unsafe": OP_FUNCTIONS["astype"](
    self, dtype, policy=policy, casting=casting)   # gp.astype


def _ndarray_methods(fns):
    """NumPy's ndarray methods and properties of the functions: x.round(2), x.clip(0, 6), x.conj(),
    x.conjugate(), x.real, x.imag (the gp functions under the current policy). (No __round__: Python's
    round() of an ndarray raises in NumPy too.)"""
    return {"round": lambda self, decimals=0, *, policy=None, out=None: fns["round"](self, decimals, policy=policy,
                                                                                      out=out),
            "clip": lambda self, min=None, max=None, *, policy=None, out=None: fns["clip"](self, min, max, policy=policy,
                                                                                             out=out),
            "conj": lambda self: fns["conj"](self), "conjugate": lambda self: fns["conj"](self),
            "real": property(lambda self: fns["real"](self)), "imag": property(lambda self: fns["imag"](self))}


# on Arrays and on gp.fuse's traced and staged values alike (the functions record a traced operand)
for _cls in (Array, Traced, Staged):
    for _name, _method in _ndarray_methods(OP_FUNCTIONS).items():
        setattr(_cls, _name, _method)


# ---------------------------------------------------------------------------------------------
# NumPy's protocols

# NumPy's ufuncs (np.add, np.divide, np.conjugate, np.absolute, the clip ufunc np.clip runs ...) ->
# the gp op function of the ufunc's name or alias. By identity: another library's ufunc of the
# same name (scipy.special's) is not taken for NumPy's.
UFUNCS = {u: OP_FUNCTIONS[u.__name__] for u in (*vars(np).values(), *vars(np._core.umath).values())
          if isinstance(u, np.ufunc) and u.__name__ in OP_FUNCTIONS}
_UFUNC_KEYWORDS = frozenset({"out", "dtype", "casting", "where"})


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = UFUNCS.get(ufunc)
    if fn is None or method != "__call__" or not kwargs.keys() <= _UFUNC_KEYWORDS:
        return NotImplemented   # NumPy raises its TypeError naming the ufunc and the types
    out = kwargs.pop("out", None)
    if out is not None:   # NumPy passes out= as a tuple, one entry per output
        if len(out) != 1:
            return NotImplemented
        out = out[0]
    if ufunc.nin != len(inputs):
        return NotImplemented
    return fn(*inputs, out=out, **kwargs)


def _array_function(self, func, types, args, kwargs):
    if func is np.where and len(args) == 3 and not kwargs:
        return OP_FUNCTIONS["where"](*args)
    if func is np.clip:
        kwargs = dict(kwargs)
        x, *bounds = args
        names = (("a_min", "min"), ("a_max", "max"))
        for i, (old, new) in enumerate(names[len(bounds):], start=len(bounds)):
            bounds.append(kwargs.pop(old, kwargs.pop(new, None)))
        lo, hi = (None if b is np._NoValue else b for b in bounds[:2])
        return OP_FUNCTIONS["clip"](x, lo, hi, **kwargs)
    if not all(issubclass(t, (Array, Traced, np.ndarray)) for t in types):
        return NotImplemented   # another library's array: its own __array_function__ decides
    return func._implementation(*args, **kwargs)   # NumPy's own, reading the Array through __array__


Array.__array_ufunc__ = _array_ufunc
Array.__array_function__ = _array_function
Traced.__array_ufunc__ = _array_ufunc
Traced.__array_function__ = _array_function
