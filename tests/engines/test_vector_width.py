"""Plain-arithmetic kernels ask LLVM for 256-bit vectors (intrinsics.prefer_256_bit, written into
their generated loop functions by source.vector_width_lines); kernels that call the math library
keep the 512-bit ones and compile with cache.MATH_INTERLEAVE vectors in flight, or WIDER_INTERLEAVE for
the functions that gain from it (tables.math_interleave, source.jit_line, cache.interleaving). Both
reach the machine code, and no value depends on either."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import source
from gpupromote.engines.cpu import tables
from gpupromote.engines.cpu.cache import LEAN_INTERLEAVE, MATH_INTERLEAVE, WIDER_INTERLEAVE, interleaving
from gpupromote.engines.cpu.intrinsics import prefer_256_bit
from gpupromote.engines.cpu.kernels import map_source
from gpupromote.kernel import ir
from gpupromote.kernel.math import llvm_binding

_X = np.arange(64, dtype=np.float32)


def _plan(op, *args):
    return plan_for(op, list(args), policy="numpy")


@pytest.mark.parametrize("op, args, marked", [
    ("add", (_X, _X), True), ("multiply", (_X.astype(np.int8), _X), True), ("less", (_X, 2.5), True),
    ("exp", (_X,), False), ("power", (_X, _X), False)], ids=["add", "int8*f32", "less", "exp", "power"])
def test_the_generated_functions_ask_for_256_bits_unless_they_call_math(op, args, marked):
    src = source.source(_plan(op, *args))
    functions = [block for block in src.split("\ndef ")[1:]
                 if block.startswith(("flat(", "native(", "strided"))]
    assert functions
    for block in functions:
        assert ("    prefer_256_bit()" in block.splitlines()[1]) is marked, block.splitlines()[0]
    row_map = map_source(ir.from_plan(_plan(op, *args)), tuple("full" if a is not None else "scalar" for a in args))
    assert ("prefer_256_bit()" in row_map) is marked


def test_the_attribute_reaches_llvm_and_the_machine_code():
    @njit(error_model="numpy", boundscheck=False)
    def narrow(a, b, o):
        prefer_256_bit()
        for i in range(o.shape[0]):
            o[i] = a[i] + b[i]

    @njit(error_model="numpy", boundscheck=False)
    def wide(a, b, o):
        for i in range(o.shape[0]):
            o[i] = a[i] + b[i]
    o = np.empty_like(_X)
    narrow(_X, _X, o)
    wide(_X, _X, o)
    llvm = next(iter(narrow.inspect_llvm().values()))
    assert '"prefer-vector-width"="256"' in llvm
    asm_narrow, asm_wide = (next(iter(f.inspect_asm().values())) for f in (narrow, wide))
    assert "zmm" not in asm_narrow and "ymm" in asm_narrow
    if "zmm" not in asm_wide:
        pytest.skip("this CPU's LLVM target vectorizes with 256 bits anyway (no AVX-512, or tuned so)")


def test_the_values_do_not_depend_on_it():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(10_001).astype(np.float32), rng.standard_normal(10_001).astype(np.float32)
    a[:4] = [np.nan, np.inf, -0.0, 1e-45]
    assert gp.add(a, b).tobytes() == np.add(a, b).tobytes()
    assert gp.multiply(a, 3).tobytes() == np.multiply(a, np.float32(3)).tobytes()


@pytest.mark.parametrize("op, args, math", [
    ("add", (_X, _X), False), ("less", (_X, 2.5), False), ("exp", (_X,), True), ("power", (_X, _X), True)],
    ids=["add", "less", "exp", "power"])
def test_row_maps_that_call_math_compile_interleaved(op, args, math):
    marked = f"interleave={MATH_INTERLEAVE})"
    row_map = map_source(ir.from_plan(_plan(op, *args)), tuple("full" if a is not None else "scalar" for a in args))
    assert (marked in row_map) is math


_F32, _F16 = np.float32, np.float16


@pytest.mark.parametrize("fn, interleave, dtype", [
    (lambda x: x + x, None, _F32), (lambda x: x < 2.5, None, _F32), (gp.exp, WIDER_INTERLEAVE, _F32),
    (gp.sigmoid, WIDER_INTERLEAVE, _F32), (lambda x: x * gp.sigmoid(x), WIDER_INTERLEAVE, _F32),
    (gp.tanh, MATH_INTERLEAVE, _F32), (lambda x: x ** x, MATH_INTERLEAVE, _F32),
    (lambda x: gp.exp(x) + gp.tanh(x), MATH_INTERLEAVE, _F32), (gp.tanh, LEAN_INTERLEAVE, _F16),
    (lambda x: gp.tanh(x) * x, MATH_INTERLEAVE, _F16)],
    ids=["add", "less", "exp", "sigmoid", "silu", "tanh", "power", "exp and tanh", "float16 tanh", "float16 tanh chain"])
def test_elementwise_kernels_that_call_math_compile_interleaved(fn, interleave, dtype):
    """Four vectors in flight for a kernel that calls the math library, six where it calls only the
    functions of cache.WIDER_INTERLEAVE_FUNCTIONS, eight where it is one lean float16 entry (where the
    hardware converts float16), LLVM's choice for the others."""
    if dtype == np.float16 and not tables.HARDWARE_HALF:
        pytest.skip("no float16 conversion in hardware: the lean float16 loop is not this loop")
    kernel = gp.fuse(fn).kernel(_X.astype(dtype))
    assert WIDER_INTERLEAVE not in (None, MATH_INTERLEAVE)
    assert tables.math_interleave(kernel) == interleave
    jit = [line for line in source.source(kernel).splitlines() if line.startswith("_jit = ")]
    assert len(jit) == 1 and ("interleave=" in jit[0]) is (interleave is not None), jit
    assert interleave is None or jit[0].endswith(f"interleave={interleave})"), jit


