"""Differential fuzzing against NumPy: seeded random calls through ``gp.<op>(..., policy="numpy")``
and ``np.<op>`` with the same arguments.

A case draws an op, two (three for where) operands - arrays of any dtype NumPy and ml_dtypes have,
in assorted layouts (contiguous, strided, reversed, transposed, broadcast, empty, 0-d) and Python
scalars - values mixing ordinary numbers with the dtype's specials, and sometimes an ``out=``
array (of the result dtype, another dtype, the other byte order, or an input itself). gpupromote
must give NumPy's dtype and values (bit for bit, the sign of zeros included; NaN for NaN; 1 ulp for
the transcendental ops), write ``out`` as NumPy does, or refuse when NumPy refuses, with an
exception of the same kind. Known differences are those of test_specials.KNOWN.

``GP_FUZZ_CASES`` (default 800; 2000 under GP_TEST_TIER=full) sets the number of cases and ``GP_FUZZ_SEED`` (default 0) the
seed. The drawn (op, dtypes, operand kinds) combinations come from a pool whose size grows with the
number of cases (each is a kernel to compile), so that the default run reuses a warm cache. Every
kernel stays loaded for the process's life (~4 MB each): run a very long sweep as several seeds of
20,000 cases rather than one process of 100,000 (which holds ~2,600 kernels, well over 10 GB).
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support import tier
from tests.engines.test_specials import differences, known

CASES = tier.count("GP_FUZZ_CASES", 800, 2000)
SEED = int(os.environ.get("GP_FUZZ_SEED", "0"))

DTYPES = [d.name for d in gp.core.dtypes.ALL if d.numpy is not None]
OPS = list(gp.OPS)
KINDS = ["array", "array", "array", "0d", "scalar"]
# ulps allowed against NumPy: on CPUs with AVX-512, NumPy computes float arctan2 and power with SVML
# (up to 4 ulp) and complex multiply with fused multiply-adds (1 ulp per part); the C library's
# functions are within 1 ulp (docs/deviations.md)
ULPS = {"arctan2": 4, "power": 4, "hypot": 1, "logaddexp": 1}
COMPLEX_ULPS = {"power": 64, "multiply": 1}   # complex power: exp(b log a) against the C library's cpow


@dataclass
class Case:
    index: int
    op: str
    args: tuple
    out: object = None      # None, an array, or the index of the argument used as out

    def __str__(self):
        def show(x):
            if isinstance(x, np.ndarray):
                return f"np.array({x.tolist()!r}, {x.dtype.str!r}){'' if x.flags.c_contiguous else ' (view)'}"
            return repr(x)
        out = "" if self.out is None else f", out={'args[%d]' % self.out if isinstance(self.out, int) else show(self.out)}"
        return f"case {self.index} (seed {SEED}): {self.op}({', '.join(show(a) for a in self.args)}{out})"


def _values(rng, dtype, n):
    d = gp.dtype(dtype)
    if d.kind == "b":
        return rng.random(n) < 0.5
    if d.kind in "ui":
        info = np.iinfo(d.numpy)
        special = np.array([0, 1, 2, 3, 7, info.max, info.min, info.max - 1, info.min + 1], dtype=object)
        if d.kind == "i":
            special = np.concatenate([special, [-1, -2, -7]])
        picks = np.where(rng.random(n) < 0.4, rng.choice(special, n),
                         rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True))
        bits = np.array([int(v) & ((1 << d.bits) - 1) for v in picks], dtype=np.uint64)   # two's complement
        return bits.astype(np.dtype(f"u{d.itemsize}")).view(d.numpy)
    fi = ml_dtypes.finfo(d.numpy if d.kind == "f" else (np.float32 if d.bits == 64 else np.float64))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.max), float(fi.min), float(fi.smallest_subnormal),
                        -float(fi.smallest_subnormal), float(fi.smallest_normal), 1.0, -1.0, 0.5, 2.0])
    ordinary = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    whole = rng.random(n) < 0.2
    ordinary[whole] = np.round(ordinary[whole])
    real = np.where(rng.random(n) < 0.3, rng.choice(special, n), ordinary)
    with np.errstate(all="ignore"):
        if d.kind == "c":
            imag = np.where(rng.random(n) < 0.3, rng.choice(special, n), rng.standard_normal(n))
            z = np.empty(n, d.numpy)
            z.real, z.imag = real, imag
            return z
        return real.astype(d.numpy)


def _scalar(rng, dtype):
    kind = gp.dtype(dtype).kind
    choice = rng.integers(0, 10)
    if kind == "b" or choice == 0:
        return bool(rng.integers(0, 2))
    if kind in "ui" or choice < 4:
        return int(rng.choice([0, 1, 2, -1, 3, 7, 100, 127, 128, 255, 256, 300, -129, 2**31, 2**40, 2**63 - 1, -2**63]))
    if kind == "c" and choice < 7:
        return complex(float(rng.standard_normal()), float(rng.choice([0.0, 1.5, -2.0, np.inf])))
    return float(rng.choice([0.0, -0.0, 1.5, -2.25, 1e-8, 3e38, 1e300, np.inf, -np.inf, np.nan, 0.1]))


def _array(rng, dtype, shape):
    """An array of ``shape`` in a random layout: contiguous, strided, reversed or transposed."""
    size = int(np.prod(shape))
    layout = rng.choice(["contiguous", "strided", "reversed", "transposed"])
    if layout == "strided":
        return _values(rng, dtype, size * 2).reshape(*shape[:-1], shape[-1] * 2)[..., ::2] if shape else \
            _values(rng, dtype, 1).reshape(())
    if layout == "reversed" and shape:
        return _values(rng, dtype, size).reshape(shape)[..., ::-1]
    if layout == "transposed" and len(shape) == 2:
        return _values(rng, dtype, size).reshape(shape[::-1]).T
    return _values(rng, dtype, size).reshape(shape)


def _shapes(rng, arity):
    """Shapes that broadcast together (sometimes not: NumPy's error is then the answer)."""
    n = int(rng.choice([0, 1, 3, 5, 8, 17]))
    pick = rng.integers(0, 8)
    if pick == 0:
        return [(n,)] * arity if rng.random() < 0.9 else [(n,), (n + 1,), (n,)][:arity]
    if pick == 1:
        return [(3, 1), (4,), (1, 4)][:arity]
    if pick == 2:
        return [(2, 3)] * arity
    return [(n,)] * arity


def _combinations(rng):
    """The pool of (op, dtypes, kinds) the cases draw from: a few per 40 cases."""
    size = 60 + CASES // 40
    pool = []
    for _ in range(size):
        op = str(rng.choice(OPS))
        arity = gp.OPS[op].arity
        dtypes = [str(rng.choice(DTYPES)) for _ in range(arity)]
        if op == "where":
            dtypes[0] = "bool"
        kinds = [str(rng.choice(KINDS)) for _ in range(arity)]
        if all(k == "scalar" for k in kinds):
            kinds[-1] = "array"
        pool.append((op, dtypes, kinds))
    return pool


def cases():
    rng = np.random.default_rng(SEED)
    pool = _combinations(rng)
    for index in range(CASES):
        op, dtypes, kinds = pool[rng.integers(0, len(pool))]
        shapes = _shapes(rng, len(dtypes))
        args = []
        for dtype, kind, shape in zip(dtypes, kinds, shapes):
            if kind == "scalar":
                args.append(_scalar(rng, dtype))
            elif kind == "0d":
                args.append(_values(rng, dtype, 1).reshape(()))
            else:
                args.append(_array(rng, dtype, shape))
        case = Case(index, op, tuple(args))
        if op != "where" and rng.random() < 0.25:
            case.out = _out(rng, case)
        yield case


def _out(rng, case):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = np.asarray(getattr(np, case.op)(*case.args))
    except Exception:  # noqa: BLE001 - NumPy refuses the call: no out to draw
        return None
    choice = rng.integers(0, 4)
    if choice == 0:
        for i, a in enumerate(case.args):
            if isinstance(a, np.ndarray) and a.shape == expected.shape and a.dtype == expected.dtype and a.size:
                return i   # in place, as x += y
    if choice == 1 and expected.dtype.kind in "fc":
        return np.zeros(expected.shape, expected.dtype.newbyteorder(">"))
    if choice == 2:
        return np.zeros(expected.shape, rng.choice([np.float64, np.int64, np.complex128, np.float32, np.int8]))
    return np.zeros(expected.shape, expected.dtype)


def _family(exc):
    for cls in (OverflowError, ZeroDivisionError, TypeError, ValueError, MemoryError):
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


def _run(module, case):
    args = [a.copy() if isinstance(a, np.ndarray) and isinstance(case.out, int) else a for a in case.args]
    kwargs = {}
    if isinstance(case.out, int):
        kwargs["out"] = args[case.out]
    elif case.out is not None:
        kwargs["out"] = case.out.copy()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        fn = getattr(module, case.op)
        result = fn(*args, policy="numpy", **kwargs) if module is gp else fn(*args, **kwargs)
    if "out" in kwargs:
        assert result is kwargs["out"], "the op must return its out= array"
    return np.asarray(result)


def _as(scalar, dtype):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(scalar).astype(dtype) if dtype.kind in "fcV" else np.asarray(scalar)
        except (OverflowError, TypeError, ValueError):
            return np.asarray(scalar)


def _ulps(case, dtype):
    return (COMPLEX_ULPS if dtype.kind == "c" else ULPS).get(case.op, 0)


def _finite_ordinary(x):
    """Complex power is compared on ordinary operands (no zero, subnormal, huge or non-finite part)."""
    v = np.asarray(x).astype(np.complex128)
    parts = np.stack([np.abs(v.real), np.abs(v.imag)])
    return (np.isfinite(parts) & ((parts == 0) | ((parts > 1e-30) & (parts < 1e15)))).all(axis=0)


def _known_refusal(case, expected, mine):
    """NumPy checks integer exponents element by element, so an empty base passes; gpupromote
    refuses a negative Python-int exponent while it resolves (docs/deviations.md)."""
    return (case.op == "power" and expected.size == 0 and isinstance(mine, ValueError)
            and type(case.args[1]) is int and case.args[1] < 0)


def check(case):
    """None when gpupromote agrees with NumPy on ``case``, else what differs."""
    try:
        expected = _run(np, case)
    except Exception as exc:  # noqa: BLE001 - NumPy's refusal is the expected answer
        try:
            got = _run(gp, case)
        except Exception as mine:  # noqa: BLE001
            if _family(mine) == _family(exc):
                return None
            return f"NumPy raises {type(exc).__name__} ({exc}), gpupromote {type(mine).__name__} ({mine})"
        return f"NumPy raises {type(exc).__name__} ({exc}); gpupromote returns {got.dtype}"
    try:
        got = _run(gp, case)
    except Exception as mine:  # noqa: BLE001
        if _known_refusal(case, expected, mine):
            return None
        return f"NumPy returns {expected.dtype}; gpupromote raises {type(mine).__name__}: {mine}"
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return f"gpupromote gives {got.dtype}{got.shape}, NumPy {expected.dtype}{expected.shape}"
    natural = np.asarray(_run(np, Case(case.index, case.op, case.args))).dtype if case.out is not None else got.dtype
    if natural != got.dtype and _ulps(case, natural):
        # ulps count in the dtype the op computed in, not in a wider out= it was cast into
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            got, expected = got.astype(natural), expected.astype(natural)
    bad = differences(got, expected, _ulps(case, natural))
    # the operands as the kernel sees them: a Python scalar in the result's dtype (1e-8 is 0 in float16)
    operands = [np.broadcast_to(np.asarray(a) if isinstance(a, np.ndarray) else _as(a, natural), bad.shape)
                for a in case.args[-2:]]
    dtype = gp.dtype(expected.dtype).name if expected.dtype.kind != "b" else "bool"
    promoted = max((gp.dtype(np.asarray(a).dtype) for a in case.args if isinstance(a, np.ndarray)),
                   key=lambda d: d.rank, default=None)
    for name in {dtype, getattr(promoted, "name", dtype)}:
        for allowed, _why in known("numpy", case.op, name):
            bad = bad & ~np.broadcast_to(allowed(*operands), bad.shape)
    if case.op == "power" and expected.dtype.kind == "c":
        bad = bad & _finite_ordinary(operands[0]) & _finite_ordinary(operands[1])
    if bad.any():
        i = np.flatnonzero(bad.reshape(-1))[:3]
        return (f"{int(bad.sum())} of {bad.size} values differ, e.g. gpupromote {got.reshape(-1)[i]!r}, "
                f"NumPy {expected.reshape(-1)[i]!r}")
    return None


def test_gpupromote_agrees_with_numpy_on_random_calls():
    failures = []
    for case in cases():
        problem = check(case)
        if problem is not None:
            failures.append(f"{case}\n    {problem}")
    assert not failures, f"{len(failures)} of {CASES} cases differ from NumPy:\n" + "\n".join(failures[:25])


@pytest.mark.parametrize("index", range(3))
def test_the_cases_are_reproducible(index):
    first = [str(c) for _, c in zip(range(50), cases())]
    assert first == [str(c) for _, c in zip(range(50), cases())]
