"""The CUDA kernel generator (gpupromote/engines/cuda/source.py), checked without a GPU.

* every generated source compiles with NVRTC for sm_90: each op x (all same-dtype pairs, all
  mixed pairs for add, an array with a folded Python scalar of each kind on either side, a
  folded 0-d host array, where's forms) under every policy, deduplicated by kernel, in the
  contiguous vectorized and the general strided variant. The whole sweep goes through NVRTC's
  front end (--fdevice-syntax-only: parsing, overload resolution and template instantiation:
  every C++ error), and a representative subset per op (one plan per compute / result / input
  storage combination) through the whole pipeline down to SASS, which also checks the inline PTX;
* the PTX of the contiguous kernel uses 16-byte vector loads and stores and no flush-to-zero;
* the host-side layout code of the launcher (coalescing, broadcast strides), the storage dtypes,
  and that the CUDA module imports without CuPy.
"""
from __future__ import annotations

import functools
import re
import subprocess
import sys

import numpy as np
import pytest

from gpupromote.tools import cli
from gpupromote.core import dtypes as D
from gpupromote.dispatch.api import plan_for, spec
from gpupromote.engines.cuda import source as S
from gpupromote.engines.cuda import nvrtc as N
from gpupromote.core.ops import OPS
from gpupromote.promotion.policies import policy_names
from gpupromote.promotion.resolve import Operand, resolve

_ok, _why = N.nvrtc_available()
needs_nvrtc = pytest.mark.skipif(not _ok, reason=f"NVRTC unavailable: {_why}")

_SCALARS = (True, 3, 1.5, 2j)


def _array(d):
    return Operand(D.dtype(d), "array")


def operand_sweep(op: str):
    """The operand lists the sweep resolves for ``op``: same-dtype pairs, every mixed pair for
    add, a folded Python scalar of each kind on either side, a folded 0-d host array; where:
    (bool, x, x) and (bool, x, scalar). Shared with tests/gpu/test_gpu_engine.py."""
    combos = []
    for d in D.ALL:
        if op == "where":
            combos.append([_array("bool"), _array(d), _array(d)])
            combos += [[_array("bool"), _array(d), Operand(None, "scalar", v)] for v in _SCALARS]
            combos.append([Operand(None, "scalar", True), _array(d), _array(d)])
            continue
        combos.append([_array(d), _array(d)])
        combos += [[_array(d), Operand(None, "scalar", v)] for v in _SCALARS]
        combos += [[Operand(None, "scalar", v), _array(d)] for v in _SCALARS]
        combos.append([_array(d), Operand(D.dtype(d), "zero-dim")])
        if op == "add":
            combos += [[_array(d), _array(e)] for e in D.ALL if e is not d]
    return combos


@functools.lru_cache(maxsize=None)
def sweep_plans(op: str):
    """(plans by kernel name, unsupported plans) for ``op`` over every policy."""
    plans, unsupported = {}, []
    for pol in policy_names():
        for operands in operand_sweep(op):
            try:
                plan = resolve(pol, op, operands)
            except (TypeError, ValueError, OverflowError):
                continue  # the policy refuses these operands: no kernel
            if S.unsupported(plan):
                unsupported.append(plan)
                continue
            plans.setdefault(S.kernel_name(plan, ("contig", 0)), plan)
    return plans, unsupported


_NARROW_CODES = ("f2", "bf", "e4", "e5", "c4")


# Ops whose kernels carry the owned math library (a few thousand lines of double-double code each):
# ptxas takes seconds per copy, so their representatives are one per compute kind; the narrow
# loads and stores are every other op's representatives, and every source compiles (syntax only)
# in test_every_kernel_compiles.
_LIBRARY_OPS = {"power", "arctan2", "hypot", "logaddexp"}


