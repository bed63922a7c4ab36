"""The reduction node of the kernel IR: what a reduction kernel computes, read by both generators.

A ``Reduction`` is three small descriptions and one fixed order of combination:

    map       an ir.Kernel whose value is the term of one element (x read and cast to the
              accumulator; x * y inside a fused chain; (x - mean)**2 for var), over the element's
              operands, each read as the elementwise kernels read them
    combine   how two partial results meet: "add" / "multiply" (the op's expression in the
              accumulator dtype), "max" / "min" (NaN-propagating; the later of equal values wins, as
              NumPy's and PyTorch's reductions give -0.0 for max(0.0, -0.0)), "or" / "and",
              "argmax" / "argmin" (a value and its index: the first extreme, the first NaN)
    finish    an ir.Kernel of (acc, divisor) -> the stored value: a division by the count for
              mean / var, a sqrt for std, the cast to the result dtype; None: the accumulator cast
    scan      True for cumsum / cumprod: every prefix is stored, in order
    kept      a node of map (a fused chain's value, before its cast to the accumulator) whose value
              is also stored, per element, in an array of the operands' shape: a staged gp.fuse
              function that reduces a chain and uses it again reads it there instead of
              computing it twice (softmax's exp(x - max)); None for the others

The order of combination depends on the row length only (``ORDER``): a row of K elements is cut into
leaves of LEAF = 128 elements; a leaf is summed in LANES = 8 lanes (element k of the leaf into lane
k % 8, in order, each lane starting from the identity) and the lanes are combined as
((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)); the leaves are combined by a fixed binary tree, the one a
binary counter builds (leaf i joins its left neighbour's subtree when they form an aligned block of
2**j leaves; at the end the remaining blocks are combined from the right). An aligned group of
CHUNK = 2**4 leaves is therefore a complete subtree: threads and GPU blocks may each compute any
aligned groups of chunks and the result is the same bits. For max, min, or, and, argmax and argmin
(associative without rounding) the leaves are one sequential pass: any split gives the same answer.

The accumulator dtype is the plan's compute dtype (resolved by promotion/resolve.py; float32 for
float16 and bfloat16: torch's and JAX's accumulation, NumPy's pairwise blocks too); the result is
rounded once, at the end.
"""
from __future__ import annotations

import hashlib

from ..core import caches
from ..core import dtypes as D
from ..core.ops import op_named
from . import ir

__all__ = ["Reduction", "LEAF", "LANES", "CHUNK_LEAVES", "COMBINES", "TIES", "reduction_of", "identity_of", "stages_of",
           "tie_of", "fused"]

LEAF = 128
LANES = 8
CHUNK_LEAVES = 16          # a power of two: an aligned group of leaves is a complete subtree
STACK = 64                 # tree depth bound (2**64 leaves)
COMBINES = ("add", "multiply", "max", "min", "or", "and", "argmax", "argmin")
# max / min of equal values (0.0 and -0.0): "last" keeps the later one (NumPy's float32 / float64
# loops, PyTorch), "first" the earlier (NumPy's float16 loop), "signed" orders -0.0 below 0.0 (XLA)
TIES = ("last", "first", "signed")
_TIE_OF_VALUES = {("jax", "f"): "signed", ("numpy", "f2"): "first"}
# scans of float16 / bfloat16 that round their running value at each step (NumPy's add.accumulate
# loop in the narrow type, XLA's cumsum in the operand's type); torch's accumulates in float32
_NARROW_SCANS = ("numpy", "jax")
_POSITIVE_ZERO_SCANS = ("torch", "jax")   # torch.cumsum / jnp.cumsum of [-0.0, ...] start with 0.0
_RECIPROCAL_MEANS = ("jax",)   # jnp.mean's division by the count is a multiplication by its reciprocal in XLA
_WIDE_SCANS = ("torch",)   # at::cumsum accumulates float32 / complex64 in double (its acc_type on the CPU)
_SEQUENTIAL = ("max", "min", "or", "and", "argmax", "argmin")


