"""Every generated CUDA reduction source (engines/cuda/reduce.py) compiles with NVRTC: each
reduction op under every policy, on every dtype the policy gives a plan for (one translation
unit per op, syntax only), and a representative set down to SASS."""
from __future__ import annotations

import pytest

import gpupromote as gp
from gpupromote.core import dtypes as D
from gpupromote.core.ops import REDUCTION_OPS
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cuda import nvrtc as N
from gpupromote.engines.cuda import reduce as R
from gpupromote.engines.cuda import source as S
from gpupromote.kernel.reduce import reduction_of, stages_of

pytestmark = pytest.mark.nvrtc
_ok, _why = N.nvrtc_available()
needs_nvrtc = pytest.mark.skipif(not _ok, reason=f"NVRTC unavailable: {_why}")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128", "float8_e4m3fn"]


def reductions_of(op):
    """{Reduction text: Reduction} of ``op`` over every policy and dtype it admits."""
    out = {}
    for policy in gp.policies():
        for dt in DTYPES:
            try:
                plan = plan_for(op, [gp.spec(dt)], policy)
            except Exception:   # noqa: BLE001 - the policy refuses it
                continue
            for stage in stages_of(op):
                red = reduction_of(plan, stage)
                out.setdefault(red.text, red)
    return list(out.values())


def _compile(reds, syntax_only=True):
    src = R.reduction_source(reds)
    options = S.NVRTC_OPTIONS + (("--fdevice-syntax-only",) if syntax_only else ())
    any_complex = "cupy/complex.cuh" in src
    return N.compile_cuda(src, options=options, include_cupy=any_complex, cubin=not syntax_only)


@needs_nvrtc
@pytest.mark.parametrize("op", list(REDUCTION_OPS))
def test_every_reduction_compiles(op):
    reds = reductions_of(op)
    assert reds, f"no policy gives a plan for {op}"
    _compile(reds)


@needs_nvrtc
def test_representative_reductions_compile_to_sass():
    reds = [reduction_of(plan_for(op, [gp.spec(dt)], "numpy"), stage)
            for op, dt in (("sum", "float32"), ("mean", "float16"), ("var", "complex64"), ("argmax", "float32"),
                           ("cumsum", "int8"), ("max", "bfloat16"))
            for stage in stages_of(op)]
    cubin = _compile(reds, syntax_only=False)
    assert cubin


def test_kernel_names_are_the_ones_the_source_defines():
    red = reduction_of(plan_for("sum", [gp.spec("float32")], "numpy"))
    src = R.reduction_source(red)
    for name in R.kernel_names(red):
        assert f'extern "C" __global__ void {name}(' in src
    assert D.float32 is red.acc


@needs_nvrtc
def test_reductions_that_keep_their_chain_compile_to_sass():
    """kernel/reduce.py ``kept`` (a staged gp.fuse reduction storing the chain it reduces): every
    fused combine on the stored dtypes a chain can end in, down to SASS."""
    from gpupromote.dispatch.reduce import reduction_plan
    from gpupromote.core.ops import op_named
    from gpupromote.kernel import ir
    from gpupromote.kernel.reduce import fused
    reds = []
    for op, dt, policy in (("sum", "float32", "numpy"), ("max", "float16", "torch"), ("mean", "bfloat16", "jax"),
                           ("any", "bool", "numpy"), ("prod", "int8", "numpy"), ("min", "float64", "jax"),
                           ("sum", "complex64", "numpy"), ("all", "float8_e4m3fn", "torch")):
        d = D.dtype(dt)
        x = ir.param(0, d)
        op1 = "logical_not" if d.kind == "b" else "negative"
        chain = ir.Kernel([x], ir.apply(op1, (x,), d, d, op_named(op1).expression(d, d)), label=op1)
        reds.append(fused(chain, reduction_plan(op, d, 2, None, policy), label=f"kept_{op}", keep=True))
    src = R.reduction_source(reds)
    assert src.count("keep + m * keep_sm + k * keep_sk") == len(reds)
    assert _compile(reds, syntax_only=False)