def _representatives(plans):
    """One plan per (compute kind, narrow storage type it touches): every way a value enters and
    leaves the compute type, with the inline-PTX conversions of float16 / bfloat16."""
    reps = {}
    for plan in sorted(plans.values(), key=lambda p: S.kernel_name(p, ("contig", 0))):
        codes = [d.code for d, f in zip(plan.inputs, plan.folded) if not f] + [plan.result.code]
        narrow = "-" if plan.op in _LIBRARY_OPS else next((c for c in codes if c in _NARROW_CODES), "-")
        kind = plan.compute.code if plan.compute.kind in "fc" else plan.compute.kind
        reps.setdefault((kind, narrow, any(plan.folded)), plan)
    return list(reps.values())


def _compile(items, *, syntax_only):
    src = S.translation_unit(items)
    options = S.NVRTC_OPTIONS + (("--fdevice-syntax-only",) if syntax_only else ())
    any_complex = any(S.needs_complex(p) for p, _ in items)
    return N.compile_cuda(src, options=options, include_cupy=any_complex, cubin=not syntax_only)


def _variants(plan):
    return [("contig", S.vector_width(plan)), ("strided", 2, 64)]


# ---------------------------------------------------------------------------------------------
# Every generated source compiles

@pytest.mark.nvrtc
@needs_nvrtc
@pytest.mark.parametrize("op", list(OPS))
def test_every_kernel_compiles(op):
    plans, _ = sweep_plans(op)
    assert plans, f"no policy admits any sweep operands for {op}"
    items = [(p, v) for p in plans.values() for v in _variants(p)]
    _compile(items, syntax_only=True)


@pytest.mark.nvrtc
@needs_nvrtc
@pytest.mark.parametrize("op", list(OPS))
def test_representative_kernels_compile_to_sass(op):
    plans, _ = sweep_plans(op)
    reps = _representatives(plans)
    items = [(p, ("contig", S.vector_width(p))) for p in reps] + [(reps[0], ("strided", 2, 64))]
    cubin = _compile(items, syntax_only=False)
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.nvrtc
@needs_nvrtc
def test_every_variant_compiles_to_sass():
    """The variants the sweep does not build: contiguous without vector loads, 32-bit strided,
    rank 1 and rank 5, on plans with narrow, complex and folded operands."""
    plans = [plan_for("add", [spec("float16"), spec("float32")], policy="torch"),
             plan_for("multiply", [spec("bfloat16"), 2.5], policy="torch"),
             plan_for("true_divide", [spec("complex64"), spec("float8_e4m3fn")], policy="numpy"),
             plan_for("where", [spec("bool"), spec("int8"), 1.5], policy="numpy"),
             plan_for("less", [spec("complex128"), spec("complex128")], policy="numpy")]
    variants = [("contig", 1), ("strided", 1, 32), ("strided", 1, 64), ("strided", 5, 32), ("strided", 5, 64)]
    cubin = _compile([(p, v) for p in plans for v in variants], syntax_only=False)
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.nvrtc
@needs_nvrtc
def test_cast_kernels_compile():
    """copyto's astype kernels, every dtype to every dtype."""
    items = [(S.cast_plan(a, b), v) for a in D.ALL for b in D.ALL for v in (("contig", 4), ("strided", 2, 64))]
    _compile(items, syntax_only=True)
    _compile([(S.cast_plan(a, b), ("contig", 4)) for a, b in
              [("float64", "float16"), ("bfloat16", "float8_e5m2"), ("complex32", "float32"),
               ("int64", "bfloat16"), ("complex128", "complex32"), ("float32", "bool")]], syntax_only=False)


def test_unsupported_plans_are_policy_extensions():
    """A plan has no kernel only where a policy admits a compute kind that core/ops.py's accepts
    column (and the helpers) do not cover: say so clearly, never generate broken code."""
    for op in OPS:
        _, unsupported = sweep_plans(op)
        for plan in unsupported:
            why = S.unsupported(plan)
            assert plan.compute.kind not in OPS[op].accepts or "not a compute dtype" in why, (plan, why)
            with pytest.raises(S.UnsupportedPlan, match=op):
                S.kernel_code(plan, ("contig", 1))


# ---------------------------------------------------------------------------------------------
# What the generated code looks like

