"""kernels/gpupromote_math.cuh: compiled with NVRTC (no GPU needed) and checked on the host.

* NVRTC: every helper instantiated for every type it accepts, alone, next to cuda_fp16.h /
  cuda_bf16.h / cuda_fp8.h, and inside the exact source CuPy's ElementwiseKernel generates
  (CuPy's headers prepended, CuPy's compile options).
* Host: the same header built with g++ into a shared library (tests/_host_harness) and compared
  with NumPy / ml_dtypes on edge-value grids plus random values; the narrow-float loads are
  checked exhaustively and the stores on every rounding boundary.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cuda import nvrtc as _nvrtc

pytestmark = pytest.mark.nvrtc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(REPO, "kernels", "gpupromote_math.cuh")
HARNESS = os.path.join(REPO, "tests", "_host_harness", "gp_host_harness.cpp")

NVRTC_OK, NVRTC_REASON = _nvrtc.nvrtc_available()
needs_nvrtc = pytest.mark.skipif(not NVRTC_OK, reason=f"NVRTC unavailable: {NVRTC_REASON}")

# ---------------------------------------------------------------------------------------------
# Which helper applies to which type

MINMAX = ["maximum", "minimum", "fmax", "fmin"]
INT_OPS = ["floor_divide", "remainder", "fmod", "power", *MINMAX, "left_shift", "right_shift",
           "floor_divide_xla", "remainder_xla"]
# (float and complex power, atan2, hypot and logaddexp are the owned math library's: the generated
# preamble, engines/cuda/math.py, defines them; tests/kernel/math and the engine sweeps test them)
FLOAT_OPS = ["floor_divide", "remainder", "fmod", *MINMAX, "copysign", "nextafter", "floor_divide_xla",
             "remainder_xla"]
COMPLEX_OPS = [*MINMAX]

# (numpy dtype name, C++ type in a kernel, host harness code, helpers)
INT_TYPES = [
    ("int8", "signed char", "i1"), ("uint8", "unsigned char", "u1"),
    ("int16", "short", "i2"), ("uint16", "unsigned short", "u2"),
    ("int32", "int", "i4"), ("uint32", "unsigned int", "u4"),
    ("int64", "long long", "i8"), ("uint64", "unsigned long long", "u8"),
]
TYPES = (
    [("bool", "bool", "b1", MINMAX)]
    + [(n, c, k, INT_OPS) for n, c, k in INT_TYPES]
    + [("int64", "long", "l8", INT_OPS), ("int8", "char", "c1", INT_OPS)]
    + [("float32", "float", "f4", FLOAT_OPS), ("float64", "double", "f8", FLOAT_OPS)]
    + [("complex64", "complex<float>", "c8", COMPLEX_OPS), ("complex128", "complex<double>", "c16", COMPLEX_OPS)]
)
CONVERSIONS = [("f16", "unsigned short"), ("bf16", "unsigned short"), ("e4m3", "unsigned char"), ("e5m2", "unsigned char")]


def _type_id(t):
    return f"{t[0]}-{t[1].replace(' ', '_').replace('<', '_').replace('>', '')}"


# ---------------------------------------------------------------------------------------------
# NVRTC

# A minimal complex class: the helpers accept any type with real()/imag() and a (re, im)
# constructor, plus exp/log found by argument-dependent lookup.
TEST_COMPLEX = r"""
namespace gptest {
template <class T> struct complex {
  T re, im;
  __host__ __device__ complex(T r = T(0), T i = T(0)) : re(r), im(i) {}
  __host__ __device__ T real() const { return re; }
  __host__ __device__ T imag() const { return im; }
};
template <class T> __host__ __device__ complex<T> operator*(complex<T> a, complex<T> b) {
  return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <class T> __host__ __device__ complex<T> exp(complex<T> z) {
  return complex<T>(::exp(z.re) * ::cos(z.im), ::exp(z.re) * ::sin(z.im));
}
template <class T> __host__ __device__ complex<T> log(complex<T> z) {
  return complex<T>(::log(::hypot(z.re, z.im)), ::atan2(z.im, z.re));
}
}  // namespace gptest
using gptest::complex;
"""


def _all_helpers_kernel(ctype: str, ops: list[str], kname: str) -> str:
    lines = "\n".join(f"  out[{i} * n + i] = gp_{op}(a[i], b[i]);" for i, op in enumerate(ops))
    return textwrap.dedent(f"""
    extern "C" __global__ void {kname}(const {ctype}* a, const {ctype}* b, {ctype}* out, int n) {{
      const int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= n) return;
    """) + lines + "\n}\n"


def _conversions_kernel() -> str:
    body = []
    for k, (fmt, bits) in enumerate(CONVERSIONS):
        body.append(f"""
  {{
    const {bits} h = ({bits})(i & 0xffff);
    float f = gp_load_{fmt}(h);
    double d = gp_load_{fmt}_d(h);
    out_bits[8 * i + {2 * k}] = gp_store_{fmt}(f * x[i]);
    out_bits[8 * i + {2 * k + 1}] = gp_store_{fmt}_d(d * y[i]);
    out_f[4 * i + {k}] = f;
    out_d[4 * i + {k}] = d;
  }}""")
    return ('extern "C" __global__ void gp_conversions(const float* x, const double* y, '
            "unsigned short* out_bits, float* out_f, double* out_d) {\n"
            "  const int i = blockIdx.x * blockDim.x + threadIdx.x;" + "".join(body) + "\n}\n")


@needs_nvrtc
@pytest.mark.parametrize("t", TYPES, ids=_type_id)
def test_nvrtc_every_helper(t):
    name, ctype, _, ops = t
    prelude = TEST_COMPLEX if ctype.startswith("complex") else ""
    kname = "gp_all_" + _type_id(t).replace("-", "_")
    src = "#include <gpupromote_math.cuh>\n" + prelude + _all_helpers_kernel(ctype, ops, kname)
    ptx = _nvrtc.compile_cuda(src, name=f"{kname}.cu", arch="sm_90").decode()
    assert f".entry {kname}" in ptx


@needs_nvrtc
def test_nvrtc_conversions_next_to_cuda_fp_headers():
    # after the CUDA narrow-float headers (no name clashes) and used next to their intrinsics
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n"
           "#include <gpupromote_math.cuh>\n" + _conversions_kernel() + textwrap.dedent("""
    extern "C" __global__ void gp_vs_intrinsics(const float* x, unsigned short* h, unsigned char* q) {
      const int i = threadIdx.x;
      h[2 * i] = gp_store_f16(x[i]);
      h[2 * i + 1] = __half_as_ushort(__float2half_rn(x[i]));
      q[2 * i] = gp_store_e4m3(__bfloat162float(__float2bfloat16_rn(x[i])));
      q[2 * i + 1] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E4M3);
    }
    """))
    ptx = _nvrtc.compile_cuda(src, arch="sm_90").decode()
    assert ".entry gp_conversions" in ptx and ".entry gp_vs_intrinsics" in ptx


@needs_nvrtc
def test_nvrtc_cubin_for_h100():
    t = next(t for t in TYPES if t[0] == "float64")
    src = "#include <gpupromote_math.cuh>\n" + _all_helpers_kernel(t[1], t[3], "gp_all_f8") + _conversions_kernel()
    cubin = _nvrtc.compile_cuda(src, arch="sm_90", cubin=True)
    assert cubin[:4] == b"\x7fELF"


@needs_nvrtc
@pytest.mark.parametrize("call", ["gp_floor_divide(b, b)", "gp_copysign(i, i)", "gp_left_shift(f, f)",
                                  "gp_power(i, f)"])
def test_nvrtc_rejects_inapplicable_types(call):
    src = ("#include <gpupromote_math.cuh>\n"
           'extern "C" __global__ void k(bool b, int i, float f, float* out) {\n'
           f"  *out = (float){call};\n}}\n")
    with pytest.raises(_nvrtc.CudaCompileError) as info:
        _nvrtc.compile_cuda(src, name="bad.cu")
    msg = str(info.value)
    assert "error" in msg and "bad.cu" in msg
    assert f">    3 |   *out = (float){call};" in msg  # the excerpt points at the failing line


# ---- inside CuPy's ElementwiseKernel source ----------------------------------------------

CUPY_EXTRA_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")  # what CuPy adds


def _cupy_internals():
    try:
        import cupy
        import cupy._core._kernel as kernel
        import cupy._core.core as core
        from cupy._core._carray import Indexer

        kernel._get_elementwise_kernel_code, kernel._ArgInfo, kernel._TypeMap  # noqa: B018
        core._cupy_header_list  # noqa: B018
        return cupy, kernel, core, Indexer
    except Exception:  # no cupy, or CuPy internals moved: hand-build the source instead
        return None


def _cupy_headers_reason():
    try:
        _nvrtc.cupy_include_dirs()
        return None
    except Exception as exc:
        return f"CuPy's headers not found: {exc}"


_NO_CUPY_HEADERS = _cupy_headers_reason()
needs_cupy_headers = pytest.mark.skipif(_NO_CUPY_HEADERS is not None, reason=str(_NO_CUPY_HEADERS))


def cupy_elementwise_source(in_params: str, out_params: str, operation: str, dtypes: dict, name: str,
                            use_cupy: bool = True):
    """The source CuPy compiles for ElementwiseKernel(in_params, out_params, operation, name,
    preamble='#include <gpupromote_math.cuh>') on 1-d contiguous arrays, without needing a GPU:
    generated by CuPy itself when its internals are importable (use_cupy), else hand-built."""
    preamble = "#include <gpupromote_math.cuh>"
    internals = _cupy_internals() if use_cupy else None
    if internals is not None:
        cupy, kernel, core, Indexer = internals
        ek = cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)
        type_map = kernel._TypeMap(tuple(dtypes.items()))
        infos = []
        for p in ek.params:
            if p.name == "_ind":
                infos.append(kernel._ArgInfo(2, Indexer, None, 1, True, True))  # ARG_KIND_INDEXER
            else:
                dt = dtypes[p.ctype] if p.dtype is None else p.dtype
                infos.append(kernel._ArgInfo(1, cupy.ndarray, np.dtype(dt).type, 1, True, True))
        code = kernel._get_elementwise_kernel_code(tuple(infos), type_map, ek.params, ek.operation,
                                                   ek.name, ek.preamble)
        return "".join(f"#include <{h}>\n" for h in core._cupy_header_list) + code
    # Fallback: the same shape, hand-built (CuPy's headers, typedefs, CArray parameters).
    cnames = {"bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
              "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
              "int64": "long long", "uint64": "unsigned long long", "float16": "float16",
              "float32": "float", "float64": "double", "complex64": "thrust::complex<float>",
              "complex128": "thrust::complex<double>"}
    typedefs = "".join(f"typedef {cnames[np.dtype(v).name]} {k};\n" for k, v in dtypes.items())
    params, refs = [], []
    for const, plist in ((True, in_params), (False, out_params)):
        for p in plist.split(","):
            t, n = p.split()
            ct = t if t in dtypes else cnames[t]
            params.append(f"{'const ' if const else ''}CArray<{ct}, 1, 1, 1> _raw_{n}")
            refs.append(f"{'const ' if const else ''}{ct} &{n} = _raw_{n}[_ind.get()];")
    head = ("#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n#include <cupy/atomics.cuh>\n"
            "#include <cupy/math_constants.h>\n")
    if "float16" in dtypes.values() or "float16" in in_params + out_params:
        head += '#include "cupy/float16.cuh"\n'
    return (head + typedefs + preamble + f'\nextern "C" __global__ void {name}({", ".join(params)}, '
            f"CIndexer<1, 1> _ind) {{\n  CUPY_FOR(i, _ind.size()) {{\n    _ind.set(i);\n    "
            + "\n    ".join(refs) + f"\n    {operation};\n  }}\n}}\n")


CUPY_TYPES = [t for t in TYPES if t[2] not in ("l8", "c1")]


def _compile_all_helpers_in_cupy_kernel(t, use_cupy):
    name, _, _, ops = t
    outs = ", ".join(f"T z{i}" for i in range(len(ops)))
    operation = "; ".join(f"z{i} = gp_{op}(x, y)" for i, op in enumerate(ops))
    kname = f"gp_cupy_{name}"
    src = cupy_elementwise_source("T x, T y", outs, operation, {"T": np.dtype(name)}, kname, use_cupy)
    ptx = _nvrtc.compile_cuda(src, name=f"{kname}.cu", include_cupy=True, options=CUPY_EXTRA_OPTIONS)
    assert f".entry {kname}" in ptx.decode()


@needs_nvrtc
@needs_cupy_headers
@pytest.mark.parametrize("t", CUPY_TYPES, ids=lambda t: t[0])
def test_nvrtc_inside_cupy_elementwise_kernel(t):
    if _cupy_internals() is None:
        pytest.skip("cupy's kernel-source generator is not importable (see the hand-built test)")
    _compile_all_helpers_in_cupy_kernel(t, use_cupy=True)


@needs_nvrtc
@needs_cupy_headers
@pytest.mark.parametrize("t", [t for t in CUPY_TYPES if t[0] in ("bool", "int8", "uint64", "float32", "complex128")],
                         ids=lambda t: t[0])
def test_nvrtc_inside_handbuilt_cupy_shaped_source(t):
    _compile_all_helpers_in_cupy_kernel(t, use_cupy=False)


@needs_nvrtc
@needs_cupy_headers
def test_nvrtc_inside_cupy_narrow_storage_kernels():
    # float16 arrays through CuPy's own float16 class, computed in float ...
    src = cupy_elementwise_source("T x, T y", "T z", "z = T(gp_fmax(float(x), float(y)))",
                                  {"T": np.dtype("float16")}, "gp_cupy_f16")
    # ... and narrow data kept as raw bits (uint16 / uint8 storage), converted in registers
    src += cupy_elementwise_source(
        "uint16 h, uint16 b, uint8 q, uint8 r", "uint16 h2, uint16 b2, uint8 q2, uint8 r2",
        "h2 = gp_store_f16(gp_maximum(gp_load_f16(h), gp_load_bf16(b))); "
        "b2 = gp_store_bf16_d(gp_copysign(gp_load_bf16_d(b), gp_load_f16_d(h))); "
        "q2 = gp_store_e4m3(gp_fmin(gp_load_e4m3(q), gp_load_e5m2(r))); "
        "r2 = gp_store_e5m2_d(gp_nextafter(gp_load_e5m2_d(r), gp_load_e4m3_d(q)))",
        {}, "gp_cupy_bits").split("#include <gpupromote_math.cuh>", 1)[1]
    ptx = _nvrtc.compile_cuda(src, include_cupy=True, options=CUPY_EXTRA_OPTIONS).decode()
    assert ".entry gp_cupy_f16" in ptx and ".entry gp_cupy_bits" in ptx


def test_cupy_include_dirs_match_cupys_own_options():
    internals = _cupy_internals()
    if internals is None:
        pytest.skip("cupy (or its internal compile helpers) not importable")
    core = internals[2]
    try:
        theirs = [o[2:] for o in core.assemble_cupy_compiler_options(()) if o.startswith("-I")]
    except Exception as exc:  # e.g. CuPy cannot find a CUDA root on this machine
        pytest.skip(f"cupy cannot assemble its compile options here: {exc}")
    ours = list(_nvrtc.cupy_include_dirs())
    norm = [os.path.normpath(p) for p in theirs]
    assert [os.path.normpath(p) for p in ours] == norm[: len(ours)], (ours, theirs)


def test_include_locations():
    assert os.path.samefile(os.path.join(_nvrtc.kernels_dir(), "gpupromote_math.cuh"), HEADER)
    cuda = _nvrtc.cuda_include_dir()
    if cuda is None:
        pytest.skip("no CUDA headers found (nvidia-cuda-runtime wheel or CUDA_PATH)")
    for h in ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h"):
        assert os.path.isfile(os.path.join(cuda, h)), h


# ---------------------------------------------------------------------------------------------
# Host build with g++ and comparison with NumPy / ml_dtypes


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (g++) for the host check")
    out = tmp_path_factory.mktemp("gp_host") / "gp_host_harness.so"
    # -ffp-contract=off: no FMA contraction, like NumPy's own (baseline x86-64) loops
    cmd = [cxx, "-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall", "-Wextra",
           f"-I{os.path.dirname(HEADER)}", HARNESS, "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        pytest.fail(f"host build failed: {' '.join(cmd)}\n{res.stderr}")
    assert "gpupromote_math.cuh" not in res.stderr, f"the header warns under -Wall -Wextra:\n{res.stderr}"
    return ctypes.CDLL(str(out))


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def host_binary(lib, op, code, a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    out = np.empty_like(a)
    getattr(lib, f"gph_{op}_{code}")(_ptr(a), _ptr(b), _ptr(out), ctypes.c_longlong(a.size))
    return out


def host_unary(lib, fn, x, out_dtype):
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, out_dtype)
    getattr(lib, f"gph_{fn}")(_ptr(x), _ptr(out), ctypes.c_longlong(x.size))
    return out


RNG_SEED = 20240611


def _pairs(edges, ra, rb):
    ea, eb = np.meshgrid(edges, edges, indexing="ij")
    return np.concatenate([ea.ravel(), ra]), np.concatenate([eb.ravel(), rb])


def int_grid(dtype):
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    bits = info.bits
    cand = [0, 1, 2, 3, 5, 7, -1, -2, -3, -5, -7, info.min, info.min + 1, info.max, info.max - 1,
            bits - 1, bits, bits + 1, -bits, 31, 32, 63, 64, 100, -100]
    edges = np.array(sorted({v for v in cand if info.min <= v <= info.max}), dtype=dt)
    rng = np.random.default_rng(RNG_SEED + bits)
    n = 20000
    ra = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
    rb = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
    rb[: n // 2] = rng.integers(max(info.min, -4), 70, size=n // 2).astype(dt)  # small divisors / counts
    return _pairs(edges, ra, rb)


def float_grid(dtype):
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    sub = fi.smallest_subnormal
    cand = [0.0, 1.0, 2.0, 0.5, 3.0, 7.5, 0.1, 1e-3, 100.0, 1e10, np.pi, np.inf, np.nan,
            sub, sub * 3, fi.tiny, fi.tiny / 2, fi.max, fi.eps, 1 + fi.eps, 1 - fi.epsneg]
    edges = np.array(cand + [-v for v in cand], dtype=dt)
    edges = np.concatenate([edges, np.array([-0.0], dt)])
    rng = np.random.default_rng(RNG_SEED + dt.itemsize)
    n = 20000
    mag = lambda k: (rng.standard_normal(k) * 10.0 ** rng.uniform(-6, 6, k)).astype(dt)  # noqa: E731
    utype = np.uint32 if dt.itemsize == 4 else np.uint64
    raw = lambda k: rng.integers(0, np.iinfo(utype).max, size=k, dtype=utype, endpoint=True).view(dt)  # noqa: E731
    ints = lambda k: rng.integers(-50, 50, size=k).astype(dt)  # noqa: E731
    ra = np.concatenate([mag(n // 2), raw(n // 4), ints(n // 4)])
    rb = np.concatenate([mag(n // 2), raw(n // 4), ints(n // 4)])
    return _pairs(edges, ra, rb)


def complex_grid(dtype):
    dt = np.dtype(dtype)
    part = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 1e-3, 1e3, np.inf, -np.inf, np.nan])
    re, im = np.meshgrid(part, part, indexing="ij")
    edges = np.empty(re.size, np.complex128)  # 144 values -> 20736 pairs
    edges.real, edges.imag = re.ravel(), im.ravel()  # (re + 1j * im would turn inf into nan)
    rng = np.random.default_rng(RNG_SEED + dt.itemsize)
    n = 10000
    r = lambda: rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n) * 3  # noqa: E731
    ra, rb = r(), r()
    rb[: n // 2] = rng.integers(-5, 6, n // 2)  # integral real exponents: the repeated-multiplication path
    a, b = _pairs(edges, ra, rb)
    return a.astype(dt), b.astype(dt)


def _sign_mag(x):
    u = x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
    top = u.dtype.type(1) << u.dtype.type(8 * x.dtype.itemsize - 1)
    return (u & top) != 0, (u & ~top)


def ulp_diff(got, exp):
    sg, mg = _sign_mag(got)
    se, me = _sign_mag(exp)
    return np.where(sg == se, np.maximum(mg, me) - np.minimum(mg, me), mg + me)


def assert_matches(got, exp, a, b, *, what, ulps=0, zero_tie_any_sign=False):
    if got.dtype.kind in "iub":
        bad = got != exp
    elif got.dtype.kind == "f":
        nan_g, nan_e = np.isnan(got), np.isnan(exp)
        with np.errstate(over="ignore"):
            d = ulp_diff(got, exp)
        bad = (nan_g != nan_e) | (~nan_e & (d > ulps))
        if ulps:  # infinities and zeros must match exactly even with an ulp budget
            bad |= ~nan_e & ((np.isinf(got) != np.isinf(exp)) | ((got == 0) != (exp == 0)))
        if zero_tie_any_sign:
            bad &= ~((a == 0) & (b == 0) & (got == 0) & (exp == 0))
    else:
        raise TypeError(got.dtype)
    if bad.any():
        idx = np.flatnonzero(bad)[:8]
        rows = "\n".join(f"  {what}({a[i]!r}, {b[i]!r}) = {got[i]!r}, numpy: {exp[i]!r}" for i in idx)
        pytest.fail(f"{what}: {bad.sum()} of {bad.size} differ (ulps allowed: {ulps}):\n{rows}")


def info_max(dt):
    return np.iinfo(dt).max


def _numpy_int_expected(op, a, b):
    dt = a.dtype
    signed = dt.kind == "i"
    with np.errstate(all="ignore"):
        if op in ("floor_divide", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin",
                  "left_shift", "right_shift"):
            return getattr(np, op)(a, b), None
        if op == "remainder_xla":
            return np.remainder(a, b), None
        if op == "floor_divide_xla":
            by_zero = np.full_like(a, info_max(dt)) if not signed else np.where(a == 0, -1, -2).astype(dt)
            return np.where(b == 0, by_zero, np.floor_divide(a, b)), None
        if op == "power":
            # NumPy raises for negative integer exponents; the helper gives 1 / +-1 / 0 instead
            neg = (b < 0) if signed else np.zeros(a.shape, bool)
            exp = np.power(a, np.where(neg, 0, b).astype(dt))
            if not signed:
                return exp, None
            odd = (b.astype(np.int64) & 1) == 1
            neg_val = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(dt)
            return np.where(neg, neg_val, exp), None
    raise KeyError(op)


FLOAT_NUMPY = {"floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod,
               "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax,
               "fmin": np.fmin, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
               "logaddexp": np.logaddexp, "nextafter": np.nextafter,
               "floor_divide_xla": np.floor_divide, "remainder_xla": np.remainder}
# libm-backed functions get 1 ulp; everything else must be bit-exact (NaN payloads aside).
FLOAT_ULPS = {"power": 1, "atan2": 1, "hypot": 1, "logaddexp": 1}
# NumPy 2's float32 arctan2 takes an AVX-512 (SVML) path on x86 that is up to 3 ulp away from the
# correctly rounded result, so there the helper is checked within 1 ulp of the float64 result
# rounded to float32, and against NumPy with NumPy's own error added.
NUMPY_F32_EXTRA_ULPS = {"atan2": 3}

HOST_INT_CASES = [(n, code) for n, _, code in INT_TYPES] + [("int64", "l8"), ("int8", "c1")]


@pytest.mark.parametrize("dtype,code", HOST_INT_CASES, ids=[f"{n}-{c}" for n, c in HOST_INT_CASES])
def test_host_integer_helpers_match_numpy(host, dtype, code):
    a, b = int_grid(dtype)
    for op in INT_OPS:
        exp, _ = _numpy_int_expected(op, a, b)
        assert_matches(host_binary(host, op, code, a, b), exp, a, b, what=f"gp_{op}<{dtype}>")


def test_host_integer_special_cases(host):
    i32 = np.iinfo(np.int32)
    a = np.array([i32.min, i32.min, i32.min, 7, -7, 0, 1, -1], np.int32)
    b = np.array([-1, -1, 0, 0, 0, 0, 0, 0], np.int32)
    assert host_binary(host, "floor_divide", "i4", a, b).tolist() == [i32.min, i32.min, 0, 0, 0, 0, 0, 0]
    assert host_binary(host, "remainder", "i4", a, b).tolist() == [0] * 8
    # JAX: jnp.floor_divide(1, 0) == -2 (int32), jnp.floor_divide(0, 0) == -1, x % 0 == 0
    assert host_binary(host, "floor_divide_xla", "i4", a, b).tolist() == [i32.min, i32.min, -2, -2, -2, -1, -2, -2]
    assert host_binary(host, "remainder_xla", "i4", a, b).tolist() == [0] * 8
    u = np.array([1, 0, 255], np.uint8)
    assert host_binary(host, "floor_divide_xla", "u1", u, np.zeros(3, np.uint8)).tolist() == [255] * 3
    p = host_binary(host, "power", "i1", np.array([1, -1, -1, 2, 0, 3], np.int8), np.array([-3, -3, -4, -1, -1, 5], np.int8))
    assert p.tolist() == [1, -1, 1, 0, 0, -13]


def test_host_bool_helpers(host):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    for op in MINMAX:
        assert_matches(host_binary(host, op, "b1", a, b), getattr(np, op)(a, b), a, b, what=f"gp_{op}<bool>")


@pytest.mark.parametrize("dtype,code", [("float32", "f4"), ("float64", "f8")])
def test_host_float_helpers_match_numpy(host, dtype, code):
    a, b = float_grid(dtype)
    for op in FLOAT_OPS:
        got = host_binary(host, op, code, a, b)
        ulps = FLOAT_ULPS.get(op, 0)
        with np.errstate(all="ignore"):
            exp = FLOAT_NUMPY[op](a, b)
            if dtype == "float32" and op in NUMPY_F32_EXTRA_ULPS:
                ref = FLOAT_NUMPY[op](a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
                assert_matches(got, ref, a, b, what=f"gp_{op}<float32> vs float64 rounded", ulps=ulps)
                ulps += NUMPY_F32_EXTRA_ULPS.get(op, 0)
        assert_matches(got, exp, a, b, what=f"gp_{op}<{dtype}>", ulps=ulps,
                       zero_tie_any_sign=op in ("fmax", "fmin"))


@pytest.mark.parametrize("dtype,code", [("complex64", "c8"), ("complex128", "c16")])
def test_host_complex_helpers_match_numpy(host, dtype, code):
    a, b = complex_grid(dtype)
    for op in COMPLEX_OPS:
        got = host_binary(host, op, code, a, b)
        with np.errstate(all="ignore"):
            exp = getattr(np, op)(a, b)
        for part in ("real", "imag"):
            g, e = getattr(got, part), getattr(exp, part)
            ra, rb = getattr(a, part), getattr(b, part)
            if op == "power":
                # The helper is the CPU engine's formula (npy_cpow's special cases, exp(b log a) in
                # double with the Annex G product), so the CPU engine is the reference, bit for bit;
                # NumPy's cpow(f) rounds differently (checked against NumPy in test_cpu_engine).
                with np.errstate(all="ignore"):
                    cpu = getattr(np.asarray(gp.power(a, b, policy="numpy")), part)
                bad = ~((np.isnan(g) & np.isnan(cpu)) | (g == cpu))
                if bad.any():
                    i = np.flatnonzero(bad)[:8]
                    pytest.fail(f"gp_power<{dtype}> {part}: {bad.sum()} differ from the CPU engine, e.g. "
                                f"{list(zip(a[i], b[i], got[i], cpu[i]))}")
            else:
                assert_matches(g, e, ra, rb, what=f"gp_{op}<{dtype}>.{part}")


# ---- narrow floats: loads exhaustively, stores on every rounding boundary ---------------------

def _narrow_dtypes():
    import ml_dtypes

    return {"f16": (np.dtype(np.float16), np.uint16), "bf16": (np.dtype(ml_dtypes.bfloat16), np.uint16),
            "e4m3": (np.dtype(ml_dtypes.float8_e4m3fn), np.uint8), "e5m2": (np.dtype(ml_dtypes.float8_e5m2), np.uint8)}


@pytest.mark.parametrize("fmt", [c[0] for c in CONVERSIONS])
def test_host_narrow_loads_exhaustive(host, fmt):
    pytest.importorskip("ml_dtypes")
    ndt, utype = _narrow_dtypes()[fmt]
    bits = np.arange(np.iinfo(utype).max + 1, dtype=np.int64).astype(utype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp_f = bits.view(ndt).astype(np.float32)
        exp_d = bits.view(ndt).astype(np.float64)
    got_f = host_unary(host, f"load_{fmt}", bits, np.float32)
    got_d = host_unary(host, f"load_{fmt}_d", bits, np.float64)
    # bit-exact, NaN sign and payload included
    np.testing.assert_array_equal(got_f.view(np.uint32), exp_f.view(np.uint32), err_msg=f"gp_load_{fmt}")
    np.testing.assert_array_equal(got_d.view(np.uint64), exp_d.view(np.uint64), err_msg=f"gp_load_{fmt}_d")


def _store_candidates(ndt, utype, wide):
    """Every narrow value, every midpoint between neighbours, and the midpoints' neighbours in
    the wide type, plus random bit patterns and random magnitudes, all in the wide dtype."""
    wide = np.dtype(wide)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = np.arange(np.iinfo(utype).max + 1, dtype=np.int64).astype(utype).view(ndt).astype(np.float64)
    vals = np.unique(vals[np.isfinite(vals)])
    mids = (vals[:-1] + vals[1:]) / 2  # exact in float64
    top = vals[-1] + (vals[-1] - vals[-2]) / 2  # the overflow boundary
    base = np.concatenate([vals, mids, [top, -top]]).astype(wide)
    near = np.concatenate([base, np.nextafter(base, wide.type(np.inf)), np.nextafter(base, wide.type(-np.inf))])
    rng = np.random.default_rng(RNG_SEED)
    uw = np.uint32 if wide.itemsize == 4 else np.uint64
    raw = rng.integers(0, np.iinfo(uw).max, size=1 << 18, dtype=uw, endpoint=True).view(wide)
    mag = (rng.standard_normal(1 << 17) * 2.0 ** rng.uniform(-40, 20, 1 << 17)).astype(wide)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], wide)
    parts = [near, -near, raw, mag, special]
    if wide.itemsize == 8:  # double-rounding traps: float32 midpoints and their float64 neighbours
        f32 = np.unique(np.concatenate([vals, mids]).astype(np.float32))
        f32 = f32[np.isfinite(f32) & (f32 != 0)]
        up = np.nextafter(f32, np.float32(np.inf)).astype(np.float64)
        m32 = (f32.astype(np.float64) + up) / 2
        parts += [m32, np.nextafter(m32, np.inf), np.nextafter(m32, -np.inf)]
    return np.concatenate(parts).astype(wide)


@pytest.mark.parametrize("wide", ["float32", "float64"])
@pytest.mark.parametrize("fmt", [c[0] for c in CONVERSIONS])
def test_host_narrow_stores_round_like_numpy(host, fmt, wide):
    pytest.importorskip("ml_dtypes")
    ndt, utype = _narrow_dtypes()[fmt]
    x = _store_candidates(ndt, utype, wide)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = x.astype(ndt).view(utype)
    fn = f"store_{fmt}" + ("_d" if wide == "float64" else "")
    got = host_unary(host, fn, x, utype)
    bad = got != exp
    if bad.any():
        i = np.flatnonzero(bad)[:8]
        pytest.fail(f"gp_{fn}: {bad.sum()} of {x.size} differ: "
                    + ", ".join(f"{x[j]!r} ({x[j:j+1].view(np.uint32 if x.itemsize == 4 else np.uint64)[0]:#x})"
                                f" -> {got[j]:#x}, expected {exp[j]:#x}" for j in i))


def test_numpy_and_ml_dtypes_rounding_facts():
    """The facts the store helpers are built on (fails loudly if a NumPy / ml_dtypes upgrade
    changes them): NumPy rounds float64 -> float16 once; ml_dtypes goes through float32."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1 + 2.0**-11 + 2.0**-40])  # above the float16 midpoint, a float32 tie
    assert x.astype(np.float16)[0] == np.float16(1 + 2.0**-10)
    y = np.array([1 + 2.0**-8 + 2.0**-40])  # above the bfloat16 midpoint, a float32 tie
    assert float(y.astype(ml_dtypes.bfloat16)[0]) == 1.0
    assert float(y.astype(np.float32).astype(ml_dtypes.bfloat16)[0]) == 1.0
    # NumPy 2's maximum/minimum return the second operand on a -0.0 / +0.0 tie
    for dt in (np.float32, np.float64):
        z = np.zeros(37, dt)
        assert not np.signbit(np.maximum(-z, z)).any() and np.signbit(np.maximum(z, -z)).all()
        assert not np.signbit(np.minimum(-z, z)).any() and np.signbit(np.minimum(z, -z)).all()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
