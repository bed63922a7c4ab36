"""Reductions on the CPU engine (issue 24): the same bits on any thread count, NumPy's pairwise
accuracy at least, the frameworks' recorded values where they are exact, and the API (axis,
keepdims, dtype=, ddof, methods).

The full dtype x size x axis sweep and every record run with GP_FULL_REDUCE=1 or GP_TEST_TIER=full (each
reduction kernel is one Numba compile); the default set keeps to a few seconds of compiles on two cores.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import reduce as cpu_reduce
from tests.support import tier

FULL = os.environ.get("GP_FULL_REDUCE") == "1" or tier.FULL
OBSERVED = Path(__file__).resolve().parents[1] / "observed"


def _np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2") else np.dtype(name)


def _bits(a):
    a = np.ascontiguousarray(np.asarray(a))
    return a.tobytes()


@pytest.fixture
def split_small(monkeypatch):
    """Threads take even small calls (so 4097 elements already split over 8 threads)."""
    monkeypatch.setattr(cpu_reduce, "_MIN_PER_THREAD", 64)


# ---------------------------------------------------------------------------------------------
# Deterministic by construction

OPS = ["sum", "mean", "var", "std", "cumsum", "prod"]
DTYPES = ["float32", "float16", "bfloat16", "float64"]
SIZES = [1, 7, 4097, 65537, 10**6]
CASES = ([(op, dt, n) for op in OPS for dt in DTYPES for n in SIZES] if FULL else
         [(op, "float32", n) for op in OPS for n in SIZES] + [(op, "bfloat16", n) for op in ("sum", "var") for n in (7, 65537)]
         + [("sum", dt, n) for dt in ("float16", "float64") for n in (4097, 10**6)])


@pytest.mark.parametrize("op, dtype, n", CASES, ids=[f"{o}-{d}-{n}" for o, d, n in CASES])
def test_same_bits_for_1_2_3_and_8_threads(op, dtype, n, split_small):
    x = (np.random.default_rng(n).standard_normal(n) * (0.01 if op == "prod" else 1) + (1 if op == "prod" else 0))
    x = x.astype(_np_dtype(dtype))
    fn = getattr(gp, op)
    got = {}
    for threads in (1, 2, 3, 8):
        with gp.num_threads(threads):
            got[threads] = _bits(fn(x))
    assert len(set(got.values())) == 1, f"{op} {dtype} N={n}: the result depends on the thread count"


SHAPES = [((64, 300), 0), ((64, 300), 1), ((64, 300), None), ((5, 40, 33), (0, 2)), ((5, 40, 33), 1),
          ((5, 40, 33), -1), ((3, 4097, 2), 1)]


@pytest.mark.parametrize("shape, axis", SHAPES, ids=[f"{s}-{a}" for s, a in SHAPES])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "prod"] if FULL else ["sum", "var"])
def test_axes_same_bits_on_any_thread_count_and_close_to_numpy(op, shape, axis, split_small):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    if op == "prod":
        x = 1 + x / 100
    fn = getattr(gp, op)
    got = {}
    for threads in (1, 2, 3, 8):
        with gp.num_threads(threads):
            got[threads] = fn(x, axis=axis, policy="numpy")
    assert len({_bits(g) for g in got.values()}) == 1
    want = getattr(np, op)(x.astype(np.float64), axis=axis)
    np.testing.assert_allclose(got[1], want, rtol=2e-5, atol=2e-5)
    assert got[1].shape == np.shape(want) and got[1].dtype == np.float32


def test_a_row_split_over_threads_is_the_row_whole(split_small):
    """The long-row path (chunk nodes over threads, then the tree above them) against one thread's
    rows path, on sizes around chunk and leaf boundaries."""
    for n in (2047, 2048, 2049, 16 * 2048, 16 * 2048 + 5, 100_003):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        with gp.num_threads(1):
            one = gp.sum(x)
        with gp.num_threads(5):
            five = gp.sum(x)
        assert _bits(one) == _bits(five), n


def test_float32_sum_of_ten_million_normals_is_within_1e6_of_fsum():
    x = np.random.default_rng(2024).standard_normal(10**7).astype(np.float32)
    exact = math.fsum(x.astype(np.float64).tolist())
    got = float(gp.sum(x))
    assert abs(got - exact) <= 1e-6 * abs(exact)
    assert abs(got - exact) <= max(abs(float(np.sum(x)) - exact), 1e-6 * abs(exact))


def test_narrow_floats_accumulate_in_float32():
    x = np.full(4096, 1.0, ml_dtypes.bfloat16)   # bfloat16 alone stops counting at 256
    assert float(gp.sum(x, policy="torch")) == 4096.0
    assert gp.sum(x, policy="torch").dtype == x.dtype
    h = np.full(5000, 1.0, np.float16)
    assert float(gp.sum(h, policy="jax")) == 5000.0


# ---------------------------------------------------------------------------------------------
# Values the frameworks recorded, where they are exact

_POLICY = {("numpy", "default"): "numpy", ("torch", "f32"): "torch", ("jax", "x32"): "jax", ("jax", "x64"): "jax-x64"}
_EXACT = {"max", "min", "any", "all", "argmax", "argmin", "sum", "prod", "cumsum", "cumprod"}
_QUICK_DTYPES = {"bool", "int8", "float32"}


def _records():
    out = []
    for name in ("unary-values.jsonl.gz", "unary-values-extra.jsonl.gz"):
        with gzip.open(OBSERVED / name, "rt") as f:
            for line in f:
                r = json.loads(line)
                if r.get("family") != "reduction" or r.get("error") or r["op"] not in _EXACT:
                    continue
                policy = _POLICY.get((r["fw"], r["config"]))
                dt = r["a"]["dtype"]
                if policy is None or "value" not in r["a"] or dt.startswith(("complex", "float8")):
                    continue
                if not FULL and policy == "jax-x64":
                    continue   # (its kernels are NumPy's and JAX's; the full sweep has it)
                if r["op"] in ("sum", "prod") and dt[0] not in "biu":
                    continue   # integer sums and products are exact; float ones are order-dependent
                scan = r["op"] in ("cumsum", "cumprod")   # sequential: exact, narrow rounding included
                if scan and dt[0] not in "biu" and policy.startswith("jax"):
                    continue   # XLA's float cumsum is no sequential pass (its association is its own)
                if not FULL and dt not in _QUICK_DTYPES and not (dt == "float16" and ("zero" in r["case"] or scan)):
                    continue   # (float16's own tie rule and its scans' rounding stay)
                out.append((policy, r))
    return out


# lean tier: each reduction on half its (policy, dtype) cells (tests/support/tier.py)
RECORDS = _records() if FULL else tier.thin(_records(), 2, row=lambda pr: pr[1]["op"],
                                            column=lambda pr: (pr[0], pr[1]["a"]["dtype"]))


def _parse(text, dtype):
    if dtype == "bool":
        return text == "True"
    if dtype[0] in "iu":
        return int(text)
    return float(text)


@pytest.mark.parametrize("policy, record", RECORDS, ids=[f"{p}-{r['case']}" for p, r in RECORDS])
def test_recorded_values(policy, record):
    dt = record["a"]["dtype"]
    x = np.array([_parse(v, dt) for v in record["a"]["value"]], dtype=_np_dtype(dt))
    got = getattr(gp, record["op"])(x, policy=policy)
    assert str(np.asarray(got).dtype) == record["result"] or gp.result_type(gp.spec(dt), op=record["op"],
                                                                           policy=policy).name == record["result"]
    got = np.atleast_1d(np.asarray(got))
    want_values = record["values"]
    assert len(got) == len(want_values)
    for g, w in zip(got, want_values):
        if record["result"] in ("bool",):
            assert bool(g) == (w == "True")
        elif record["result"][0] in "iu":
            assert int(g) == int(w), f"{record['case']}: {got} vs {want_values}"
        else:
            g, w = float(g), float(w)
            assert (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w)), \
                f"{record['case']} {record['a']['value']}: gp {got} vs {want_values}"


# ---------------------------------------------------------------------------------------------
# The API

def test_keepdims_dtype_ddof_and_methods():
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    assert gp.sum(x, axis=(0, 2), keepdims=True).shape == (1, 3, 1)
    assert gp.sum(x, policy="numpy").dtype == np.int64
    assert gp.sum(x, policy="jax").dtype == np.int32
    assert gp.sum(x, dtype="float32").dtype == np.float32
    f = np.array([1.0, 2.0, 3.0, 4.0])
    assert float(gp.var(f, policy="numpy")) == np.var(f)
    assert float(gp.var(f, policy="torch")) == np.var(f, ddof=1)
    assert float(gp.std(f, ddof=1, policy="numpy")) == np.std(f, ddof=1)
    a = gp.asarray(f)
    assert isinstance(a.sum(), gp.Array) and float(a.mean().numpy()) == 2.5
    assert int(np.asarray(gp.argmax(np.array([1, 3, 3, 2]))) ) == 1
    np.testing.assert_array_equal(gp.cumsum(x, axis=1), np.cumsum(x, axis=1))
    with pytest.raises(gp.PromotionError):
        gp.mean(np.arange(3), policy="torch")   # torch.mean refuses integers
    with pytest.raises(ValueError):
        gp.max(np.zeros(0, np.float32))
    assert float(gp.sum(np.zeros(0, np.float32))) == 0.0


@pytest.mark.parametrize("policy, dtype, want_sign", [("numpy", "float32", -1.0), ("numpy", "float16", 1.0),
                                                      ("jax", "float32", 1.0), ("torch", "float32", -1.0)])
def test_long_rows_keep_the_tie_rule_of_zeros_and_the_first_nan(policy, dtype, want_sign):
    """max / min of long rows (the eight-lane pass) give the sequential pass's zero and NaN."""
    x = -np.abs(np.random.default_rng(5).standard_normal((3, 1000))).astype(dtype) - 1
    x[:, 100], x[:, 700] = 0.0, -0.0            # max is a zero: +0.0 first, -0.0 last
    got = gp.max(x, axis=1, policy=policy)
    assert all(math.copysign(1, float(v)) == want_sign and float(v) == 0 for v in got)
    x[1, 500] = np.nan
    got = gp.max(x, axis=1, policy=policy)
    assert math.isnan(float(got[1])) and float(got[0]) == 0
    y = np.random.default_rng(6).standard_normal((4, 999)).astype(dtype)
    np.testing.assert_array_equal(gp.min(y, axis=1, policy=policy), y.min(axis=1))