def test_kernel_names_are_identifiers_and_share_folded_plans():
    torch_plan = plan_for("multiply", [spec("float16"), 1e-8], policy="torch")
    name = S.kernel_name(torch_plan, ("contig", 8))
    assert re.fullmatch(r"gp_multiply_f2_s_rf2_[0-9a-f]{12}_v8", name), name
    assert S.kernel_name(torch_plan, ("strided", 3, 32)).endswith("_s3_32")
    # the kernel sees a folded scalar's value only: an int and a float scalar kept in float32 share it
    assert S.kernel_name(plan_for("multiply", [spec("float16"), 3], policy="torch"), ("contig", 8)) == name
    for op in OPS:
        for name in sweep_plans(op)[0]:
            assert re.fullmatch(r"[A-Za-z_]\w*", name)


@pytest.mark.parametrize("dtypes, width", [
    (("float32", "float32"), 4),      # 16 bytes of float32
    (("float16", "float32"), 8),      # 16 bytes of the float16 operand, 32 of the float32
    (("int8", "float32"), 16),
    (("int8", "float64"), 8),         # at most 64 bytes of the widest operand per thread
    (("complex128", "complex128"), 1),
    (("bfloat16", "bfloat16"), 8),
])
def test_vector_width(dtypes, width):
    plan = plan_for("add", [spec(d) for d in dtypes], policy="torch")
    assert S.vector_width(plan) == width


def test_folded_scalar_is_a_by_value_parameter_in_compute_precision():
    plan = plan_for("multiply", [spec("float16"), 1e-8], policy="torch")  # opmath: kept in float32
    assert plan.folded == (False, True) and plan.compute == "float32"
    src = S.kernel_source(plan, ("contig", S.vector_width(plan)))
    assert "float s1;  // operand 1: folded" in src and "long long n, float s1, unsigned short* __restrict__ y" in src
    assert "const unsigned short* __restrict__ x0" in src and not re.search(r"\bx1\b", src)
    assert "const float v0 = gp_ld_f2(x0);" in src
    assert "const float v1 = (float)(v0 * s1);" in src and "return gp_st_f2(v1);" in src  # one rounding
    assert S.scalar_parameters(plan) == [(1, "float", False)]


def test_complex_scalar_is_split_into_parts():
    plan = plan_for("add", [spec("complex64"), 1j], policy="numpy")
    assert S.scalar_parameters(plan) == [(1, "float", True)]
    src = S.kernel_source(plan, ("contig", 2))
    assert "float s1_re, float s1_im" in src and "complex<float>(s1_re, s1_im)" in src


@pytest.mark.parametrize("op, dtypes, policy, expr", [
    ("where",         ("bool", "int8", "int8"),        "numpy", "gp_select(in0, in1, in2)"),
    ("logical_and",   ("complex64", "complex64"),      "numpy", "gp_truth(in0) & gp_truth(in1)"),
    ("less",          ("complex64", "complex64"),      "numpy", "gp_clt(in0, in1)"),
    ("true_divide",   ("complex128", "complex128"),    "numpy", "gp_cdiv(in0, in1)"),
    ("nextafter",     ("float16", "float16"),          "numpy", "gp_nextafter_f2(in0, in1)"),
    ("floor_divide",  ("int32", "int32"),              "jax",   "gp_floor_divide_xla(in0, in1)"),
    ("add",           ("int32", "int32"),              "numpy", "gp_wrap_add(in0, in1)"),
    ("add",           ("bool", "bool"),                "numpy", "in0 | in1"),
    ("power",         ("float32", "float32"),          "numpy", "gp_powerf(in0, in1)"),
    ("power",         ("bfloat16", "bfloat16"),        "torch", "gp_powerf_bf(in0, in1)"),
    ("sign",          ("float32",),                    "torch", "gp_sign_torch(in0)"),
    ("exp",           ("float16",),                    "numpy", "gp_exp_f2(in0)"),
], ids=lambda x: x if isinstance(x, str) and " " not in x and "(" not in x else None)
def test_one_expression_table_feeds_both_generators(op, dtypes, policy, expr):
    """core/ops.py chooses the expression for the compute dtype; the CUDA and the Numba generator
    both write that text (argument names substituted), and neither has a table of its own."""
    from gpupromote.engines.cpu import engine as cpu_numba
    from gpupromote.core.ops import op_named
    plan = plan_for(op, [spec(d) for d in dtypes], policy=policy)
    assert op_named(op).expression(plan.compute, plan.result, plan.int_division, plan.values) == expr
    kernel = S.as_kernel(plan)
    (node,) = [n for n in kernel.steps() if getattr(n, "op", None) == plan.op]
    assert node.expr == expr
    head = expr.split("(")[0] if "(" in expr else None
    for generated in (S.kernel_source(plan, ("contig", 1)), cpu_numba.source(plan)):
        assert (head + "(") in generated if head else expr.replace("in0", "").strip()[:2] in generated


