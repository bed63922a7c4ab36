"""Tabulated kernels (engines/cpu/tables.py): a kernel of one 8- or 16-bit operand gives, by table
lookup on a long call, the bits its own loop gives, on every bit pattern of the operand (NaN
payloads included), through the compiled dispatcher and the Python path, contiguous and in
place; short calls and the compiled dispatcher's entries still run the loop."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.dispatch.folding import fold_operand
from gpupromote.engines.cpu import kernels, tables
from gpupromote.engines.cpu.kernels import kernel_for
from gpupromote.engines.cpu.narrow import HARDWARE_HALF
from gpupromote.kernel.math import lean_entries
from gpupromote.engines.cpu.source import storage_view

NARROW = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
          "float8_e5m2": ml_dtypes.float8_e5m2, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
          "uint16": np.uint16}
# (policy, op, operands): kernels that call the owned math library on one narrow array
CASES = [(pol, op, [dt]) for pol in ("numpy", "torch") for op in ("exp", "log1p", "tanh", "sigmoid", "erf", "arcsin")
         for dt in ("float16", "bfloat16", "float8_e4m3fn", "int8", "uint16")
         if not (HARDWARE_HALF and dt == "float16" and f"gpm_{op}_f16" in lean_entries())] + \
        [("torch", "power", [dt, 2.5]) for dt in ("float16", "bfloat16", "float8_e5m2")] + \
        [("numpy", "arctan2", [dt, -0.5]) for dt in ("float16", "int16", "uint8")]


def _patterns(dtype, copies):
    """Every bit pattern of ``dtype``, ``copies`` times over (and shuffled, so lookups jump about)."""
    bits = np.dtype(NARROW[dtype]).itemsize * 8
    p = np.arange(1 << bits, dtype=np.uint8 if bits == 8 else np.uint16)
    p = np.tile(p, copies)
    np.random.default_rng(bits).shuffle(p)
    return p.view(NARROW[dtype])


def _loop(plan, x, scalars=()):
    """What the kernel's loop gives for ``x`` (and folded ``scalars``): its flat function, called directly."""
    k = kernel_for(plan)
    view = storage_view(plan.inputs[0])
    out = np.empty(x.shape, storage_view(plan.result) or plan.result.numpy)
    folded = [fold_operand(plan, i + 1, s, s) for i, s in enumerate(scalars)]
    k.flat(x.view(view) if view is not None else x, *folded, out)
    return out


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("policy, op, operands", [pytest.param(p, op, o, id="-".join([p, op, *map(str, o)]))
                                                 for p, op, o in CASES])
def test_the_table_gives_the_loops_bits_on_every_pattern(policy, op, operands):
    dtype, scalars = operands[0], operands[1:]
    plan = plan_for(op, [gp.spec(dtype), *scalars], policy)
    k = kernel_for(plan)
    assert k.table_bits is not None, f"{op}({dtype}) under {policy} is not tabulated"
    bits = np.dtype(NARROW[dtype]).itemsize * 8
    x = _patterns(dtype, copies=tables.min_elements(bits) >> bits)
    assert x.size == k.table_min, "the call must be long enough to take the table"
    k._tables._by_scalars.clear()
    with np.errstate(all="ignore"):
        got = getattr(gp, op)(x, *scalars, policy=policy)
    assert k._tables._by_scalars, "a call of table_min elements did not use the table"
    want = _loop(plan, x, scalars)
    diff = np.nonzero(_bits(np.asarray(got)).reshape(x.size, -1) != _bits(want).reshape(x.size, -1))[0]
    patterns = x.view(np.uint8 if bits == 8 else np.uint16)
    assert diff.size == 0, f"{diff.size} elements differ, first at pattern {patterns[diff[0]]:#x}"


def test_short_calls_run_the_loop_and_long_ones_the_table_with_the_same_bits():
    plan = plan_for("exp", [gp.spec("bfloat16")], "torch")
    k = kernel_for(plan)
    k._tables._by_scalars.clear()
    x = _patterns("bfloat16", 4)
    short = gp.exp(x[: k.table_min - 1], policy="torch")      # the compiled dispatcher's entry: the loop
    assert not k._tables._by_scalars
    long_ = gp.exp(x, policy="torch")
    assert k._tables._by_scalars
    assert _bits(np.asarray(short)).tobytes() == _bits(np.asarray(long_)[: k.table_min - 1]).tobytes()


def test_a_2d_call_in_place_and_a_strided_one():
    x = _patterns("float16", 4).reshape(512, -1)
    want = _loop(plan_for("tanh", [gp.spec("float16")], "numpy"), x.reshape(-1)).reshape(x.shape)
    inplace = x.copy()
    gp.tanh(inplace, out=inplace, policy="numpy")
    assert _bits(inplace).tobytes() == _bits(want).tobytes()
    strided = gp.tanh(x[:, ::2], policy="numpy")      # not contiguous: the strided loop
    assert _bits(strided).tobytes() == _bits(want[:, ::2]).tobytes()


