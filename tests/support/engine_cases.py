"""The CUDA engine against the CPU engine: cases, values and comparison shared by two tiers.

* tests/gpu/test_gpu_engine.py runs them on a GPU with the real CuPy (marked ``gpu``);
* tests/hostcuda/test_hostcuda_sweep.py runs them on the host: the same generated CUDA sources, compiled
  with g++ behind the same launcher (tests/hostcuda, marked ``hostcuda``).

Both check the same things: for every policy x op x dtype pair x operand kind, the CUDA result
(device arrays in) must have the CPU engine's dtype (NumPy arrays in) and its values, bit for bit
(signed zeros included; any NaN matches any NaN: NaNs made by arithmetic differ between x86 and
CUDA), the math functions included: both engines run the owned math library (kernel/math).
Unary ops are cases (policy, op, dtype, "-", kind), clip (policy, "clip", x dtype, bounds dtype,
kind) with bounds of the kind's form. Operand kinds:

    array            both operands 1-d arrays (the contiguous, vectorized kernel)
    zero-dim-device  the second operand a 0-d device array: an operand, broadcast (strided kernel)
    zero-dim-host    the second operand a 0-d NumPy array: folded into the kernel by value
    scalar           the second operand a Python scalar of its dtype's kind: folded
    scalar-first     the first operand a Python scalar (non-commutative ops only)

Cases are deduplicated: two cases with the same CUDA plan, CPU plan and operand kind run the same
kernels on the same values. Tiers (GP_GPU_SWEEP / GP_HOSTCUDA_SWEEP):

    lean      a third of quick, chosen so that every (policy, op) and every (dtypes, kind) is kept
    quick     same-dtype pairs, kinds array and scalar, plus MIXED_NARROW (integers with narrow
              floats, where an integer is rounded through the narrow promoted float), kind array
    standard  same-dtype pairs x every kind, MIXED and MIXED_NARROW (both orders) x array / scalar /
              zero-dim-host, and every pair of the 18 dtypes for add
    full      every pair x every kind x every op (about 65,000 distinct cases)

KNOWN_GENERATOR_DIVERGENCES lists, by case, the differences the CUDA code generator is known to
have today: those cases are expected to differ (a strict xfail: one that starts to agree fails
until it is taken off the list), every other case must agree.
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import fnmatch
import multiprocessing
import os
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

import gpupromote as gp
from gpupromote.core import dtypes as D
from gpupromote.dispatch.api import plan_for, spec
from gpupromote.core.ops import OPS, UNARY_OPS
from gpupromote.dispatch.opfunctions import OP_FUNCTIONS
from gpupromote.promotion.policies import policy_names
from tests.support.tier import thin

N = 1031  # odd: a vectorized body and a scalar tail; several vectors per thread block

# Ops whose values may differ by a few ulps between the engines: none. Every math function is the
# owned library's on both (kernel/math), so every op is compared bit for bit.
TRANSCENDENTAL: set = set()
ULPS = {"narrow": 0, "float32": 0, "float64": 0, "complex64": 0, "complex128": 0}
ULPS_OF_ONE: set = set()
UNARY = [op for op in UNARY_OPS]
CLIP_BOUNDS = {"b": (False, True), "u": (1, 9), "i": (-3, 4), "f": (-1.5, 2.5), "c": (-1.5, 2.5)}
COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal", "logical_and",
               "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "hypot"}
KINDS = ("array", "zero-dim-device", "zero-dim-host", "scalar", "scalar-first")
MIXED = [("float16", "float32"), ("bfloat16", "float32"), ("int8", "float32"), ("uint8", "int8"),
         ("int32", "int64"), ("float32", "float64"), ("complex64", "float64"), ("bool", "int32"),
         ("float8_e4m3fn", "float32"), ("float8_e5m2", "float16"), ("uint64", "int64"), ("int16", "float16"),
         ("uint32", "bfloat16"), ("complex64", "complex128")]
# Integers with narrow floats: the policies that promote them to the narrow float (NumPy with
# ml_dtypes, JAX, PyTorch's float16 / bfloat16) round the integer through it before the op.
MIXED_NARROW = [("uint8", "float8_e4m3fn"), ("int8", "float8_e5m2"), ("int32", "float16"), ("int16", "bfloat16"),
                ("int64", "float16"), ("uint8", "bfloat16"), ("int32", "bfloat16"), ("uint16", "float16"),
                ("int64", "float8_e4m3fn")]
QUICK_UNARY_DTYPES = ["bool", "int8", "uint64", "float16", "bfloat16", "float8_e5m2", "float32", "float64", "complex64"]
NAMES = [d.name for d in D.ALL if d.name != "complex32"]  # complex32 has no CPU engine: tested on its own
SCALAR_OF_KIND = {"b": True, "u": 3, "i": 3, "f": 2.5, "c": 1.5 - 2j}


# ---------------------------------------------------------------------------------------------
# Values (deterministic, the same in every process)

_INTS = [0, 1, -1, 2, -2, 3, -3, 5, -7, 7, 100, -100, 127, -128, 2**15, 2**31 - 1, -2**31, 2**62, -2**63, 2**63 - 1]
_FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -1.5, 3.0, 0.1, -7.25, 100.0, 1e-3, 1e30, -1e30, np.inf, -np.inf,
           np.nan, 1e-40, 65504.0, 448.0, 0.5, 1.5, -2.5, 1e-8, 3.4e38, 5.9e-8, 2.0**-126, 0.33333334]
_COMPLEX = [0j, 1 + 2j, -3 + 0.5j, 2.5 - 1j, -1j, 1 + 0j, complex(np.inf, 1), complex(np.nan, 0),
            1e-3 + 1e3j, -2 - 2j, 0.5 + 0.5j, 3 + 0j]


def values(dtype, n=N, seed=0, role="any") -> np.ndarray:
    """``n`` values of ``dtype``: edge values repeated in a shuffled order, plus random ones.
    ``role``: "divisor" (no integer zero: the frameworks that raise would hide every value),
    "exponent" (integer exponents 0..7: negative ones raise under NumPy), "shift" (0..bits+1)."""
    d = D.dtype(dtype)
    rng = np.random.default_rng(seed * 7919 + d.rank)
    if d.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if d.kind in "ui":
        info = np.iinfo(d.numpy)
        if role == "exponent":
            return rng.integers(0, 8, n).astype(d.numpy)
        if role == "shift":
            return rng.integers(0, d.bits + 2, n).astype(d.numpy)
        picks = [v for v in _INTS if d.kind == "i" or v >= 0] + [int(info.max), int(info.min)]
        edge = np.array([v & ((1 << d.bits) - 1) for v in picks],  # wrap into the type, as a C cast
                        dtype=np.uint64).astype(np.dtype(f"u{d.itemsize}")).view(d.numpy)
        rand = rng.integers(info.min, info.max, n, dtype=d.numpy, endpoint=True)
        small = rng.integers(max(info.min, -20), 21, n).astype(d.numpy)
        out = np.where(rng.random(n) < 0.5, small, rand)
        slots = out[: len(edge) * 2: 2]
        slots[:] = edge[: len(slots)]
        if role == "divisor":
            out[out == 0] = 3
        return out
    if d.kind == "f":
        edge = np.array(_FLOATS, dtype=np.float64)
        rand = rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))
        out = np.where(rng.random(n) < 0.5, rand, rng.integers(-20, 21, n) / 4.0)
        slots = out[: len(edge) * 3: 3]
        slots[:] = edge[: len(slots)]
        with np.errstate(all="ignore"):
            return out.astype(d.numpy)
    with np.errstate(invalid="ignore"):  # why: 1j * inf has a nan real part, on purpose
        base = values("float64", n, seed + 1) + 1j * values("float64", n, seed + 2)
    slots = base[: len(_COMPLEX) * 3: 3]
    slots[:] = np.array(_COMPLEX)[: len(slots)]
    return base.astype(d.numpy)


# Floats around every integer type's edges (and beyond them: x86's "integer indefinite"), NaN, inf
_CAST_EDGES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0, -128.9, -129.0,
               255.9, 256.0, 32767.9, 32768.0, 65535.9, 65536.0, 2**31 - 1.0, 2.0**31, 2**31 + 0.5, -2.0**31,
               -2**31 - 1.0, 2**32 - 1.0, 2.0**32, -2.0**32, 2.0**53, 2.0**63, 2**63 - 1024.0, -2.0**63,
               -2**63 - 2048.0, 2.0**64, 2**64 - 2048.0, -2.0**64, 1e30, -1e30, 3e9, -3e9, 300.7, -300.7, 1e19]


def cast_values(dtype, n=N, seed=0) -> np.ndarray:
    """``values`` for astype's operand: for floats and complex, the edges of every integer type too,
    and magnitudes up to 1e25 (every integer type's range and beyond)."""
    d = D.dtype(dtype)
    if d.kind not in "fc":
        return values(dtype, n, seed)
    rng = np.random.default_rng(seed + 17 * d.rank)
    out = rng.standard_normal(n) * 10.0 ** rng.integers(0, 25, n)
    out[: len(_CAST_EDGES)] = _CAST_EDGES
    with np.errstate(all="ignore"):
        if d.kind == "c":
            return (out + 1j * rng.standard_normal(n)).astype(d.numpy)
        return out.astype(np.float32).astype(d.numpy) if d.itemsize < 4 else out.astype(d.numpy)


def _role(op, position):
    if position == 0 or op == "where":
        return "any"
    return {"floor_divide": "divisor", "remainder": "divisor", "fmod": "divisor", "power": "exponent",
            "left_shift": "shift", "right_shift": "shift"}.get(op, "any")


def _zero_dim(dtype, op, position):
    v = values(dtype, 8, 5, _role(op, position))
    return np.asarray(v[3])


def host_operands(case):
    """The operands of ``case`` for the CPU engine (NumPy arrays, 0-d arrays, Python scalars)."""
    policy, op, da, db, kind = case
    if op == "astype":
        return cast_values(da), D.dtype(db)
    if op in UNARY_OPS:
        return (values(da, N, 0) if kind == "array" else _zero_dim(da, op, 0),)
    if op == "clip":
        if kind == "scalar":
            return (values(da, N, 0),) + CLIP_BOUNDS[D.dtype(db).kind]
        if kind == "array":
            return values(da, N, 0), values(db, N, 1), values(db, N, 2)
        return values(da, N, 0), _zero_dim(db, op, 1), _zero_dim(db, op, 2)
    a = values(da, N, 0, _role(op, 0))
    b = values(db, N, 1, _role(op, 1))
    if kind in ("zero-dim-device", "zero-dim-host"):
        b = _zero_dim(db, op, 1)
    elif kind == "scalar":
        b = SCALAR_OF_KIND[D.dtype(db).kind]
    elif kind == "scalar-first":
        a = SCALAR_OF_KIND[D.dtype(da).kind]
    args = (a, b)
    if op == "where":
        args = (values("bool", N, 9),) + args
    return args


def to_device(x, cp):
    """A NumPy array on the device of CuPy module ``cp``: a CuPy array when that CuPy has its
    dtype, else a gp.Array (narrow floats stored as bit patterns)."""
    from gpupromote.engines.cuda.engine import storage_dtype
    d = D.dtype(x.dtype)
    if storage_dtype(d) == d.numpy:
        return cp.asarray(x)
    return gp.asarray(x, device="cuda")


def device_operands(case, cp):
    args = list(host_operands(case))
    kind = case[4]
    for i, x in enumerate(args):
        if isinstance(x, np.ndarray) and (x.ndim or kind == "zero-dim-device"):
            args[i] = to_device(x, cp)
    return tuple(args)


def to_host(r, cp=None):
    """(logical DType, NumPy array) of a result from either engine."""
    if isinstance(r, gp.Array):
        return r.dtype, np.asarray(r)
    if cp is not None and isinstance(r, cp.ndarray):
        return D.dtype(r.dtype), r.get()
    return D.dtype(np.asarray(r).dtype), np.asarray(r)


def quiet_call(op, args, policy):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return OP_FUNCTIONS[op](*args, policy=policy)


# ---------------------------------------------------------------------------------------------
# Enumeration

def _specs(case, device):
    policy, op, da, db, kind = case
    arr = lambda d: spec(d, 1, device)  # noqa: E731
    if op == "astype":
        return [arr(da), D.dtype(db)]
    if op in UNARY_OPS:
        return [arr(da) if kind == "array" else spec(da, 0, device)]
    if op == "clip":
        if kind == "scalar":
            return [arr(da), *CLIP_BOUNDS[D.dtype(db).kind]]
        bound = arr(db) if kind == "array" else spec(db, 0, "cpu" if kind == "zero-dim-host" else device)
        return [arr(da), bound, bound]
    if kind == "array":
        ops = [arr(da), arr(db)]
    elif kind == "zero-dim-device":
        ops = [arr(da), spec(db, 0, device)]
    elif kind == "zero-dim-host":
        ops = [arr(da), spec(db, 0, "cpu")]
    elif kind == "scalar":
        ops = [arr(da), SCALAR_OF_KIND[D.dtype(db).kind]]
    else:
        ops = [SCALAR_OF_KIND[D.dtype(da).kind], arr(db)]
    return ([spec("bool", 1, device)] + ops) if op == "where" else ops


def _pairs_and_kinds(op, tier):
    if op == "astype":   # quick: what needs a rule of its own (float and complex to integers and bool, and
        # the narrow floats); standard and full: every pair
        if tier != "quick":
            return [(a, b, "array") for a in NAMES for b in NAMES if a != b]
        wide = ("int32", "int64", "uint64", "float32", "float64")
        return [(a, b, "array") for a in NAMES for b in NAMES if a != b and
                (D.dtype(a).kind in "fc" and D.dtype(b).kind in "bui" or
                 D.dtype(a).is_narrow_float and b in wide or D.dtype(b).is_narrow_float and a in wide)]
    if op in UNARY_OPS:   # quick: one dtype of each code path (the exhaustive narrow tests cover the rest)
        if tier == "quick":
            return [(a, "-", "array") for a in QUICK_UNARY_DTYPES]
        return [(a, "-", k) for a in NAMES for k in ("array", "zero-dim-device")]
    if op == "clip":
        kinds = ("array", "scalar") if tier == "quick" else ("array", "scalar", "zero-dim-host", "zero-dim-device")
        pairs = [(a, a) for a in NAMES] + ([] if tier == "quick" else [(a, b) for x, y in MIXED for a, b in ((x, y), (y, x))])
        return [(a, b, k) for a, b in pairs for k in kinds]
    same = [(a, a) for a in NAMES]
    narrow = [(a, b) for x, y in MIXED_NARROW for a, b in ((x, y), (y, x))]
    if tier == "quick":
        return [(a, b, k) for a, b in same for k in ("array", "scalar")] + [(a, b, "array") for a, b in narrow]
    kinds = [k for k in KINDS if not (k == "scalar-first" and op in COMMUTATIVE)]
    if tier == "full":
        return [(a, b, k) for a in NAMES for b in NAMES for k in kinds]
    if tier != "standard":
        raise ValueError(f"unknown sweep tier {tier!r}: quick, standard or full")
    out = [(a, b, k) for a, b in same for k in kinds]
    out += [(a, b, k) for x, y in MIXED for a, b in ((x, y), (y, x)) for k in ("array", "scalar", "zero-dim-host")]
    out += [(a, b, k) for a, b in narrow for k in ("array", "scalar", "zero-dim-host")]
    if op == "add":
        out += [(a, b, "array") for a in NAMES for b in NAMES if a != b]
    return out


def _has_framework_values(op, policy):
    """Whether ``op`` has a kernel variant for ``policy``'s framework's values (core/ops.py's
    "torch.f", "jax.c" ... selectors)."""
    return policy in ("torch", "jax") and any(when.startswith(policy + ".") for when, _ in UNARY_OPS[op].overrides)


def enumerate_cases(tier):
    """(unique cases, number enumerated): each case (policy, op, da, db, kind) with its CUDA plan.
    Tier ``lean``: a third of the quick tier's cases of each (policy, op) group, each (dtypes, kind)
    column in a third of the groups (tests/support/tier.py: what `make test` runs on the host tier)."""
    if tier == "lean":
        cases, total = enumerate_cases("quick")
        return thin(cases, 3, row=lambda cp: cp[0][:2], column=lambda cp: cp[0][2:]), total
    seen, cases, total = set(), [], 0
    for policy in policy_names():
        for op in (*OPS, *UNARY, "clip", "astype"):
            if op == "astype" and policy != "numpy":
                continue   # astype's values are NumPy's under every policy: one policy runs them
            if op in UNARY_OPS and tier == "quick" and policy != "numpy" and not _has_framework_values(op, policy):
                continue   # quick: a unary op under NumPy's values, and under the framework whose values it has
            for da, db, kind in dict.fromkeys(_pairs_and_kinds(op, tier)):
                case = (policy, op, da, db, kind)
                try:
                    gplan = plan_for(op, _specs(case, "cuda"), policy=policy)
                    cplan = plan_for(op, _specs(case, "cpu"), policy=policy)
                except (TypeError, ValueError, OverflowError):
                    continue  # the policy refuses: both engines raise the same error (tested elsewhere)
                total += 1
                key = (gplan.key, cplan.key, kind, da, db)
                if key not in seen:
                    seen.add(key)
                    cases.append((case, gplan))
    return cases, total


def kernel_items(cases):
    """The (plan, variant) pairs the cases launch, for cuda_cupy.precompile: the contiguous
    vectorized kernel of each plan, and the 1-d strided one where an operand is a 0-d array."""
    from gpupromote.engines.cuda import source as S
    items = []
    for case, gplan in cases:
        if S.unsupported(gplan):
            continue
        items.append((gplan, ("contig", S.vector_width(gplan))))
        if case[4] == "zero-dim-device":
            items.append((gplan, ("strided", 1, 32)))
    return items


def cpu_refs(cases):
    """Worker: CPU engine results for ``cases``: ("ok", dtype name, array) or ("raise", type, msg)."""
    out = []
    for case in cases:
        try:
            dt, arr = to_host(quiet_call(case[1], host_operands(case), case[0]))
            out.append(("ok", dt.name, arr))
        except Exception as exc:  # noqa: BLE001 - the CUDA engine must raise the same type
            out.append(("raise", type(exc).__name__, str(exc)[:300]))
    return out


def run_pool(fn, chunks, workers):
    if workers <= 1 or len(chunks) <= 1:
        return [fn(c) for c in chunks]
    os.environ["GP_SWEEP_WORKER"] = "1"  # inherited by the spawned workers: they never init CUDA
    try:
        ctx = multiprocessing.get_context("spawn")  # why: forking a process with CUDA state is unsafe
        with cf.ProcessPoolExecutor(workers, mp_context=ctx) as ex:
            return list(ex.map(fn, chunks))
    finally:
        os.environ.pop("GP_SWEEP_WORKER", None)


# ---------------------------------------------------------------------------------------------
# Known differences of the CUDA code generator (one list for both tiers)

@dataclass(frozen=True)
class Divergence:
    """Cases (fnmatch patterns per field; ``a|b`` alternatives) where the CUDA engine is known to
    differ from the CPU engine because of the CUDA code generator, and why. ``mode``: the host
    tier's sanitizer mode the difference shows in ("undefined": only as undefined behaviour)."""
    cause: str
    policy: str
    op: str
    a: str
    b: str
    kind: str = "*"
    mode: str = "*"
    when: Callable | None = None  # and only the cases whose values trigger it: when(case) -> bool

    def matches(self, case, mode="*") -> bool:
        fields = (*case, mode)
        patterns = (self.policy, self.op, self.a, self.b, self.kind, self.mode)
        return all(any(fnmatch.fnmatchcase(str(value), p) for p in pattern.split("|"))
                   for value, pattern in zip(fields, patterns)) and (self.when is None or self.when(case))


# Note: read off the host tier's quick and standard sweeps (and the quick sweep under
# GP_HOSTCUDA_SANITIZE=undefined); every listed case differs today. Take an entry off when the
# generator is fixed: its cases then agree, and their strict xfails fail until it is gone.
#          cause             policies   ops        a (first operand)  b  kind [mode]
KNOWN_GENERATOR_DIVERGENCES: list[Divergence] = [
]


def known_divergence(case, mode="alignment") -> Divergence | None:
    """The entry of KNOWN_GENERATOR_DIVERGENCES that ``case`` (policy, op, a, b, kind) matches when
    run under ``mode`` (the GPU tier: "alignment", what the device faults on), or None."""
    return next((d for d in KNOWN_GENERATOR_DIVERGENCES if d.matches(case, mode)), None)


# ---------------------------------------------------------------------------------------------
# Comparison

def _ordered(bits, width):
    b = bits.astype(np.uint64)
    sign = np.uint64(1 << (width - 1))
    mag = (b & (sign - np.uint64(1))).astype(np.int64)
    return np.where((b & sign) != 0, -mag, mag)


def _bits(x):
    return np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))


