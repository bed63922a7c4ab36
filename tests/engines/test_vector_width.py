"""Plain-arithmetic kernels ask LLVM for 256-bit vectors (intrinsics.prefer_256_bit, written into
their generated loop functions by source.vector_width_lines); kernels that call the math library
keep the 512-bit ones. The attribute reaches the machine code, and no value depends on it."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import source
from gpupromote.engines.cpu.intrinsics import prefer_256_bit
from gpupromote.engines.cpu.kernels import map_source
from gpupromote.kernel import ir

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