class Reduction:
    """One reduction kernel (see the module docstring). Compares and hashes by ``text``."""

    __slots__ = ("map", "combine", "acc", "finish", "scan", "expr", "tie", "narrow", "start", "kept", "label", "text",
                 "digest", "_hash")

    def __init__(self, map_kernel: ir.Kernel, combine: str, finish: ir.Kernel | None = None, scan: bool = False,
                 label: str = "reduce", tie: str = "last", narrow=None, start: str = "neg", kept=None):
        if combine not in COMBINES:
            raise ValueError(f"unknown combine {combine!r}: one of {COMBINES}")
        if tie not in TIES:
            raise ValueError(f"unknown tie rule {tie!r}: one of {TIES}")
        self.map, self.combine, self.finish, self.scan, self.label = map_kernel, combine, finish, bool(scan), label
        self.acc = map_kernel.out
        # which of two equal values max / min keep (only -0.0 and 0.0 can tell): a real float only
        self.tie = tie if combine in ("max", "min") and self.acc.kind == "f" else "last"
        self.expr = _combine_expr(combine, self.acc)
        # a scan whose running value is rounded to a narrow float after each step (NumPy's and JAX's
        # float16 / bfloat16 cumsum), and which zero a float sum starts from ("neg": -0.0, so the
        # first prefix is the first element; "pos": +0.0, torch's and JAX's cumsum of -0.0 is 0.0)
        self.narrow = D.dtype(narrow) if narrow is not None and scan else None
        self.start = start if scan and combine == "add" and self.acc.kind in "fc" else "neg"
        if finish is not None and (finish.params[0].dtype is not self.acc or len(finish.params) != 2):
            raise ValueError("a finish kernel takes (acc, divisor) with acc of the accumulator's dtype")
        if kept is not None and (scan or kept not in map_kernel.steps()):
            raise ValueError("a kept value is a step of the map kernel of a reduction that is not a scan")
        self.kept = kept
        parts = [f"reduce {combine} [{self.acc.code}] {self.expr}{' scan' if scan else ''}"
                 f"{'' if self.tie == 'last' else ' ties ' + self.tie}"
                 f"{'' if self.narrow is None else ' rounded to ' + self.narrow.code}"
                 f"{'' if self.start == 'neg' else ' from +0'}"
                 f"{'' if kept is None else f' keeps step {map_kernel.steps().index(kept)} [{kept.dtype.code}]'}",
                 "map:", map_kernel.text]
        if finish is not None:
            parts += ["finish:", finish.text]
        self.text = "\n".join(parts)
        self.digest = hashlib.sha1(self.text.encode()).hexdigest()[:12]
        self._hash = hash(self.text)

    @property
    def params(self):
        return self.map.params

    @property
    def arrays(self):
        return self.map.arrays

    @property
    def out(self) -> D.DType:
        """The stored dtype."""
        if self.combine in ("argmax", "argmin"):
            return D.int64
        return self.finish.out if self.finish is not None else self.acc

    @property
    def sequential(self) -> bool:
        """Combined in one pass per leaf (no lanes): exact combines."""
        return self.combine in _SEQUENTIAL

    def __eq__(self, other):
        return isinstance(other, Reduction) and other.text == self.text

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"<gp reduction {self.label} {self.digest}:\n{self.text}>"


def _combine_expr(combine: str, acc: D.DType) -> str:
    if combine in ("add", "multiply"):
        return op_named(combine).expression(acc, acc)
    if combine in ("max", "argmax"):
        return op_named("maximum").expression(acc, acc)
    if combine in ("min", "argmin"):
        return op_named("minimum").expression(acc, acc)
    return "in0 | in1" if combine == "or" else "in0 & in1"


def identity_of(combine: str, acc: D.DType):
    """The value every lane starts from: -0.0 for a float sum (so a sum of -0.0 is -0.0), 1 for a
    product, False / True for or / and; None for max / min / arg (they start from the first element)."""
    if combine == "add":
        if acc.kind == "c":
            return complex(-0.0, -0.0)
        return -0.0 if acc.kind == "f" else (False if acc.kind == "b" else 0)
    if combine == "multiply":
        return complex(1.0, 0.0) if acc.kind == "c" else (1.0 if acc.kind == "f" else (True if acc.kind == "b" else 1))
    if combine == "or":
        return False
    if combine == "and":
        return True
    return None


