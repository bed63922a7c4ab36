"""The registry of policies. A policy is a small typed value: its framework's promotion table
or lattice, the dtypes it has, the default dtypes of values that bring none, the op promotion
kinds and op refusals where the framework differs from core/ops.py, the Python scalars its
functions or operators refuse (promotion/refusals.py), and its rule module
(gpupromote/promotion/rules/<framework>.py), which owns every quirk. One ``Policy(...)`` per variant,
built from literal tables in promotion/policies/<framework>.py."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ...core import dtypes as D
from ...core.kinds import PromotionKind, categories
from ..lattice import Lattice, PairTable
from ..refusals import NO_REFUSALS, ScalarRefusals
from ..rules import Rules

__all__ = ["Policy", "get_policy", "policy_names"]

# policy name -> module defining it (and the name of its Policy object there)
_MODULES = {
    "numpy": ("numpy2", "NUMPY"),
    "torch": ("pytorch", "TORCH"),
    "torch-f64": ("pytorch", "TORCH_F64"),
    "jax": ("jax_numpy", "JAX"),
    "jax-x64": ("jax_numpy", "JAX_X64"),
    "jax-strict": ("jax_numpy", "JAX_STRICT"),
    "jax-x64-strict": ("jax_numpy", "JAX_X64_STRICT"),
    "paddle": ("paddle", "PADDLE"),
    "tf-all": ("tf_rfc431", "TF_ALL"),
    "tf-safe": ("tf_rfc431", "TF_SAFE"),
    "tf-none": ("tf_rfc431", "TF_NONE"),
    "ascend": ("ascend_aclnn", "ASCEND"),
    "array-api": ("array_api", "ARRAY_API"),
}


@dataclass(frozen=True, eq=False)
class Policy:
    name: str
    framework: str                 # how errors name the framework: "NumPy", "PyTorch", ...
    emulates: str                  # framework and version, for docs and explain
    source: str                    # where the rules come from (seed document / framework source)
    promote: Lattice | PairTable   # the promotion table or lattice, over dtype names (and weak nodes)
    dtypes: frozenset              # the dtypes the framework has
    rules: Rules                   # the framework's rule module: operand rule, quirks, value checks
    default_float: str             # what integer true division and to-float ops give by default
    scalar_dtypes: dict            # Python scalar kind (b i f c) -> the dtype it becomes on its own
    kinds: dict = field(default_factory=dict)    # op -> PromotionKind, where the framework overrides core/ops.py
    accepts: dict = field(default_factory=dict)  # op -> dtype kinds its kernels take, where more than core/ops.py
    refuses: dict = field(default_factory=dict)  # op -> dtype kinds the framework refuses for it
    scalar_refusals: ScalarRefusals = NO_REFUSALS  # Python scalars a form of a call refuses (torch.maximum(x, 2.0))

    def __post_init__(self):
        # why: a misspelt kind or category raises here, at import, instead of acting as a default
        object.__setattr__(self, "kinds", {op: PromotionKind(k) for op, k in self.kinds.items()})
        for kinds in (*self.accepts.values(), *self.refuses.values()):
            categories(kinds)
        unknown = [d for d in (self.default_float, *self.scalar_dtypes.values()) if d not in D.BY_NAME]
        if unknown or set(self.scalar_dtypes) - set("bifc") or not isinstance(self.rules, Rules):
            raise ValueError(f"policy {self.name!r}: default dtypes {unknown} unknown, scalar kinds "
                             f"{sorted(self.scalar_dtypes)}, rules {self.rules!r}")

    def __repr__(self):
        return f"Policy({self.name!r})"


_loaded: dict[str, Policy] = {}


def get_policy(name) -> Policy:
    if isinstance(name, Policy):
        return name
    pol = _loaded.get(name)
    if pol is None:
        if name not in _MODULES:
            raise ValueError(f"unknown policy {name!r}: use one of {', '.join(_MODULES)}")
        module, attr = _MODULES[name]
        pol = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        _loaded[name] = pol
    return pol


def policy_names() -> list[str]:
    return list(_MODULES)
