"""What promotion reads and what it gives: an Operand (one argument as promotion sees it) and a
Plan (everything a backend needs to run an op, and nothing about arrays)."""
from __future__ import annotations

from dataclasses import dataclass

from ..core import dtypes as D
from ..core.kinds import IntDivision
from .limits import INT64_END

__all__ = ["Operand", "Plan", "PY_KIND_NAMES"]

# A Python scalar's kind letter -> the word messages use for it.
PY_KIND_NAMES = {"b": "bool", "i": "int", "f": "float", "c": "complex"}


@dataclass(frozen=True)
class Operand:
    """One argument as promotion sees it. ``category``: "array" | "zero-dim" | "scalar"."""
    dtype: D.DType | None      # None for a Python scalar
    category: str
    value: object = None       # the Python scalar (for value checks and folding)
    host: bool = True          # lives in host memory: a 0-d host array can be folded
    weak: bool = False         # a weakly typed array (a JAX weak type, a TF WeakTensor): promotes as a Python
                               # scalar of its kind does, where the policy has weak arrays

    @property
    def pykind(self):
        return D.PY_KINDS[type(self.value)] if self.category == "scalar" else None

    @property
    def kind(self):
        return self.pykind if self.category == "scalar" else self.dtype.kind

    @property
    def beyond_int64(self) -> bool:
        """A Python int from 2**63 on: a distinct kind of scalar in PyTorch (a uint64 c10::Scalar)."""
        return self.category == "scalar" and self.pykind == "i" and self.value >= INT64_END

    def signature(self):
        if self.dtype is None:
            kind = "int beyond int64" if self.beyond_int64 else PY_KIND_NAMES[self.pykind]
            return (kind, self.category, self.host)
        if self.weak:
            return (self.dtype.name, self.category, self.host, "weak")
        return (self.dtype.name, self.category, self.host)


@dataclass(frozen=True)
class Plan:
    policy: str
    op: str
    inputs: tuple        # dtype each operand is read in (a folded scalar: the dtype its value is cast to)
    folded: tuple        # operand i is a CPU scalar passed to the kernel by value
    compute: D.DType     # the dtype the expression is evaluated in
    result: D.DType
    promoted: D.DType = None  # the dtype the operands promote to (what a Python scalar converts to)
    flush_subnormals: bool = False  # subnormal float inputs and results are zero (XLA on the CPU)
    weak: bool = False   # JAX / TF: the result is weakly typed
    int_division: IntDivision = IntDivision.NUMPY   # what integer x // 0 does
    exact_exponent: bool = False  # power: the folded int exponent counts as it is (JAX's integer_pow: int8 x ** 300
                                  # is not x ** 44); the dispatcher folds an equivalent one (_equivalent_exponent)
    values: str = "numpy"  # whose values the kernel gives where frameworks differ (torch.sign(nan) is 0): core/ops.py

    @property
    def key(self):
        return (self.op, tuple(d.name for d in self.inputs), self.folded, self.compute.name,
                self.result.name, self.int_division, self.flush_subnormals, self.values)