def empty_of(combine: str, acc: D.DType):
    """The value of a reduction over no elements: the identity, but +0.0 for a float sum (NumPy's,
    torch's and JAX's sum of an empty array is 0.0; the lanes' -0.0 start is for sums of -0.0)."""
    if combine == "add" and acc.kind in "fc":
        return complex(0.0, 0.0) if acc.kind == "c" else 0.0
    return identity_of(combine, acc)


# ---------------------------------------------------------------------------------------------
# From a plan

_COMBINE_OF = {"sum": "add", "prod": "multiply", "cumsum": "add", "cumprod": "multiply", "mean": "add",
               "max": "max", "min": "min", "any": "or", "all": "and", "argmax": "argmax", "argmin": "argmin"}


def _finish(acc: D.DType, result: D.DType, divide: bool, sqrt: bool = False, reciprocal: bool = False) -> ir.Kernel | None:
    """(acc, divisor) -> the stored value: acc / divisor (``reciprocal``: acc * (1 / divisor), XLA's
    rewrite of a division by a constant, which jnp.mean and jnp.var meet), sqrt'ed for std."""
    if not divide:
        return None if acc is result else ir.Kernel([ir.param(0, acc), ir.param(1, D.float64, folded=True)],
                                                    ir.cast(ir.param(0, acc), result), label="finish")
    a, n = ir.param(0, acc), ir.param(1, D.float64, folded=True)
    if acc.kind in "fc":
        num, den, work = a, ir.cast(n, acc), acc
    else:   # an integer mean (Paddle keeps the dtype): the quotient in float64, truncated by the cast
        num, den, work = ir.cast(a, D.float64), n, D.float64
    if reciprocal and work.kind == "f":
        r = ir.apply("reciprocal", (den,), work, work, op_named("reciprocal").expression(work, work))
        v = ir.apply("multiply", (num, r), work, work, op_named("multiply").expression(work, work))
    else:
        div = op_named("true_divide")
        v = ir.apply("true_divide", (num, den), work, work, div.expression(work, work))
    if sqrt:
        v = ir.apply("sqrt", (v,), work, work, op_named("sqrt").expression(work, work))
    return ir.Kernel([a, n], ir.cast(v, result), label="finish")


_cache: dict = {}
caches.register(_cache.clear)


def reduction_of(plan, stage: str = "main") -> Reduction:
    """The Reduction of a resolved reduction plan, cached per (plan, stage); see _reduction_of."""
    key = (plan, stage)
    red = _cache.get(key)
    if red is None:
        red = _cache[key] = _reduction_of(plan, stage)
    return red


