"""The registry of policies. A policy is data: one ``Policy(...)`` per module, built from literal
tables; the generic code that reads the tables lives in lattice.py and resolve.py."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace

from .. import dtypes as D
from ..kinds import IntDivision, PromotionKind, StoreRule, categories

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
    operands: str                  # operand rule in resolve.py: nep50 | torch | weak-lattice | paddle | array-api | pair-table
    promote: object                # lattice.Lattice or lattice.PairTable over dtype names
    dtypes: frozenset              # dtypes the framework has
    default_float: str
    weak_default: dict             # Python scalar kind (b i f c), or weak lattice node -> its default dtype
    int_check: str | None = None   # where a Python int must fit: "target" (the dtype it joins), "c10" (the same, but
                                   # [-max, max] for unsigned), "c10-exponent" (c10 for pow's exponent), an
                                   # int dtype name ("int64", "int32", "int64 or uint64"); None: it wraps;
                                   # a tuple: one of these per operand position
    weak_node: dict = field(default_factory=dict)    # weak-lattice: Python scalar kind -> lattice node
    weak_upcast: dict = field(default_factory=dict)  # nep50: (dtype, scalar kind) -> dtype, where a library differs
    canonical: dict = field(default_factory=dict)    # input/output canonicalization (JAX with x64 off)
    opmath: dict = field(default_factory=dict)       # dtype a folded scalar is kept in, by promoted dtype
    opmath_ops: frozenset | None = None  # the ops that keep it so (None: all); others cast it to the promoted dtype
    to_float: dict = field(default_factory=dict)     # INT_TO_FLOAT ops: promoted int dtype -> float dtype
    to_complex: dict = field(default_factory=dict)   # torch rule: float dtype meeting a complex scalar -> complex dtype
    refuses: dict = field(default_factory=dict)      # op -> dtype kinds the framework refuses for it
    refused_dtypes: dict = field(default_factory=dict)  # op -> promoted dtypes it has no kernel for
    accepts: dict = field(default_factory=dict)      # op -> dtype kinds, where the framework accepts more than ops.py
    check_array_kinds: bool = False  # accepts/refuses apply to each array operand (not to the promoted dtype)
    operand_refuses: dict = field(default_factory=dict)  # op -> kinds refused on any operand
    scalar_only_kernels: dict = field(default_factory=dict)  # op -> promoted kinds it computes only with a scalar second
    scalar_first_refused: frozenset = frozenset()     # ops whose function refuses a Python scalar first
    float_int_limit: dict = field(default_factory=dict)  # float dtype -> int dtype a Python int must fit (TypeError)
    negative_power_arrays_refused: bool = False  # int ** an array holding a negative int raises (NumPy)
    negative_int_refused: frozenset = frozenset()  # ops refusing a negative Python int second operand on ints (ValueError)
    float_check: frozenset = frozenset()  # dtypes a finite Python float must fit when converted to (c10 checked_convert)
    checked_operands: tuple | None = None  # operand positions the value checks apply to (None: all)
    flush_subnormals: bool = False  # the framework's CPU kernels flush subnormal floats to zero (XLA)
    ints_checked_first: bool = False  # the fixed int_check range runs before any dtype rule (argument parsing)
    scalars_infer: bool = False    # with no array operand, the first Python scalar's dtype comes from its value
                                   # (TF's convert_to_tensor: int32, else int64; float32 if it fits)
    op_rules: dict = field(default_factory=dict)     # op -> promotion kind, where the framework overrides ops.py
    op_overrides: dict = field(default_factory=dict) # op -> {field: value} where an op has its own rules
    to_float_inputs: bool = False  # INT_TO_FLOAT on array operands that are all int: each maps to float first
    unchecked_ops: frozenset = frozenset()          # ops that wrap an out-of-range Python int instead of raising
    bool_to: dict = field(default_factory=dict)      # op -> dtype bool operands compute in (no bool kernel)
    scalar_table: dict = field(default_factory=dict) # paddle: (tensor dtype, scalar kind) -> dtype
    scalar_kinds: dict = field(default_factory=dict) # array-api: Python scalar kind -> array kinds it may join
    fold_zero_dim: bool = True     # 0-d host arrays are folded into the kernel as by-value scalars
    exact_compare: bool = False    # comparisons with out-of-range Python ints are exact (NumPy)
    int_division: str = "numpy"    # integer division by zero: numpy (0), xla, raise
    source: str = ""               # where the rules come from (seed document / framework source)
    routes: dict = field(default_factory=dict)       # paddle: op -> (tensors, zero-dim, scalars): the code path each
                                                     # kind of operand takes to the kernel (see policies/paddle.py)
    nary: bool = False             # the framework promotes any number of operands together (np.result_type,
                                   # jnp.result_type, ...); False: two at a time only, n-ary result_type refused
    weak_arrays: dict = field(default_factory=dict)  # dtype -> weak lattice node of a weakly typed array of it
                                                     # (JAX weak types, TF WeakTensor); empty: no weak arrays
    all_weak_by_strong: bool = False  # JAX: when every operand is weak, the join of their strong dtypes gives the
                                      # result's kind (then its default dtype, weakly typed)
    out_rule: str = "same_kind"    # how a result is stored into an out= array (resolve.STORE_RULES)
    inplace_rule: str = "same_kind"  # ... into one of the op's own operands (x += y, out= an input)
    negative_shift_arrays_refused: bool = False  # a shift by an array holding a negative count raises (ValueError)

    def __post_init__(self):
        # why: a misspelt kind, category or rule raises at import instead of acting as a default
        for name, enum in (("int_division", IntDivision), ("out_rule", StoreRule), ("inplace_rule", StoreRule)):
            object.__setattr__(self, name, enum(getattr(self, name)))
        object.__setattr__(self, "op_rules", {op: PromotionKind(k) for op, k in self.op_rules.items()})
        for table in (self.refuses, self.accepts, self.operand_refuses, self.scalar_only_kernels):
            for kinds in table.values():
                categories(kinds)

    def int_range(self, target: D.DType, position: int = 0):
        """(lo, hi, name to report, exception) a Python int must lie in when it meets ``target``
        as operand ``position``, or None when any int is taken (and wraps)."""
        if target.name in self.float_int_limit:  # a library that converts ints through C long
            name = self.float_int_limit[target.name]
            return (*INT_BOUNDS[name], name, TypeError)
        int_check = self.int_check[position] if isinstance(self.int_check, tuple) else self.int_check
        if int_check != self.int_check:
            return replace(self, int_check=int_check).int_range(target)
        if int_check == "int64 and target":  # both: the int64 range, narrowed to an int target's
            lo, hi = INT_BOUNDS["int64"]
            if target.kind in "ui":
                lo, hi = max(lo, INT_BOUNDS[target.name][0]), min(hi, INT_BOUNDS[target.name][1])
            return lo, hi, target.name if target.kind in "ui" else "int64", OverflowError
        if self.int_check in ("c10", "c10-exponent") and target.kind in "fc":
            # c10::checked_convert into a half-precision type (pow's exponent, where into complex32)
            half = target.name in ("float16", "bfloat16") and self.int_check == "c10-exponent"
            if half or target.name == "complex32":
                limit = 65504 if target.name != "bfloat16" else 3.3895313892515355e38
                return -limit, limit, target.name, OverflowError
            return None
        if self.int_check in ("target", "c10", "c10-exponent"):
            if target.kind not in "ui":
                return None
            name = "int64" if self.int_check == "c10-exponent" and target.name == "uint64" else target.name
            lo, hi = INT_BOUNDS[name]
            if self.int_check != "target" and target.kind == "u" and name == target.name:
                lo = -hi  # c10::overflows lets a negative value wrap into an unsigned type
            return lo, hi, name, OverflowError
        if self.int_check is None:
            return None
        return (*INT_BOUNDS[self.int_check], self.int_check, OverflowError)

    def __repr__(self):
        return f"Policy({self.name!r})"


INT_BOUNDS = {d.name: ((-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.kind == "i" else (0, (1 << d.bits) - 1))
               for d in D.ALL if d.kind in "ui"}
INT_BOUNDS["int64 or uint64"] = (-(1 << 63), (1 << 64) - 1)  # c10::Scalar holds either

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