def test_where_condition_is_read_as_bool():
    plan = plan_for("where", [spec("bool"), spec("float16"), 2.0], policy="torch")
    src = S.kernel_source(plan, ("strided", 2, 64))
    assert "gp_select(gp_ld_b1(x0), v0, s2)" in src
    assert "unsigned char*>(x0 + o_x0)" in src


def test_strided_kernel_parameters():
    plan = plan_for("add", [spec("int8"), spec("float32")], policy="numpy")
    src = S.kernel_source(plan, ("strided", 2, 32))
    sig = re.search(r'extern "C" __global__ void \w+\(([^)]*)\)', src).group(1)
    assert [p.split()[-1] for p in sig.split(", ")] == [
        "n", "y", "x0", "x1", "d0", "d1", "ys0", "ys1", "x0s0", "x0s1", "x1s0", "x1s1"]
    assert "typedef int I;" in src


@pytest.mark.nvrtc
@needs_nvrtc
@pytest.mark.parametrize("dtypes", [("float16", "float32"), ("int8", "float32"), ("float32", "float32"),
                                    ("bfloat16", "float32")])
def test_contiguous_kernel_uses_vector_loads_and_no_ftz(dtypes):
    plan = plan_for("add", [spec(d) for d in dtypes], policy="torch")
    ptx = N.compile_cuda(S.kernel_source(plan, ("contig", S.vector_width(plan))), options=S.NVRTC_OPTIONS).decode()
    loads = re.findall(r"ld\.global\.nc\.(v\d)\.\w+", ptx)
    stores = re.findall(r"st\.global\.(v\d)\.\w+", ptx)
    assert loads and set(loads) == {"v4"}, loads       # every vector-loop load is 16 bytes
    assert stores and set(stores) <= {"v4", "v2"}, stores
    assert ".ftz" not in ptx                           # float32 subnormals survive, as on the CPU
    assert "add.rn.f32" in ptx or "add.f32" in ptx


@pytest.mark.nvrtc
@needs_nvrtc
def test_strided_kernel_has_no_vector_loads():
    plan = plan_for("add", [spec("float16"), spec("float32")], policy="torch")
    ptx = N.compile_cuda(S.kernel_source(plan, ("strided", 3, 64)), options=S.NVRTC_OPTIONS).decode()
    assert "ld.global" in ptx and not re.search(r"ld\.global(\.nc)?\.v\d", ptx)


# ---------------------------------------------------------------------------------------------
# The CLI