def _reduction_of(plan, stage: str = "main") -> Reduction:
    """The Reduction of a resolved reduction plan (promotion/resolve.py gave its dtypes):
    ``plan.compute`` is the accumulator, ``plan.result`` the stored dtype. var / std are two stages:
    "mean" (the mean, kept in the compute dtype) and "main" (the sum of squared deviations from it,
    operand 1, divided by the divisor); a var split in parts adds "m2" (that sum, undivided) and
    "m2_finish" (the main stage's division alone, over such sums)."""
    op, acc, result = plan.op, plan.compute, plan.result
    x = ir.param(0, plan.inputs[0])
    recip = getattr(plan, "values", "numpy") in _RECIPROCAL_MEANS
    if op in ("var", "std"):
        if stage == "mean":
            return Reduction(ir.Kernel([x], ir.cast(x, acc), label=f"{op}_mean"), "add", _finish(acc, acc, True,
                                                                                                  reciprocal=recip),
                             label=f"{op}_mean")
        mean = ir.param(1, acc)
        sub = op_named("subtract")
        d = ir.apply("subtract", (ir.cast(x, acc), mean), acc, acc, sub.expression(acc, acc))
        if acc.kind == "c":
            real = D.float64 if acc.code == "c16" else D.float32
            re = ir.apply("real", (d,), acc, real, op_named("real").expression(acc, real))
            im = ir.apply("imag", (d,), acc, real, op_named("imag").expression(acc, real))
            mul = op_named("multiply").expression(real, real)
            sq = ir.apply("add", (ir.apply("multiply", (re, re), real, real, mul),
                                  ir.apply("multiply", (im, im), real, real, mul)), real, real,
                          op_named("add").expression(real, real))
            sacc = real
        else:
            sq = ir.apply("multiply", (d, d), acc, acc, op_named("multiply").expression(acc, acc))
            sacc = acc
        if stage == "m2":   # the sum of squared deviations, undivided (a partial of a split var: integrations/dask_reduce)
            return Reduction(ir.Kernel([x, mean], sq, label=f"{op}_m2"), "add", None, label=f"{op}_m2")
        if stage == "m2_finish":   # the main stage's finish alone, over combined sums of squared deviations
            m2 = ir.param(0, sacc)
            return Reduction(ir.Kernel([m2], ir.cast(m2, sacc), label=f"{op}_m2_finish"), "add",
                             _finish(sacc, result, True, sqrt=(op == "std")), label=f"{op}_m2_finish")
        return Reduction(ir.Kernel([x, mean], sq, label=op), "add", _finish(sacc, result, True, sqrt=(op == "std")),
                         label=op)
    combine = _COMBINE_OF[op]
    if combine in ("or", "and"):
        value = ir.cast(x, D.bool_)
        return Reduction(ir.Kernel([x], value, label=op), combine, _finish(D.bool_, result, False), label=op)
    if combine in ("max", "min"):
        return Reduction(ir.Kernel([x], ir.read(x, acc, ir.rounds_inputs_through(plan)), label=op), combine,
                         _finish(acc, result, False), label=op, tie=tie_of(plan))
    if combine in ("argmax", "argmin"):
        return Reduction(ir.Kernel([x], ir.cast(x, acc), label=op), combine, None, label=op)
    via = ir.rounds_inputs_through(plan)
    value = ir.read(x, acc, via)
    scan = op in ("cumsum", "cumprod")
    values = getattr(plan, "values", "numpy")
    if scan and values in _WIDE_SCANS and acc.code in ("f4", "c8"):   # torch.cumsum of float32 runs in double
        acc = D.float64 if acc.code == "f4" else D.complex128
        value = ir.read(x, acc, via)
    narrow = plan.result if scan and plan.result.is_narrow_float and values in _NARROW_SCANS else None
    return Reduction(ir.Kernel([x], value, label=op), combine, _finish(acc, result, op == "mean", reciprocal=recip),
                     scan=scan, label=op, narrow=narrow, start="pos" if values in _POSITIVE_ZERO_SCANS else "neg")


def fused(map_kernel: ir.Kernel, plan, label: str = "fused", keep: bool = False) -> Reduction:
    """A reduction whose element term is a fused chain's value (``map_kernel``, already of the
    plan's input dtype): sum / prod / max / min / any / all / mean of it. ``keep``: the chain's
    value is also stored per element (``Reduction.kept``). Cached like reduction_of."""
    key = ("fused", map_kernel, plan, label, keep)
    red = _cache.get(key)
    if red is None:
        red = _cache[key] = _fused(map_kernel, plan, label, keep)
    return red


def _fused(map_kernel: ir.Kernel, plan, label: str, keep: bool) -> Reduction:
    op, acc, result = plan.op, plan.compute, plan.result
    combine = _COMBINE_OF[op]
    if combine in ("or", "and"):
        value, acc = ir.cast(map_kernel.value, D.bool_), D.bool_
    else:
        value = ir.read(map_kernel.value, acc, ir.rounds_inputs_through(plan))
    k = ir.Kernel(map_kernel.params, value, map_kernel.checks, label=label)
    recip = getattr(plan, "values", "numpy") in _RECIPROCAL_MEANS
    return Reduction(k, combine, _finish(acc, result, op == "mean", reciprocal=recip), label=label,
                     tie=tie_of(plan) if combine in ("max", "min") else "last", kept=map_kernel.value if keep else None)


def tie_of(plan) -> str:
    """The tie rule of a max / min plan: by the framework whose values the plan follows
    (``plan.values``, as core/ops.py's overrides choose expressions) and the dtype it reads."""
    values = getattr(plan, "values", "numpy")
    code = plan.inputs[0].code
    return _TIE_OF_VALUES.get((values, code)) or _TIE_OF_VALUES.get((values, plan.inputs[0].kind), "last")


def stages_of(op: str) -> tuple:
    """The stages a reduction op runs as, in order."""
    return ("mean", "main") if op in ("var", "std") else ("main",)
