"""The symbolic operands of gp.fuse's trace: a Traced array (a dtype, a rank and the IR value that
computes it) and a TracedScalar (a Python scalar argument, replayed per call). Their operators
record steps on the tracer (fuse_trace.Tracer) that made them."""
from __future__ import annotations

import operator

import numpy as np

from ..core import dtypes as D
from .array import Array
from ..core.errors import FuseError, VALUE_IN_FUSE
from ..core.kinds import Form
from ..promotion.plan import Operand

__all__ = ["Traced", "TracedScalar", "operand_like"]

_PY_SCALARS = (bool, int, float, complex)


class Traced:
    """An array inside gp.fuse's trace: a dtype, a rank and the IR value that computes it."""

    __slots__ = ("_tracer", "_dtype", "_ndim", "_node", "_arg", "_label", "__weakref__")
    __array_ufunc__ = None     # attached by dispatch/operators.py: np.exp(traced) records gp's exp
    __hash__ = None

    def __init__(self, tracer, dtype, ndim, node=None, arg=None, label="?"):
        self._tracer, self._dtype, self._ndim, self._node, self._arg = tracer, dtype, ndim, node, arg
        self._label = label

    @property
    def dtype(self) -> D.DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._ndim

    @property
    def operand(self) -> Operand:
        return Operand(self._dtype, "zero-dim" if self._ndim == 0 else "array", None, self._tracer.host)

    def __repr__(self):
        return f"<traced {self._dtype.name}{'[]' if self._ndim == 0 else '[n]'}>"

    def __bool__(self):
        raise FuseError(VALUE_IN_FUSE)

    __int__ = __float__ = __complex__ = __index__ = __bool__

    def __pos__(self):
        return self

    def __neg__(self):
        return self._tracer.record("negative", (self,))

    def __abs__(self):
        return self._tracer.record("absolute", (self,))

    def __invert__(self):
        return self._tracer.record("invert", (self,))

    def astype(self, dtype):
        return self._tracer.record("astype", (self, dtype))


class TracedScalar:
    """A Python scalar argument inside gp.fuse's trace: its type, its value at trace time, and how
    to compute its value from a call's arguments (Python arithmetic on it is replayed per call)."""

    __slots__ = ("_tracer", "_rep", "_compute", "_label")
    __hash__ = None

    def __init__(self, tracer, rep, compute, label="a Python scalar computed from the arguments"):
        self._tracer, self._rep, self._compute, self._label = tracer, rep, compute, label

    def __repr__(self):
        return f"<traced Python {type(self._rep).__name__}>"

    def _python(self, fn, *others):
        reps = [o._rep if isinstance(o, TracedScalar) else o for o in others]
        getters = [o._compute if isinstance(o, TracedScalar) else (lambda args, v=o: v) for o in others]
        compute, mine = self._compute, fn
        return TracedScalar(self._tracer, fn(self._rep, *reps),
                            lambda args: mine(compute(args), *(g(args) for g in getters)))

    def __bool__(self):
        raise FuseError("gp.fuse: Python control flow on a scalar argument would fix one branch at trace time; "
                        "pass the scalar through functools.partial (a constant) or use gp.where")

    __int__ = __float__ = __complex__ = __index__ = __bool__

    def __neg__(self):
        return self._python(operator.neg)

    def __pos__(self):
        return self

    def __abs__(self):
        return self._python(operator.abs)

    def __invert__(self):
        return self._python(operator.invert)


_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
              "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
              "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                "ge": "greater_equal"}
_REFLECTED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def operand_like(x) -> bool:
    """Whether ``x`` can be an operand of a traced op."""
    return isinstance(x, (Traced, TracedScalar, np.ndarray, np.generic, *_PY_SCALARS)) or isinstance(x, Array) \
        or hasattr(x, "__cuda_array_interface__")


def _array_operator(dunder, op):
    # the operator form (x + 1), where a policy may take a Python scalar its function refuses
    def forward(self, other):
        return self._tracer.record(op, (self, other), form=Form.OPERATOR) if operand_like(other) else NotImplemented

    def reflected(self, other):
        return self._tracer.record(op, (other, self), form=Form.OPERATOR) if operand_like(other) else NotImplemented
    return forward, reflected


def _scalar_operator(dunder, op, python):
    def forward(self, other):
        if isinstance(other, (TracedScalar, *_PY_SCALARS)):
            return self._python(python, other)
        return self._tracer.record(op, (self, other), form=Form.OPERATOR) if operand_like(other) else NotImplemented

    def reflected(self, other):
        if isinstance(other, _PY_SCALARS):
            return self._python(lambda a, b: python(b, a), other)
        return self._tracer.record(op, (other, self), form=Form.OPERATOR) if operand_like(other) else NotImplemented
    return forward, reflected


for _d, _op in _OPERATORS.items():
    _f, _r = _array_operator(_d, _op)
    setattr(Traced, f"__{_d}__", _f)
    setattr(Traced, f"__r{_d}__", _r)
    _f, _r = _scalar_operator(_d, _op, getattr(operator, {"and": "and_", "or": "or_"}.get(_d, _d)))
    setattr(TracedScalar, f"__{_d}__", _f)
    setattr(TracedScalar, f"__r{_d}__", _r)
for _d, _op in _COMPARISONS.items():
    setattr(Traced, f"__{_d}__", _array_operator(_d, _op)[0])
    setattr(TracedScalar, f"__{_d}__", _scalar_operator(_d, _op, getattr(operator, _d))[0])