def test_fused_chain_of_one_narrow_input_is_tabulated_and_equals_eager():
    gelu = gp.fuse(lambda x: 0.5 * x * (1 + gp.tanh(0.7978845608 * (x + 0.044715 * x * x * x))), policy="torch")
    x = _patterns("bfloat16", 4)
    mul, add = (lambda a, b: gp.multiply(a, b, policy="torch")), (lambda a, b: gp.add(a, b, policy="torch"))
    for k in kernels._kernels.values():   # an earlier test may have built this kernel's table
        if k._tables is not None:
            k._tables._by_scalars.clear()
    with np.errstate(all="ignore"):
        fused = gelu(x)
        tabulated = [k for k in kernels._kernels.values() if k._tables is not None and k._tables._by_scalars]
        assert len(tabulated) == 1, "the fused kernel did not take its table"
        inner = mul(0.7978845608, add(x, mul(mul(mul(0.044715, x), x), x)))
        eager = mul(mul(0.5, x), add(1, gp.tanh(inner, policy="torch")))
    assert np.asarray(fused).dtype == ml_dtypes.bfloat16
    same = _bits(np.asarray(fused)) == _bits(np.asarray(eager))
    assert same.all(), f"{(~same).sum()} bytes differ"


LEAN_FLOAT16 = ["exp", "tanh"]   # the float16 entries that round a lean path (kernel/math/lean32.py)


def test_the_lean_float16_entries_are_the_expected_ones():
    assert {f"gpm_{op}_f16" for op in LEAN_FLOAT16} == {n for n in lean_entries() if n.endswith("_f16")}


@pytest.mark.skipif(not HARDWARE_HALF, reason="float16 converts in software here: its kernels keep their tables")
@pytest.mark.parametrize("policy", ["numpy", "torch"])
@pytest.mark.parametrize("op", LEAN_FLOAT16)
def test_float16_kernels_of_lean_entries_run_their_loop_on_long_calls(op, policy):
    """A float16 entry rounding a float32-arithmetic path has a loop faster than a lookup: no
    table, a long call gives its loop's bits; bfloat16's and an int8 operand's keep their tables."""
    plan = plan_for(op, [gp.spec("float16")], policy)
    k = kernel_for(plan)
    assert k.table_bits is None and k._tables is None
    assert kernel_for(plan_for(op, [gp.spec("bfloat16")], policy)).table_bits == 16
    assert kernel_for(plan_for(op, [gp.spec("int8")], "numpy")).table_bits == 8    # computed in float16
    x = _patterns("float16", copies=tables.min_elements(16) >> 16)
    with np.errstate(all="ignore"):
        got = getattr(gp, op)(x, policy=policy)
    assert _bits(np.asarray(got)).tobytes() == _bits(_loop(plan, x)).tobytes()


def test_a_float16_chain_around_a_lean_entry_keeps_its_table():
    """Only a kernel that is the one call runs its loop: a chain of float16 steps around tanh (each
    rounded to float16 under NumPy's rules) is faster through its table."""
    chain = gp.fuse(lambda x: 0.5 * x * (1 + gp.tanh(x)), policy="numpy")
    for k in kernels._kernels.values():
        if k._tables is not None:
            k._tables._by_scalars.clear()
    with np.errstate(all="ignore"):
        chain(_patterns("float16", 4))
    tabulated = [k for k in kernels._kernels.values() if k._tables is not None and k._tables._by_scalars]
    assert len(tabulated) == 1


@pytest.mark.parametrize("policy, op, operands", [
    ("numpy", "arctan2", ["float16", "float16"]),   # two arrays
    ("numpy", "exp", ["float32"]),                  # a wide operand
    ("torch", "negative", ["int8"]),                # no math: the loop is faster (0.3 ms against 4 on 10**7)
    ("torch", "multiply", ["float16", 2.5]),
    ("numpy", "floor", ["bfloat16"]),
    ("numpy", "sqrt", ["float16"]),                 # the IEEE operation, not the library
    ("numpy", "logical_not", ["bool"]),
], ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v)))
def test_what_is_not_tabulated(policy, op, operands):
    specs = [gp.spec(o) if isinstance(o, str) else o for o in operands]
    assert kernel_for(plan_for(op, specs, policy)).table_bits is None


@pytest.mark.parametrize("index_type, out_type", [(np.uint16, np.uint16), (np.uint16, np.float32),
                                                  (np.uint8, np.uint16), (np.uint8, np.float64)])
def test_the_lookup_reads_its_indices_in_words_and_still_gives_every_element(index_type, out_type):
    """tables.gather loads 64 bits of indices at a time: every length's remainder, every start
    (a thread's chunk begins anywhere), against numpy's take."""
    bits = np.dtype(index_type).itemsize * 8
    rng = np.random.default_rng(bits)
    table = rng.integers(0, 1 << 15, 1 << bits).astype(out_type)
    index = rng.integers(0, 1 << bits, 1000).astype(index_type)
    for start in range(9):
        for n in (0, 1, 3, 4, 7, 8, 9, 15, 17, 500):
            out = np.full(n + 2, 1 << 15, out_type)    # no table value is 2^15: the ends stay
            tables.gather(table, index[start:start + n], out[1:n + 1])
            assert out[1:n + 1].tolist() == table[index[start:start + n]].tolist(), (start, n)
            assert out[0] == out[-1] == 1 << 15