def _ulps(x, y):
    """Elementwise ulp distance of two float arrays of one dtype; NaN vs NaN is 0, NaN vs a
    number is huge; +0 and -0 are 0 apart (compare checks signed zeros separately)."""
    width = x.dtype.itemsize * 8
    d = np.abs(_ordered(_bits(x), width) - _ordered(_bits(y), width))
    xn, yn = np.isnan(x.astype(np.float64)), np.isnan(y.astype(np.float64))
    return np.where(xn & yn, 0, np.where(xn | yn, 2**62, d))


def _zero_sign_differs(x, y):
    """Where x and y are zeros of opposite sign (every format here is sign-magnitude)."""
    width = x.dtype.itemsize * 8
    bx, by = _bits(x).astype(np.uint64), _bits(y).astype(np.uint64)
    sign = np.uint64(1 << (width - 1))
    zeros = ((bx & ~sign) == 0) & ((by & ~sign) == 0)
    return zeros & (bx != by)


def _within_ulps_of_one(got, want, limit):
    """(got, want) with got replaced by want where they differ by at most ``limit`` ulps of
    max(|want|, 1) (see ULPS_OF_ONE); what is left apart is reported in the usual ulps."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    eps = float(ml_dtypes.finfo(want.dtype).eps)
    with np.errstate(invalid="ignore"):
        close = np.abs(g - w) <= limit * eps * np.maximum(np.abs(w), 1.0)
    return np.where(close, want, got), want


def compare(got, want, op):
    """(ok, max ulp, message). Exact ops: every bit, signed zeros included (any NaN matches any
    NaN); transcendental ops: within ULPS."""
    (gd, g), (wd, w) = got, want
    if gd != wd:
        return False, 0, f"dtype {gd.name} != CPU {wd.name}"
    if g.shape != w.shape:
        return False, 0, f"shape {g.shape} != CPU {w.shape}"
    if wd.kind in "bui":
        bad = g != w
        return not bad.any(), 0, f"{int(bad.sum())} values differ, e.g. {g[bad][:4]} vs {w[bad][:4]}"
    parts = [(g.real, w.real), (g.imag, w.imag)] if wd.kind == "c" else [(g, w)]
    limit = 0
    if op in TRANSCENDENTAL:
        limit = ULPS["narrow"] if wd.itemsize <= 2 and wd.kind == "f" else ULPS.get(wd.name, 1)
    if op in ULPS_OF_ONE:
        parts = [_within_ulps_of_one(a, b, limit) for a, b in parts]
    dist = max(int(_ulps(a, b).max(initial=0)) for a, b in parts)
    if dist > limit:
        a, b = parts[0] if int(_ulps(*parts[0]).max(initial=0)) > limit else parts[1]
        far = np.flatnonzero(_ulps(a, b) > limit)[:4]
        return False, dist, f"{dist} ulp apart (limit {limit}), e.g. at {far.tolist()}: {a[far]} vs CPU {b[far]}"
    if limit == 0:
        for part, (a, b) in zip(("real part", "imaginary part") if wd.kind == "c" else ("value",), parts):
            signs = _zero_sign_differs(a, b)
            if signs.any():
                at = np.flatnonzero(signs)[:4]
                return False, 0, (f"{int(signs.sum())} zeros of the other sign ({part}), e.g. at {at.tolist()}: "
                                  f"{a[at]} vs CPU {b[at]}")
    return True, dist, ""


def bit_identical(got, want) -> bool:
    """Whether two results agree in every bit (NaNs in any payload count as equal)."""
    (gd, g), (wd, w) = got, want
    if gd != wd or g.shape != w.shape:
        return False
    if wd.kind in "bui":
        return bool(np.array_equal(g, w))
    parts = [(g.real, w.real), (g.imag, w.imag)] if wd.kind == "c" else [(g, w)]
    return all(not (_ulps(a, b).any() or _zero_sign_differs(a, b).any()) for a, b in parts)


# ---------------------------------------------------------------------------------------------
# The sweep

class Sweep:
    """The cases of a tier with their CPU references, computed once per session, and the CUDA
    kernels they need compiled (through ``precompile``, the engine's cuda_cupy.precompile)."""

    def __init__(self, tier, workers, precompile, select=None, mode="alignment"):
        """``select(case) -> bool`` keeps a subset of the tier; ``mode`` names the conditions the
        cases run under (the host tier's sanitizer mode), for KNOWN_GENERATOR_DIVERGENCES."""
        self.tier, self.workers, self.mode = tier, workers, mode
        t0 = time.perf_counter()
        cases, self.enumerated = enumerate_cases(tier)
        if select is not None:
            cases = [(c, p) for c, p in cases if select(c)]
        self.cases = [c for c, _ in cases]
        t1 = time.perf_counter()
        # CPU references: chunks grouped by op so a worker reuses the kernels it compiled
        by_op = collections.defaultdict(list)
        for c in self.cases:
            by_op[c[1]].append(c)
        chunks = [v[i:i + 200] for v in by_op.values() for i in range(0, len(v), 200)]
        refs = run_pool(cpu_refs, chunks, workers)
        self.ref = {c: r for chunk, rs in zip(chunks, refs) for c, r in zip(chunk, rs)}
        t2 = time.perf_counter()
        self.kernels = precompile(kernel_items(cases))
        t3 = time.perf_counter()
        self.by_group = collections.defaultdict(list)
        for c in self.cases:
            if known_divergence(c, mode) is None:
                self.by_group[(c[0], c[1])].append(c)
        self.timings = {"enumerate_s": t1 - t0, "cpu_references_s": t2 - t1, "cuda_compile_s": t3 - t2}
        self.max_ulps = collections.defaultdict(int)
        self.failures = []
        self.checked = 0
        self.cpu_unsupported = 0
        self.not_bit_identical = collections.Counter()  # within tolerance, by op

    def check(self, case, cp):
        """None when the CUDA engine agrees with the CPU engine on ``case``, else what differs."""
        ref = self.ref[case]
        try:
            got = quiet_call(case[1], device_operands(case, cp), case[0])
        except Exception as exc:  # noqa: BLE001
            if ref[0] == "raise" and ref[1] in [k.__name__ for k in type(exc).__mro__]:
                return None  # the same error (UnsupportedPlan is a TypeError, like the CPU engine's)
            return f"{case}: CUDA raised {type(exc).__name__}: {exc}" + (
                f"; CPU gave {ref[1]}" if ref[0] == "ok" else f"; CPU raised {ref[1]}")
        if ref[0] == "raise":
            if ref[1] in ("TypingError", "NotImplementedError", "LoweringError") or "CPU engine has no kernel" in ref[2]:
                self.cpu_unsupported += 1  # the CPU engine lacks this kernel: nothing to compare
                return None
            return f"{case}: CPU raised {ref[1]} ({ref[2]}), CUDA returned {to_host(got, cp)[0].name}"
        host, want = to_host(got, cp), (D.dtype(ref[1]), ref[2])
        ok, dist, msg = compare(host, want, case[1])
        self.max_ulps[case[1]] = max(self.max_ulps[case[1]], dist)
        self.checked += 1
        if ok and not bit_identical(host, want):
            self.not_bit_identical[case[1]] += 1
        return None if ok else f"{case}: {msg}"

    def report(self) -> dict:
        return {"tier": self.tier, "enumerated": self.enumerated, "unique_cases": len(self.cases),
                "kernels_precompiled": self.kernels, "checked": self.checked,
                "cpu_unsupported": self.cpu_unsupported, "timings": self.timings,
                "max_ulps": dict(self.max_ulps), "within_tolerance_not_bit_identical": dict(self.not_bit_identical),
                "known_divergences": sum(1 for c in self.cases if known_divergence(c, self.mode) is not None),
                "failures": self.failures}


# astype runs under NumPy's values alone (enumerate_cases): its cases form one group
GROUPS = [(p, op) for p in policy_names() for op in (*OPS, *UNARY, "clip")] + [("numpy", "astype")]