def test_jax_mean_multiplies_by_the_reciprocal_of_the_count():
    """jnp.mean([255, 255, 1] uint8) is 0x432a5556 (511 * float32(1/3)); np.mean's 511 / 3 rounds to ...55."""
    x = np.array([255, 255, 1], np.uint8)
    assert np.asarray(gp.mean(x, policy="jax")).view(np.uint32) == 0x432a5556
    assert np.asarray(gp.mean(x.astype(np.float32), policy="numpy")).view(np.uint32) == 0x432a5555


@pytest.mark.skipif(not FULL, reason="every recorded reduction value (about 150 kernels): GP_FULL_REDUCE=1")
def test_every_recorded_value_floor():
    """All recorded reduction values (floats too, whose order is each framework's own): at least
    97.5% bit for bit (2631 of 2690 when this was written; the rest are order-exposing 'accum' cases,
    XLA's float cumsum and JAX's integer means of 64-bit values)."""
    agree = total = 0
    for name in ("unary-values.jsonl.gz", "unary-values-extra.jsonl.gz"):
        with gzip.open(OBSERVED / name, "rt") as f:
            for line in f:
                r = json.loads(line)
                policy, dt = _POLICY.get((r["fw"], r["config"])), r["a"].get("dtype", "")
                if r.get("family") != "reduction" or r.get("error") or "value" not in r["a"] or policy is None \
                        or dt.startswith(("complex", "float8")):
                    continue
                total += 1
                x = np.array([_parse(v, dt) for v in r["a"]["value"]], dtype=_np_dtype(dt))
                got = np.atleast_1d(np.asarray(getattr(gp, r["op"])(x, policy=policy)))
                ok = len(got) == len(r["values"])
                for g, w in zip(got, r["values"]):
                    if r["result"] == "bool":
                        ok &= bool(g) == (w == "True")
                    elif r["result"][0] in "iu":
                        ok &= int(g) == int(w)
                    else:
                        g, w = float(g), float(w)
                        ok &= (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
                agree += ok
    assert agree >= 0.975 * total, f"{agree} of {total}"


# A sum over no elements is +0.0 in NumPy, torch and JAX; the kernels' lanes start from -0.0 so that
# a sum of -0.0 stays -0.0, and an empty row once gave that -0.0 (kernel/reduce.empty_of)
EMPTY_SUMS = [("float32", "numpy", (3, 0), 1), ("float64", "torch", (0,), None), ("float16", "jax", (2, 0, 4), 1),
              ("complex64", "numpy", (0,), None), ("bfloat16", "torch", (4, 0), -1)]


@pytest.mark.parametrize("dtype, policy, shape, axis", EMPTY_SUMS, ids=[f"{d}-{p}" for d, p, _, _ in EMPTY_SUMS])
def test_a_sum_of_nothing_is_positive_zero(dtype, policy, shape, axis):
    x = np.zeros(shape, gp.spec(dtype).dtype.numpy)
    got = np.asarray(gp.sum(x, axis=axis, policy=policy)).astype(np.complex128).ravel()
    assert got.size and not np.any(np.signbit(got.real)) and not np.any(np.signbit(got.imag)), got
    assert np.all(np.signbit(np.asarray(gp.sum(np.full((2, 1), -0.0, x.dtype), axis=1, policy="numpy"),
                                        dtype=np.complex128).real)), "a sum of -0.0 is -0.0 under numpy"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_map_of_several_math_functions_is_inlined_into_the_reduction_loop(dtype):
    """A reduction's element function is ``alwaysinline``: with exp, tanh and sigmoid in its map it
    grew past LLVM's threshold and was called once an element (a fused float16 sum of exp * tanh
    73 ns an element; 2.2 inlined). The generated source says so; the sums equal eager's bits."""
    from gpupromote.engines.cpu.reduce import reduce_source
    from gpupromote.kernel import ir
    from gpupromote.kernel.reduce import Reduction
    x = np.random.default_rng(8).standard_normal((64, 1000)).astype(dtype)
    fused = gp.fuse(lambda x: gp.sum(gp.exp(x) * gp.tanh(x) * gp.sigmoid(x), axis=-1), policy="torch")
    with gp.use_policy("torch"):
        want = gp.sum(gp.multiply(gp.multiply(gp.exp(x), gp.tanh(x)), gp.sigmoid(x)), axis=-1)
    for _ in range(3):   # staged, recorded, replayed
        assert np.asarray(fused(x)).tobytes() == np.asarray(want).tobytes()
    x0 = ir.param(0, gp.dtype(dtype))
    source = reduce_source(Reduction(ir.Kernel([x0], ir.cast(x0, gp.dtype("float32"))), "add"))
    elem = source[source.index("def elem("):]
    assert elem.splitlines()[1].strip() == "always_inline()", elem[:200]


@pytest.mark.parametrize("combine, dtype", [("add", "float32"), ("add", "float64"), ("max", "float32"), ("add", "int16")],
                         ids=["sum float32", "sum float64", "max float32", "sum of int16 in int64"])
def test_a_row_reduction_asks_for_its_memory_ahead(combine, dtype):
    """Each leaf (and each row of a max's vector pass) asks for the memory PREFETCH_DISTANCE bytes
    ahead of what it reads (intrinsics.prefetch_row: a float32 sum of 10**7 22 -> 35 GB/s). The
    results on long rows, short rows, rows whose end the prefetches run past and a strided operand
    (none asked for): exact maxima and integer sums, float sums within a pairwise sum's bound (the
    same bits on any thread count and the host CUDA tier: the other reduction tests)."""
    from gpupromote.engines.cpu.reduce import reduce_source
    from gpupromote.kernel import ir
    from gpupromote.kernel.reduce import Reduction
    x0 = ir.param(0, gp.dtype(dtype))
    acc = gp.dtype("int64") if dtype == "int16" else gp.dtype(dtype)
    source = reduce_source(Reduction(ir.Kernel([x0], ir.cast(x0, acc) if acc != x0.dtype else x0), combine))
    assert "prefetch_row(x0, m, ahead" in source
    rng = np.random.default_rng(12)
    fn = gp.sum if combine == "add" else gp.max
    for shape, axis in [((3, 1_000_003), -1), ((4096, 100), -1), ((257, 129), 1), ((1000, 37), 0)]:
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        want = (np.sum(x.astype(np.float64), axis=axis) if combine == "add" else np.max(x, axis=axis))
        got = np.asarray(fn(x, axis=axis, policy="numpy"))
        if combine == "max" or dtype == "int16":
            assert got.tobytes() == want.astype(got.dtype).tobytes(), shape
        else:
            scale = np.sum(np.abs(x.astype(np.float64)), axis=axis)   # (a pairwise sum's error bound's scale)
            assert np.all(np.abs(got - want) <= scale * (1e-6 if dtype == "float32" else 1e-14)), shape
