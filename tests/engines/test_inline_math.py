"""The CPU engine writes each float32 or narrow call of a straight-line owned math function into
the kernel's loop (engines/cpu/source.py ``let_lines``: one call of the intrinsic from
kernel/math/llvm_binding.py, which emits the flattened function's instructions) instead of calling
the helper overload: the kernels compile faster and give the bits of the helper call, which
tests/kernel/math and the host CUDA tier check against the library.

Every unary and binary math helper, on float32 (random bit patterns and the edges) and on every
float16 and bfloat16 pattern, through the eager op (contiguous: the native entry; every second
element: the buffered loop), against a loop calling the helper overload."""
import functools

import ml_dtypes
import numpy as np
import pytest
from numba import njit

import gpupromote as gp
from gpupromote.core.ops import op_named
from gpupromote.engines.cpu import helpers, owned_math
from gpupromote.engines.cpu.source import NARROW_HELPERS, source
from gpupromote.dispatch.api import plan_for
from gpupromote.kernel.math._flatten import is_straight
from gpupromote.kernel.unary import BINARY, UNARY

# helper -> the op whose float kernels call it (core/ops.py)
UNARY_OPS = {"gp_rsqrt": "rsqrt", "gp_cbrt": "cbrt", "gp_exp": "exp", "gp_exp2": "exp2", "gp_expm1": "expm1",
             "gp_log": "log", "gp_log2": "log2", "gp_log10": "log10", "gp_log1p": "log1p", "gp_sin": "sin",
             "gp_cos": "cos", "gp_tan": "tan", "gp_asin": "arcsin", "gp_acos": "arccos", "gp_atan": "arctan",
             "gp_sinh": "sinh", "gp_cosh": "cosh", "gp_tanh": "tanh", "gp_asinh": "arcsinh", "gp_acosh": "arccosh",
             "gp_atanh": "arctanh", "gp_sigmoid": "sigmoid", "gp_erf": "erf"}
BINARY_OPS = {"gp_powerf": "power", "gp_atan2": "arctan2", "gp_hypot": "hypot", "gp_logaddexp": "logaddexp"}
NARROW = {"float16": (np.float16, "f2"), "bfloat16": (ml_dtypes.bfloat16, "bf")}


def _float32_inputs(n=1 << 14, seed=7):
    rng = np.random.default_rng(seed)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 88.7, -103.9, 1e-45, -1e-45,
                      3.4028235e38, -3.4028235e38, 1.1754944e-38, 20.0, -20.0, 9.0, -9.0], np.float32)
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    moderate = (rng.standard_normal(n) * 4).astype(np.float32)
    return np.concatenate([edges, bits, moderate])


def _every_pattern(dtype):
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)


@functools.lru_cache(maxsize=None)
def _helper_loop(helper, code, arity):
    """A loop calling the helper overload (float32 operands; narrow: widened from their bits)."""
    fn = getattr(owned_math, helper if code is None else f"{helper}_{code}")
    widen = (lambda v: v) if code is None else getattr(helpers, NARROW_HELPERS[code][0])
    widen = njit(widen) if code is None else widen
    if arity == 1:
        @njit(error_model="numpy")
        def run(a, out):
            for i in range(a.size):
                out[i] = fn(widen(a[i]))
    else:
        @njit(error_model="numpy")
        def run(a, b, out):
            for i in range(a.size):
                out[i] = fn(widen(a[i]), widen(b[i]))
    return run


def _helper_values(helper, code, *args):
    out = np.empty(args[0].shape, np.float32)
    _helper_loop(helper, code, len(args))(*[a if code is None else a.view(np.uint16) for a in args], out)
    return out


def _assert_same(got, want, what):
    """Bit for bit; a narrow result against the float32 holding it (NaNs as NaNs: the carrier's
    payload is not the narrow one's)."""
    got32 = got.astype(np.float32)
    both_nan = np.isnan(got32) & np.isnan(want)
    bad = np.nonzero((got32.view(np.uint32) != want.view(np.uint32)) & ~both_nan)[0]
    assert bad.size == 0, f"{what}: {bad.size} differ, e.g. at {bad[:3]}: {got32[bad[:3]]} vs helper {want[bad[:3]]}"


def test_the_tables_name_every_helper():
    assert set(UNARY_OPS) == set(UNARY) and set(BINARY_OPS) == set(BINARY)
    assert all(op_named(op).expr == f"{helper}(in0)" for helper, op in UNARY_OPS.items())


@pytest.mark.parametrize("helper,op", UNARY_OPS.items(), ids=UNARY_OPS.values())
def test_unary_float32_equals_the_helper_call(helper, op):
    x = _float32_inputs()
    want = _helper_values(helper, None, x)
    with np.errstate(all="ignore"):
        _assert_same(getattr(gp, op)(x), want, "contiguous")
        _assert_same(getattr(gp, op)(np.repeat(x, 2)[::2]), want, "every second element")


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("helper,op", UNARY_OPS.items(), ids=UNARY_OPS.values())
def test_unary_narrow_every_pattern_equals_the_helper_call(helper, op, dtype):
    np_type, code = NARROW[dtype]
    x = _every_pattern(np_type)
    with np.errstate(all="ignore"), gp.use_policy("torch"):   # why: torch keeps every narrow input's dtype
        got = getattr(gp, op)(x)
    assert got.dtype == np_type
    _assert_same(got, _helper_values(helper, code, x), dtype)


@pytest.mark.parametrize("helper,op", BINARY_OPS.items(), ids=BINARY_OPS.values())
def test_binary_float32_and_float16_equal_the_helper_call(helper, op):
    x = _float32_inputs()
    y = np.roll(_float32_inputs(seed=8), 5)
    with np.errstate(all="ignore"):
        _assert_same(getattr(gp, op)(x, y), _helper_values(helper, None, x, y), "float32")
        h = _every_pattern(np.float16)
        k = np.roll(h, 12345)
        _assert_same(getattr(gp, op)(h, k), _helper_values(helper, "f2", h, k), "float16")


def _kernel_source(op, dtype, policy="torch"):
    """The generated code, without the docstring listing the IR (torch: a narrow input keeps its dtype)."""
    x = np.ones(3, dtype)
    return source(plan_for(op, [x] * op_named(op).arity, policy)).split('Do not edit."""')[1]


@pytest.mark.parametrize("helper,op", [*UNARY_OPS.items(), *BINARY_OPS.items()], ids=[*UNARY_OPS.values(), *BINARY_OPS.values()])
def test_straight_line_calls_are_written_inline_the_others_stay_calls(helper, op):
    real = UNARY[helper][0] if helper in UNARY else BINARY[helper]
    f32, f64 = _kernel_source(op, np.float32), _kernel_source(op, np.float64)
    assert (f"{helper}(" not in f32) == is_straight(f"gpm_{real}_f32"), f32
    assert (f"{helper}(" not in f64) == is_straight(f"gpm_{real}_f64"), f64
    narrow = _kernel_source(op, ml_dtypes.bfloat16)
    assert (f"{helper}_bf(" not in narrow) == is_straight(f"gpm_{real}_wide"), narrow


def test_most_float32_functions_are_inlined():
    ops = {**UNARY_OPS, **BINARY_OPS}
    inlined = sorted(op for helper, op in ops.items() if f"{helper}(" not in _kernel_source(op, np.float32))
    assert len(inlined) >= 24 and {"exp", "tanh", "log", "sigmoid"} <= set(inlined), inlined