def test_cmd_kernels_prints_a_compilable_source(capsys):
    assert cli.main(["kernels", "--op", "add", "--dtypes", "float16,float32", "--policy", "torch"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"gp_add_f2_f4_rf4_[0-9a-f]{12}_v8", out) and "gp_contig_loop<8>" in out
    assert cli.main(["kernels", "--op", "mul", "--dtypes", "float16,float32", "--policy", "torch", "--scalar"]) == 0
    out = capsys.readouterr().out
    assert "float s1" in out and "gp_st_f2" in out
    if _ok:
        src = out[out.index("// generated by"):]
        N.compile_cuda(src, options=S.NVRTC_OPTIONS + ("--fdevice-syntax-only",))


# ---------------------------------------------------------------------------------------------
# Host-side pieces of the CUDA backend (no GPU needed)

def test_cuda_module_imports_without_cupy():
    code = ("import sys; sys.modules['cupy'] = None\n"
            "from gpupromote.engines.cuda import engine as c\n"
            "ok, why = c.available(); assert not ok and 'CuPy' in why, why\n"
            "import numpy as np; assert c.storage_dtype('float8_e5m2') == np.uint8\n"
            "print('fine')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "fine" in done.stdout, done.stderr


def test_storage_dtypes():
    from gpupromote.engines.cuda import engine as c
    assert c.storage_dtype("float8_e4m3fn") == np.uint8
    assert c.storage_dtype("complex32") == np.uint32
    assert c.storage_dtype("bfloat16") in (D.bfloat16.numpy, np.dtype(np.uint16))
    for d in D.ALL:
        assert c.storage_dtype(d).itemsize == d.itemsize  # kernels address elements by itemsize


def _offsets(shape, extents, strides):
    """Byte offsets of every element in C order, from the coalesced layout."""
    idx = np.arange(int(np.prod(shape)))
    off = np.zeros_like(idx)
    for e, s in zip(reversed(extents), reversed(strides)):
        off += (idx % e) * s
        idx //= e
    return off


@pytest.mark.parametrize("make", [
    lambda: (np.ones((4, 5, 6), np.float32), np.ones((5, 1), np.int8)),            # broadcast
    lambda: (np.ones((6, 8), np.float32)[:, ::-2], np.ones((6, 4), np.int16)),       # negative strides
    lambda: (np.ones((3, 4, 5), np.float64).transpose(2, 0, 1), np.float32(1) * np.ones((5, 3, 4))),
    lambda: (np.ones((1, 7, 1, 3), np.uint8), np.ones((7, 3), np.uint8)),            # extent-1 dims
    lambda: (np.ones((2, 3, 4), np.float32), np.ones((2, 3, 4), np.float32)),        # fully contiguous
])
def test_coalesced_layout_addresses_every_element(make):
    from gpupromote.engines.cuda.launch import _broadcast_strides, _coalesce
    a, b = make()
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape, np.float64)
    extents, strides = _coalesce(shape, [list(out.strides), _broadcast_strides(a, shape), _broadcast_strides(b, shape)])
    assert int(np.prod(extents)) == out.size
    ixs = np.indices(shape).reshape(len(shape), -1)
    for arr, st in zip((out, a, b), strides):
        full = np.broadcast_to(arr, shape)  # numpy's own addressing: sum(index[d] * strides[d])
        numpy_off = (ixs * np.array(full.strides)[:, None]).sum(axis=0)
        assert np.array_equal(_offsets(shape, extents, st), numpy_off)
    if a.flags.c_contiguous and b.flags.c_contiguous and a.shape == b.shape:
        assert len(extents) == 1


@pytest.mark.nvrtc
@needs_nvrtc
@pytest.mark.parametrize("binding", ["cuda-bindings", "cupy"])
def test_runtime_compile_path_produces_sass_through_either_binding(binding, monkeypatch):
    """The CUDA engine compiles through _nvrtc.compile_cuda, the function the tests here use, with either
    NVRTC binding (a GPU box may have CuPy's and not cuda-bindings); that path needs no GPU."""
    pytest.importorskip("cuda.bindings.nvrtc" if binding == "cuda-bindings" else "cupy_backends.cuda.libs.nvrtc")
    from gpupromote.engines.cuda import modules as c
    monkeypatch.setenv("GP_NVRTC_BINDING", binding)
    N._binding.cache_clear()
    try:
        assert N.nvrtc_binding() == binding
        plan = plan_for("add", [spec("bfloat16"), spec("float32")], policy="torch")
        cubin = c._compile(S.kernel_source(plan, ("contig", 8)), False, "sm_90", True, "t.cu")
        assert cubin[:4] == b"\x7fELF"
        ptx = c._compile(S.kernel_source(plan, ("contig", 8)), False, "compute_90", False, "t.cu")
        assert f".entry {S.kernel_name(plan, ('contig', 8))}".encode() in ptx
        with pytest.raises(N.CudaCompileError, match="error"):
            c._compile("this is not C++", False, "sm_90", True, "bad.cu")
    finally:
        N._binding.cache_clear()


@pytest.mark.nvrtc
@needs_nvrtc
def test_one_cache_key_covers_what_shapes_the_binary(monkeypatch):
    """_nvrtc.cache_key, the engine's file name for a compiled source, changes with the source, the
    options, the arch, cubin vs PTX, the NVRTC version, the headers' text, and for PTX the driver."""
    src = 'extern "C" __global__ void k(int* p) { *p = 1; }'
    base = N.cache_key(src, arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS)
    assert base == N.cache_key(src, arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS)
    others = [N.cache_key(src + " ", arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS),
              N.cache_key(src, arch="sm_90", cubin=True, options=()),
              N.cache_key(src, arch="sm_80", cubin=True, options=S.NVRTC_OPTIONS),
              N.cache_key(src, arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS, include_cupy=True),
              N.cache_key(src, arch="compute_90", cubin=False, options=S.NVRTC_OPTIONS, driver_version=13000),
              N.cache_key(src, arch="compute_90", cubin=False, options=S.NVRTC_OPTIONS, driver_version=13010)]
    assert len({base, *others}) == 1 + len(others)
    with pytest.raises(ValueError, match="driver_version"):
        N.cache_key(src, arch="compute_90", cubin=False)
    monkeypatch.setattr(N, "nvrtc_version", lambda: (99, 0))
    assert N.cache_key(src, arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS) != base
    monkeypatch.undo()
    N._headers_digest.cache_clear()
    monkeypatch.setattr(N, "_headers_digest", lambda include_cupy: "edited headers")
    assert N.cache_key(src, arch="sm_90", cubin=True, options=S.NVRTC_OPTIONS) != base


@pytest.mark.nvrtc
def test_precompile_builds_translation_units_in_parallel_into_the_disk_cache(tmp_path, monkeypatch):
    """precompile's compile phase (spawned workers, one NVRTC call per unit of kernels, cubins
    written to $CUPY_CACHE_DIR/gpupromote) with the device faked: only the module load needs one."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    import os
    import types
    from gpupromote.engines.cuda import device as _cuda_device
    from gpupromote.engines.cuda import modules as c
    fake = types.SimpleNamespace(__version__="test", cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0)))
    monkeypatch.setattr(_cuda_device, "_cp", fake)
    monkeypatch.setattr(c, "_kernels", {})
    monkeypatch.setitem(c._targets, 0, ("sm_90", True))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    loaded = []

    class Module:
        def __init__(self, source):
            self.source = source

        def get_function(self, name):
            assert f"void {name}(" in self.source
            return name

    def load_module(source, any_complex, device_id):
        loaded.append(os.path.isfile(c._cache_path(source, any_complex, device_id)[0]))
        return Module(source), "disk"

    monkeypatch.setattr(c, "load_module", load_module)
    plans = [plan_for("add", [spec(a), spec(b)], policy="torch") for a, b in
             [("float16", "float32"), ("int8", "int8"), ("bfloat16", "bfloat16"), ("complex64", "float32"),
              ("bool", "bool")]]
    items = [(p, v) for p in plans for v in (("contig", S.vector_width(p)), ("strided", 2, 64))]
    assert c.precompile(items + items[:3], workers=2, group=3) == len(items)
    assert len(loaded) == 4 and all(loaded)  # 8 real + 2 complex kernels: units of <= 3, all on disk
    assert set(c._kernels) == {(0, S.kernel_name(p, v)) for p, v in items}


@pytest.mark.nvrtc
@needs_nvrtc
def test_flush_subnormals_plan_flag():
    """A plan with flush_subnormals (JAX / XLA semantics) flushes every float input and the
    result, like the CPU engine; a plan without the flag flushes nothing."""
    import types
    unflagged = plan_for("multiply", [spec("float32"), 1e-3], policy="numpy")
    assert not S.flushes_subnormals(unflagged) and "gp_ftz" not in S.kernel_source(unflagged, ("contig", 4))
    flagged = plan_for("multiply", [spec("float32"), 1e-3], policy="jax")
    assert flagged.flush_subnormals
    src = S.kernel_source(flagged, ("contig", 4))
    assert "const float v0 = (float)(gp_ftz(x0));" in src and "const float v1 = (float)(gp_ftz(s1));" in src
    assert "const float v2 = (float)(v0 * v1);" in src and "const float v3 = (float)(gp_ftz(v2));" in src
    assert S.flushes_subnormals(flagged) and S.kernel_name(flagged, ("contig", 4)) != S.kernel_name(unflagged, ("contig", 4))
    where = types.SimpleNamespace(**{**vars(plan_for("where", [spec("bool"), spec("complex64"), spec("complex64")],
                                                     policy="jax")), "flush_subnormals": True})
    where_src = S.kernel_source(where, ("contig", 2))
    assert "gp_select(gp_ld_b1(x0), " in where_src and "gp_ftz(gp_ld_b1" not in where_src  # the condition is not a float
    _compile([(flagged, ("contig", 4)), (where, ("strided", 2, 32))], syntax_only=False)


# ---------------------------------------------------------------------------------------------
# Fused chains (gp.fuse) are kernels of the same generator

def fused_kernels():
    """Kernels of chains with every kind of node: narrow intermediates, folded scalars and 0-d
    operands, where, unary ops, complex, integer checks (flags), XLA flushing."""
    import gpupromote as gp
    f = gp.fuse(lambda a, b, c, d, e: a * b + c * d - e)
    g = gp.fuse(lambda x, y: gp.where(x > y, -(x // y), abs(x) % 3) + 2.5)
    h = gp.fuse(lambda z, w: (z * w - 1j) / (w + 1))
    cuda = lambda d, n=1: spec(d, n, "cuda")  # noqa: E731
    return [f.kernel(*[cuda("float16")] * 5, policy="numpy"),
            f.kernel(cuda("bfloat16"), cuda("int8"), cuda("float32", 0), cuda("float16"), cuda("uint8"),
                     policy="torch"),
            g.kernel(cuda("int32"), cuda("int64"), policy="numpy"),
            g.kernel(cuda("int32"), cuda("int8"), policy="torch"),
            g.kernel(cuda("float32"), cuda("float32"), policy="jax"),
            h.kernel(cuda("complex64"), cuda("float16"), policy="numpy")]


@pytest.mark.nvrtc
@needs_nvrtc
def test_fused_kernels_compile_to_sass():
    kernels = fused_kernels()
    assert any(k.checks for k in kernels) and any(len(k.steps()) > 12 for k in kernels)
    for k in kernels:
        assert "gp_flags" in S.kernel_source(k, ("contig", 1)) or not k.checks
    _compile([(k, v) for k in kernels for v in (("contig", S.vector_width(k)), ("strided", 2, 64))],
             syntax_only=False)


def test_a_float16_chain_rounds_between_steps_with_one_helper():
    """Each step of a float16 chain is rounded to float16 and back (eager stores every result), by
    gp_round_f2: the hardware round trip with a NaN's bits selected, no branch (a fused float16
    GELU's SASS went 4,096 -> 1,752 instructions with it and the branch-free loads and stores)."""
    import numpy as np
    import gpupromote as gp
    fused = gp.fuse(lambda a, b: gp.exp(a * b) + a, policy="torch")
    x = np.ones(4, np.float16)
    src = S.kernel_source(fused.kernel(x, x), ("contig", 1))
    assert src.count("gp_round_f2(") == 2, src   # a * b and exp(...) rounded; the sum is stored
    assert "gp_ld_f2(gp_st_f2(" not in src
