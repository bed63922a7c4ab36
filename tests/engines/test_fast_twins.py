"""Math entry points with a fast twin (kernel/math/twins.FAST_TWINS: sin, cos and tan of float32,
whose reduction reads a table only for |x| >= 2^24; tanh, log, log2, log10 and log1p of float32, a shorter evaluation
whose rounding is checked (keyed: fast32.py); float64 exp, exp2, sinh, cosh and sigmoid,
straight-line away from subnormal results and the overflow edge): the CPU engine's contiguous loops run each
block of BUFFER_ELEMENTS with the twin, and again with the entry point where a rare input was
flagged (engines/cpu/source.py ``_twin_lines``; the compiled dispatcher's native entry, without
twins, takes the short calls). Every element must be the entry point's result, wherever the rare
inputs sit, in place, strided, on the native entry and over several threads;
tests/kernel/math/test_fast_twins.py checks the twins themselves."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from numba import njit

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import engine, kernels, source as cpu_source
from gpupromote.engines.cpu.source import BUFFER_ELEMENTS, TWIN_BLOCKS_AFTER, has_twins
from gpupromote.kernel import ir
from gpupromote.kernel.math.twins import FAST_TWINS, TIE_KEY_LIMIT
from gpupromote.kernel.math import numba_functions

# op -> (dtype, entry point, rare inputs, a base of ordinary ones)
_F = numba_functions(flat=True)
OPS = {
    "sin": (np.float32, "gpm_sin_f32", [3e30, -16777216.0, 1e10, -2.5e38, 16777216.0, 7e25], 5.0),
    "cos": (np.float32, "gpm_cos_f32", [3e30, -16777216.0, 1e10, -2.5e38, 16777216.0, 7e25], 5.0),
    "tan": (np.float32, "gpm_tan_f32", [3e30, -16777216.0, 1e10, -2.5e38, 16777216.0, 7e25], 5.0),
    "exp": (np.float64, "gpm_exp_f64", [800.0, -1000.0, np.nan, 708.5, -745.0, np.inf], 100.0),
    "log": (np.float64, "gpm_log_f64", [-1.0, 0.0, np.inf, -0.0, np.nan, -np.inf], None),
    # keyed twins (fast32.py): values near a float32 tie (and subnormals, which tanh rounds to
    # themselves); log's special values
    "tanh": (np.float32, "gpm_tanh_f32", [1e-40, -3.0025739669799805, 0.08361954987049103, -3e-39,
                                          1.309891700744629, 1.4e-45], 2.0),
    "log32": (np.float32, "gpm_log_f32", [32.62169647216797, 0.0, -1.0, 17.018136978149414, np.nan,
                                          5.769937038421631], None),
    "log2": (np.float32, "gpm_log2_f32", [0.0, -1.0, np.nan, np.inf, -0.0, -np.inf], None),
    "log10": (np.float32, "gpm_log10_f32", [np.inf, 0.0, -2.5, np.nan, -np.inf, -0.0], None),
    "log1p": (np.float32, "gpm_log1p_f32", [-1.0, np.inf, -3.0, -np.inf, -1.5, np.nan], None),
}
GP_OP = {"log32": "log"}   # the label of a second dtype of one op -> the op


def _gp(op):
    return getattr(gp, GP_OP.get(op, op))
B = BUFFER_ELEMENTS


@functools.lru_cache(maxsize=None)
def _entry_loop(name):
    """The entry point alone, element by element (no twin): the reference."""
    f = _F[name]

    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return run


def _want(op, x):
    out = np.empty(x.shape, OPS[op][0])
    _entry_loop(OPS[op][1])(np.ascontiguousarray(x).reshape(-1), out.reshape(-1))
    return out


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = np.uint32 if got.dtype.itemsize == 4 else np.uint64
    diff = np.nonzero(got.reshape(-1).view(bits) != want.reshape(-1).view(bits))[0]
    assert diff.size == 0, f"{diff.size} elements differ, first at {diff[:5]}"


def _inputs(n, rare_at=(), seed=3, op="sin"):
    dtype, _, rare, scale = OPS[op]
    x = np.random.default_rng(seed).standard_normal(n)
    x = (np.abs(x) * 50 if scale is None else x * scale).astype(dtype)
    if op in ("sin", "cos", "tan"):
        specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 16777215.0, -16777215.0][:n]
        x[:len(specials)] = specials
    for i, v in zip(rare_at, rare):
        x[i] = v
    return x


# where the rare inputs sit: none, the first block, a middle one, the partial last block, several
LAYOUTS = {"none": (), "first block": (5,), "middle block": (3 * B + 17,), "last partial block": (5 * B + 40,),
           "several": (0, B - 1, B, 2 * B + 500, 5 * B + 99)}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_blocks_give_the_entry_points_bits(op, layout):
    x = _inputs(5 * B + 100, LAYOUTS[layout], op=op)
    _same(_gp(op)(x), _want(op, x))


@pytest.mark.parametrize("op", OPS)
def test_in_place(op):
    # out is the input: a block's second pass must read the inputs, not the first pass's results
    x = _inputs(3 * B + 7, (B + 3,), op=op)
    want = _want(op, x)
    assert _gp(op)(x, out=x) is x
    _same(x, want)


@pytest.mark.parametrize("op", OPS)
def test_strided_and_2d(op):
    x = _inputs(4 * (2 * B + 9), (17, 3 * B), op=op)
    _same(_gp(op)(x[::2]), _want(op, x[::2]))
    grid = x.reshape(4, -1)
    _same(_gp(op)(grid), _want(op, grid))
    # 2-d strided: the buffered loop, whose stretches are the twins' blocks
    _same(_gp(op)(grid.T), _want(op, grid.T))
    _same(_gp(op)(grid[:, ::3]), _want(op, grid[:, ::3]))


def test_long_calls_leave_the_native_entry_for_the_blocks():
    # the compiled dispatcher's native entry has no twins: it takes the short calls only
    for op, dtype in (("sin", np.float32), ("exp", np.float64)):
        plan = plan_for(op, [np.ones(4, dtype)], policy="numpy")
        assert engine.BACKEND.native_max_n(plan) == engine.TWIN_NATIVE_MAX
    assert engine.BACKEND.native_max_n(plan_for("exp", [np.ones(4, np.float32)], policy="numpy")) is None


def test_short_calls_take_flat_and_long_ones_the_blocks():
    # blocks (the twins' passes) compile in about three times flat's time: a first small call of a
    # fused GELU must not pay for them
    twins = kernels.kernel_for(plan_for("tanh", [np.ones(4, np.float32)], policy="numpy"))
    plain = kernels.kernel_for(plan_for("exp", [np.ones(4, np.float32)], policy="numpy"))
    assert twins.contiguous(TWIN_BLOCKS_AFTER) is twins.flat and twins.contiguous(TWIN_BLOCKS_AFTER + 1) is twins.blocks
    assert plain.blocks is None and plain.contiguous(10**7) is plain.flat
    for n in (TWIN_BLOCKS_AFTER, TWIN_BLOCKS_AFTER + 1):
        x = _inputs(n, (n - 1, 3), op="tanh")
        _same(gp.tanh(x), _want("tanh", x))
        _same(gp.tanh(x.reshape(1, n)), _want("tanh", x).reshape(1, n))


@pytest.mark.parametrize("op", OPS)
def test_small_calls_on_the_native_entry(op):
    for n in (1, 7, B - 1, B + 1):
        x = _inputs(n, (n - 1,) if n > 7 else (), op=op)
        _same(_gp(op)(x), _want(op, x))


@pytest.mark.parametrize("op", ["sin", "exp"])
def test_threads_split_anywhere(op):
    x = _inputs(40 * B + 333, (7, 20 * B + 1, 39 * B + 2), op=op)
    want = _want(op, x)
    for threads in (1, 2, 3):
        with gp.num_threads(threads):
            _same(_gp(op)(x), want)


def test_fused_chains_with_twins():
    # the second pass recomputes the whole chain of the block; the reference is the entry points'
    x = _inputs(3 * B + 11, (2 * B,))
    y = np.float32(1.5)
    f = gp.fuse(lambda a: gp.sin(a * y) + gp.cos(a))
    _same(f(x), _want("sin", x * y) + _want("cos", x))
    x = _inputs(3 * B + 11, (5, 2 * B + 1), op="exp")
    softplus = gp.fuse(lambda a: gp.log(gp.exp(a) + 1.0))
    with np.errstate(all="ignore"):
        _same(softplus(x), _want("log", _want("exp", x) + 1.0))


def test_the_blocks_borrow_their_arrays():
    """The blocks function holds its arguments for the whole call, so its views reach the passes
    without reference counts (an atomic around each call, waiting for the block's stores) and its
    in-place buffer is in its stack frame; the in-place and rare-block results: test_in_place."""
    text = cpu_source.source(ir.from_plan(plan_for("add", [np.ones(4, np.float32), np.ones(4, np.float32)],
                                                   policy="numpy")))
    assert "def blocks(" not in text
    x = np.ones(4, np.float32)
    text = cpu_source.source(gp.fuse(lambda a, b: gp.sin(a) * b).kernel(x, x))
    blocks = text[text.index("def blocks("):text.index("def twin_pass(")]
    assert blocks.splitlines()[1:4] == ["    x0 = borrowed(x0)", "    x1 = borrowed(x1)", "    out = borrowed(out)"], blocks
    assert f"bo = scratch({BUFFER_ELEMENTS}, np.float32)" in blocks and "np.empty" not in blocks


def test_which_kernels_have_twins():
    def kernel(op, *args):
        return ir.from_plan(plan_for(op, list(args), policy="numpy"))
    f32, f64 = np.ones(4, np.float32), np.ones(4, np.float64)
    assert has_twins(kernel("sin", f32)) and has_twins(kernel("tan", f32))
    assert has_twins(kernel("exp", f64)) and has_twins(kernel("sigmoid", f64))
    assert not has_twins(kernel("log", f64))        # its entry point is straight-line: it vectorizes itself
    assert has_twins(kernel("sin", f64)) and not has_twins(kernel("exp", f32))
    assert not has_twins(kernel("floor_divide", np.ones(4, np.int32), np.ones(4, np.int32)))
    text = cpu_source.source(kernel("cos", f32))
    twin, rare = FAST_TWINS["gpm_cos_f32"]
    assert f"_gpmi_{twin}(" in text and f"rare |= _gpmi_{rare}(" in text and "if twin_pass(" in text
    text = cpu_source.source(kernel("sigmoid", f64))
    twin, rare = FAST_TWINS["gpm_sigmoid_f64"]
    assert f"_gpmi_{twin}(" in text and f"rare |= _gpmi_{rare}(" in text and "gp_sigmoid(" in text
    # a keyed twin keeps the smallest key (twins.KEYED)
    assert has_twins(kernel("tanh", f32)) and has_twins(kernel("log", f32)) and not has_twins(kernel("tanh", f64))
    text = cpu_source.source(kernel("log", f32))
    twin, rare = FAST_TWINS["gpm_log_f32"]
    assert f"near = min(near, _gpmi_{rare}(" in text and f"return rare or near <= {TIE_KEY_LIMIT}" in text


def _float64_inputs(seed=13):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 64, 3000, dtype=np.uint64).view(np.float64)
    moderate = rng.standard_normal(3000) * 30
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 5e-324, 2.2250738585072014e-308, 22.0, 40.0,
                      708.0, 709.7, 710.0, 711.0, 745.0, 746.0, 1020.0, 1024.0, 1080.0, 1e-9, 3.7e-9, 1e-6, 1e-17, -1.0,
                      -0.5, 1e300, 1500000.0, 0.7853981633974483, 1.4901161193847656e-08, 1e22, 3e6, 36.0, 38.0,
                      5.551115123125783e-17, 0.41421356237309503, 2.414213562373095, 268435456.0,
                      1.152921504606847e+18, 0.9999999999999999, 1.0000000000000002, 0.5, 0.49999999999999994,
                      1.1], np.float64)
    edges = np.concatenate([edges, -edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)])
    return np.concatenate([edges, bits, moderate])


FLOAT64_OPS = ["exp", "exp2", "expm1", "cbrt", "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "sigmoid",
               "sin", "cos", "tan", "arctan", "arcsinh", "arccosh", "arctanh", "arcsin", "arccos"]


@pytest.mark.parametrize("op", FLOAT64_OPS)
def test_float64_kernels_give_the_entry_points_bits(op):
    # the twins' blocks (exp ...) and the straight-line entry points written inline (log ...)
    x = _float64_inputs()
    want = np.empty_like(x)
    _entry_loop(f"gpm_{op}_f64")(x, want)
    with np.errstate(all="ignore"):
        for got in (_gp(op)(x), _gp(op)(x[::-1])[::-1]):
            bad = np.nonzero(np.asarray(got).view(np.uint64) != want.view(np.uint64))[0]
            assert bad.size == 0, f"{op}: {bad.size} differ, e.g. at x = {x[bad[:4]]!r}"


@functools.lru_cache(maxsize=None)
def _pair_loop(name="gpm_power_f32"):
    """A binary entry point alone, pair by pair (no twin): the reference."""
    f = _F[name]

    @njit(error_model="numpy")
    def run(x, y, out):
        for i in range(x.size):
            out[i] = f(x[i], y[i])
    return run


def test_float32_power_of_small_and_other_exponents():
    # y in 0, +-1, 2, 3, 4, 0.5 runs the first twin's exact operations; a block with any other
    # exponent the keyed second twin (twins.SECOND_TWINS), and one it flags the entry point: blocks
    # of all three kinds, and each exponent alone (a Python scalar: folded into the kernel)
    x = _inputs(6 * B + 5, (), op="sin") * np.float32(1e18)    # some squares overflow
    y = np.full(x.size, 2.0, np.float32)
    y[B + 7] = 0.5
    y[2 * B:3 * B] = np.float32(3.0)
    y[3 * B:4 * B:3] = np.float32(-1.0)
    y[4 * B:5 * B] = np.float32(-1.5)
    y[5 * B:] = np.random.default_rng(3).standard_normal(x.size - 5 * B).astype(np.float32) * 3
    want = np.empty_like(x)
    _pair_loop()(x, y, want)
    with np.errstate(all="ignore"):
        _same(gp.power(x, y), want)
    for e in (2.0, 0.5, 3.0, 4.0, -1.0, 1.0, 0.0, 2.5, -0.5):
        _pair_loop()(x, np.full(x.size, e, np.float32), want)
        with np.errstate(all="ignore"):
            _same(gp.power(x, e), want)
            _same(gp.power(np.abs(x) * np.float32(1e-19), e), _entry_power(np.abs(x) * np.float32(1e-19), e))


def _entry_power(x, e):
    want = np.empty_like(x)
    _pair_loop()(x, np.full(x.size, e, np.float32), want)
    return want


def test_float64_power_of_two_is_the_product():
    x = _inputs(3 * B + 5, (), op="exp") * 1e150     # some squares overflow, some underflow below
    x[::7] *= 1e-300
    want = np.empty_like(x)
    _pair_loop("gpm_power_f64")(x, np.full(x.size, 2.0), want)
    with np.errstate(all="ignore"):
        _same(gp.power(x, 2.0), want)
        assert np.array_equal(want, x * x)


def test_float64_power_blocks_of_every_kind():
    # y == 2 runs the first twin (the product); a block with any other exponent the second twin
    # (the entry point's core, straight-line), and a block where that flags a pair (a result that may
    # be subnormal or overflow) the entry point: blocks of all three kinds, and scalar exponents
    rng = np.random.default_rng(17)
    x = np.abs(_float64_inputs())[: 6 * B + 5]
    x = np.resize(x, 6 * B + 5) * rng.uniform(0.5, 2.0, 6 * B + 5)
    y = np.full(x.size, 2.0)
    y[B + 7] = 0.5
    y[2 * B:3 * B] = rng.standard_normal(B) * 4
    y[3 * B:4 * B] = rng.integers(-9, 9, B).astype(np.float64)
    y[4 * B + 3] = -1500.0                                   # one rare pair in a block of others
    y[5 * B:] = rng.standard_normal(x.size - 5 * B) * 3
    x[3 * B:4 * B:5] *= -1.0                                  # negative bases, integer exponents
    run = _pair_loop("gpm_power_f64")
    want = np.empty_like(x)
    run(x, y, want)
    with np.errstate(all="ignore"):
        _same(gp.power(x, y), want)
        for e in (0.5, 3.0, -1.0, 2.5, -0.5, 1e-3, 700.0):
            run(x, np.full(x.size, e), want)
            _same(gp.power(x, e), want)


@pytest.mark.parametrize("op", ["logaddexp", "arctan2"])
def test_float64_binary_functions_written_inline_give_the_entry_points_bits(op):
    # straight-line now (the special cases selected): every pair of specials, random pairs, x == y
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-300, 5e-324, 700.0, -700.0, 1e308, 2.0**60,
                   2.0**-60, 0.41421356237309503])
    gx, gy = (g.ravel() for g in np.meshgrid(sp, sp))
    x = np.concatenate([gx, _float64_inputs(), np.linspace(-30, 30, 999)])
    y = np.concatenate([gy, np.roll(_float64_inputs(seed=14), 3), np.linspace(-30, 30, 999)])
    want = np.empty_like(x)
    _pair_loop(f"gpm_{op}_f64")(x, y, want)
    text = cpu_source.source(ir.from_plan(plan_for(op, [x, y], policy="numpy")))
    helper = {"logaddexp": "gp_logaddexp(", "arctan2": "gp_atan2("}[op]
    assert helper not in text.split('Do not edit."""')[1]     # (the docstring lists the IR)
    with np.errstate(all="ignore"):
        _same(_gp(op)(x, y), want)