def _tanh_loop():
    tanh = llvm_binding.intrinsic_for("gpm_tanh_f32")

    @njit(error_model="numpy", boundscheck=False)
    def loop(x, o):
        for i in range(o.shape[0]):
            o[i] = tanh(x[i])
    return loop


def _conversions(loop, x):
    o = np.empty_like(x)
    loop(x, o)
    return next(iter(loop.inspect_asm().values())).count("vcvtps2pd"), o


def test_the_interleave_reaches_the_machine_code_and_is_put_back():
    x = np.random.default_rng(6).standard_normal(4099).astype(np.float32)
    before, _ = _conversions(_tanh_loop(), x)
    with interleaving(MATH_INTERLEAVE):
        during, _ = _conversions(_tanh_loop(), x)
    after, _ = _conversions(_tanh_loop(), x)
    assert after == before, "the option outlived the compile"
    if before == 0:
        pytest.skip("this CPU's LLVM does not vectorize the loop")
    assert during > before


def test_a_nested_interleave_puts_back_the_outer_one():
    # a compile nests the compiles of the functions it calls, each with its own count
    x = np.random.default_rng(8).standard_normal(4099).astype(np.float32)
    with interleaving(MATH_INTERLEAVE):
        during, _ = _conversions(_tanh_loop(), x)
        with interleaving(1):
            pass
        again, _ = _conversions(_tanh_loop(), x)
    assert again == during


def test_the_values_do_not_depend_on_the_interleave():
    rng = np.random.default_rng(7)
    plain = _tanh_loop()
    with interleaving(MATH_INTERLEAVE):
        interleaved = _tanh_loop()
        interleaved(np.zeros(1, np.float32), np.zeros(1, np.float32))
    for n in (1, 7, 31, 64, 65, 127, 1000, 4099):   # every tail the unrolled loop leaves
        x = (rng.standard_normal(n) * 4).astype(np.float32)
        x[: min(n, 3)] = [np.nan, -0.0, 30.0][: min(n, 3)]
        a, b = np.empty_like(x), np.empty_like(x)
        plain(x, a)
        interleaved(x, b)
        assert a.tobytes() == b.tobytes(), n
