"""Math entry points with a fast twin (kernel/math/float32.FAST_TWINS: sin, cos and tan of float32,
whose reduction reads a table only for |x| >= 2^24): the CPU engine's contiguous loops run each
block of BUFFER_ELEMENTS with the twin, and again with the entry point where a rare input was
flagged (engines/cpu/source.py ``_twin_block_lines``; the compiled dispatcher's native entry, without
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
from gpupromote.engines.cpu import engine, source as cpu_source
from gpupromote.engines.cpu.source import BUFFER_ELEMENTS, has_twins
from gpupromote.kernel import ir
from gpupromote.kernel.math.float32 import FAST_TWINS
from gpupromote.kernel.math.llvm_binding import intrinsic_for

OPS = {"sin": "gpm_sin_f32", "cos": "gpm_cos_f32", "tan": "gpm_tan_f32"}
B = BUFFER_ELEMENTS


@functools.lru_cache(maxsize=None)
def _entry_loop(name):
    """The entry point alone, element by element (no twin): the reference."""
    f = intrinsic_for(name)

    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return run


def _want(op, x):
    out = np.empty(x.shape, np.float32)
    _entry_loop(OPS[op])(np.ascontiguousarray(x).reshape(-1), out.reshape(-1))
    return out


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.nonzero(got.reshape(-1).view(np.uint32) != want.reshape(-1).view(np.uint32))[0]
    assert diff.size == 0, f"{diff.size} elements differ, first at {diff[:5]}"


def _inputs(n, rare_at=(), seed=3):
    x = (np.random.default_rng(seed).standard_normal(n) * 5).astype(np.float32)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 16777215.0, -16777215.0][:n]
    x[:len(specials)] = specials
    for i, v in zip(rare_at, [3e30, -16777216.0, 1e10, -2.5e38, 16777216.0, 7e25]):
        x[i] = v
    return x


# where the rare inputs sit: none, the first block, a middle one, the partial last block, several
LAYOUTS = {"none": (), "first block": (5,), "middle block": (3 * B + 17,), "last partial block": (5 * B + 40,),
           "several": (0, B - 1, B, 2 * B + 500, 5 * B + 99)}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_blocks_give_the_entry_points_bits(op, layout):
    x = _inputs(5 * B + 100, LAYOUTS[layout])
    _same(getattr(gp, op)(x), _want(op, x))


@pytest.mark.parametrize("op", OPS)
def test_in_place(op):
    # out is the input: a block's second pass must read the inputs, not the first pass's results
    x = _inputs(3 * B + 7, (B + 3,))
    want = _want(op, x)
    assert getattr(gp, op)(x, out=x) is x
    _same(x, want)


@pytest.mark.parametrize("op", OPS)
def test_strided_and_2d(op):
    x = _inputs(4 * (2 * B + 9), (17, 3 * B))
    _same(getattr(gp, op)(x[::2]), _want(op, x[::2]))
    grid = x.reshape(4, -1)
    _same(getattr(gp, op)(grid), _want(op, grid))


def test_long_calls_leave_the_native_entry_for_the_blocks():
    # the compiled dispatcher's native entry has no twins: it takes the short calls only
    plan = plan_for("sin", [np.ones(4, np.float32)], policy="numpy")
    assert engine.BACKEND.native_max_n(plan) == engine.TWIN_NATIVE_MAX
    assert engine.BACKEND.native_max_n(plan_for("exp", [np.ones(4, np.float32)], policy="numpy")) is None


@pytest.mark.parametrize("op", OPS)
def test_small_calls_on_the_native_entry(op):
    for n in (1, 7, B - 1, B + 1):
        x = _inputs(n, (n - 1,) if n > 7 else ())
        _same(getattr(gp, op)(x), _want(op, x))


def test_threads_split_anywhere():
    x = _inputs(40 * B + 333, (7, 20 * B + 1, 39 * B + 2))
    want = _want("sin", x)
    for threads in (1, 2, 3):
        with gp.num_threads(threads):
            _same(gp.sin(x), want)


def test_fused_chain_with_a_twin():
    x = _inputs(3 * B + 11, (2 * B,))
    y = np.float32(1.5)
    f = gp.fuse(lambda a: gp.sin(a * y) + gp.cos(a))
    want = np.asarray(gp.add(gp.sin(gp.multiply(x, y)), gp.cos(x)))
    _same(f(x), want)


def test_which_kernels_have_twins():
    def kernel(op, *args):
        return ir.from_plan(plan_for(op, list(args), policy="numpy"))
    f32, f64 = np.ones(4, np.float32), np.ones(4, np.float64)
    assert has_twins(kernel("sin", f32)) and has_twins(kernel("tan", f32))
    assert not has_twins(kernel("sin", f64))        # the float64 path has no table gathers to skip
    assert not has_twins(kernel("exp", f32))
    text = cpu_source.source(kernel("cos", f32))
    twin, rare = FAST_TWINS["gpm_cos_f32"]
    assert f"_gpmi_{twin}(" in text and f"rare |= _gpmi_{rare}(" in text and "if rare:" in text
