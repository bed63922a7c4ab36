"""The CUDA engine's host-side behaviour, run on the host tier (tests/hostcuda): out=, device
casts, host arrays beside device ones, misaligned element views, several devices, the disk cache
of compiled kernels; and the tier's own checks (what it must catch the way a GPU would)."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cuda import modules as _cuda_modules
from tests import hostcuda
from tests.support.engine_cases import known_divergence, values
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical

pytestmark = HOSTCUDA_MARKS


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        yield cp


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _load(source, device=0):
    """A handwritten kernel, through the seam the engine loads its kernels with."""
    module, _ = _cuda_modules.load_module(source, False, device)
    name = source.split("void ", 1)[1].split("(", 1)[0]
    return module.get_function(name)


# ---------------------------------------------------------------------------------------------
# The tier's own checks: each fault a GPU reports must fail here too

COPY_VEC4 = """
extern "C" __global__ void gp_test_copy_vec4(long long n, const float* __restrict__ x, float* __restrict__ y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (4 * i + 3 < n) *reinterpret_cast<uint4*>(y + 4 * i) = *reinterpret_cast<const uint4*>(x + 4 * i);
}
"""


def test_a_misaligned_vector_load_fails_like_on_the_gpu(host):
    kernel = _load(COPY_VEC4)
    buf, out = host.zeros(64 + 4, np.float32), host.zeros(64, np.float32)
    kernel((1,), (16,), (np.int64(64), buf, out))                 # 512-byte aligned: fine
    with pytest.raises(host.CUDADriverError, match="CUDA_ERROR_MISALIGNED_ADDRESS.*gp_test_copy_vec4.*16-byte"):
        kernel((1,), (16,), (np.int64(64), buf[1:], out))         # 4 bytes past: a 16-byte load faults


def test_an_out_of_bounds_write_hits_the_guard_bytes(host):
    kernel = _load("""
extern "C" __global__ void gp_test_write_one_past(long long n, int* y) {
  if (threadIdx.x == 0) y[n] = 7;
}""")
    y = host.zeros(10, np.int32)
    with pytest.raises(host.CUDADriverError, match=r"CUDA_ERROR_ILLEGAL_ADDRESS.*outside an allocation of 40 bytes.*\[40"):
        kernel((1,), (32,), (np.int64(10), y))
    kernel((1,), (32,), (np.int64(9), y))  # the guard zone is intact again: the next launch is judged alone
    assert y.get()[9] == 7


def test_signed_overflow_is_reported_in_undefined_mode():
    source = """
extern "C" __global__ void gp_test_int_add(long long n, const int* x, int* y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + x[i];
}"""
    with hostcuda.installed(sanitize="undefined") as cp:
        kernel = _load(source)
        x, y = cp.asarray(np.array([1, 2**30, 5], np.int32)), cp.zeros(3, np.int32)
        with pytest.raises(cp.CUDADriverError, match="signed integer overflow in .* in type 'int'"):
            kernel((1,), (32,), (np.int64(3), x, y))
        kernel((1,), (32,), (np.int64(1), x, y))   # 1 + 1: no overflow, no report
        assert y.get()[0] == 2


def test_arguments_are_packed_and_checked_as_cupy_passes_them(host):
    kernel = _load("""
extern "C" __global__ void gp_test_axpy(long long n, float a, const float* x, float* y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}""")
    x, y = host.asarray(np.arange(5, dtype=np.float32)), host.zeros(5, np.float32)
    kernel((1,), (32,), (5, np.float32(2), x, y))   # a Python int is CuPy's int64: right for long long
    assert y.get().tolist() == [0, 2, 4, 6, 8]
    with pytest.raises(hostcuda.fake_cupy.KernelArgumentError, match="float a.*float64.*8 bytes"):
        kernel((1,), (32,), (5, 2.0, x, y))           # a Python float is a double: 8 bytes for a float
    with pytest.raises(hostcuda.fake_cupy.KernelArgumentError, match="4-byte float"):
        kernel((1,), (32,), (5, np.float32(2), host.zeros(5, np.float64), y))
    with pytest.raises(TypeError, match="Unsupported type"):
        kernel((1,), (32,), (5, np.float32(2), np.zeros(5, np.float32), y))  # host memory: CuPy refuses
    with pytest.raises(hostcuda.fake_cupy.KernelArgumentError, match="takes 4 parameters"):
        kernel((1,), (32,), (5, x, y))


def test_every_thread_of_the_grid_runs_once(host):
    kernel = _load("""
extern "C" __global__ void gp_test_ids(long long n, long long* y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += i + 1000 * (long long)gridDim.x;
}""")
    y = host.zeros(3 * 128, np.int64)
    kernel((3,), (128,), (np.int64(3 * 128), y))
    assert y.get().tolist() == [i + 3000 for i in range(3 * 128)]


def test_kernels_run_on_the_device_they_were_loaded_on(host):
    kernel = _load(COPY_VEC4, device=0)
    x0, y0 = host.zeros(16, np.float32), host.zeros(16, np.float32)
    with host.cuda.Device(1):
        x1 = host.zeros(16, np.float32)
        with pytest.raises(host.CUDADriverError, match="CUDA_ERROR_INVALID_HANDLE"):
            kernel((1,), (4,), (np.int64(16), x0, y0))
    with pytest.raises(host.CUDADriverError, match="CUDA_ERROR_ILLEGAL_ADDRESS.*device 1's memory"):
        kernel((1,), (4,), (np.int64(16), x1, y0))


def test_the_engine_runs_on_the_tier(host):
    """installed() sets its seams on the modules that read them: the engine's CuPy is the fake one,
    and an op's kernel is loaded through the tier's load_module (built with g++) and launched there."""
    from gpupromote.engines.cuda import device as _cuda_device
    assert _cuda_device.cupy_module() is host
    assert _cuda_modules.load_module.__module__ == hostcuda.__name__
    mark = len(host.launches)
    r = gp.add(host.asarray(values("float16", 33, 1)), host.asarray(values("float32", 33, 2)), policy="torch")
    assert host.launched_since(mark)
    assert_bit_identical(r, gp.add(values("float16", 33, 1), values("float32", 33, 2), policy="torch"), host, "add")


def test_builds_are_cached_on_disk_by_content(tmp_path):
    source = COPY_VEC4.replace("gp_test_copy_vec4", "gp_test_cache_probe")
    first = hostcuda.Builder(cache_dir=str(tmp_path))
    first.library(first.submit(source))
    assert first.stats["compiled"] == 1
    again = hostcuda.Builder(cache_dir=str(tmp_path))          # another process, say
    again.library(again.submit(source))
    assert again.stats == {"compiled": 0, "from_disk": 1, "compile_seconds": 0.0}
    assert again.key(source) != again.key(source + "\n// edited")
    assert again.key(source) != hostcuda.Builder(cache_dir=str(tmp_path), sanitize="undefined").key(source)


# ---------------------------------------------------------------------------------------------
# out= with CuPy arrays (CuPy's flags have no `writeable`)

def test_out_accepts_cupy_arrays(host):
    a, b = values("float16", 257, 1), values("float32", 257, 2)
    want = gp.add(a, b, policy="torch")
    out = host.empty(257, np.float32)
    assert gp.add(host.asarray(a), host.asarray(b), policy="torch", out=out) is out
    assert_bit_identical(out, want, host, "out=float32")
    wide = host.empty(257, np.float64)                 # another dtype: computed, then cast
    gp.add(host.asarray(a), host.asarray(b), policy="torch", out=wide)
    assert_bit_identical(wide, want.astype(np.float64), host, "out=float64")


def test_in_place_operators_on_device_arrays(host):
    x_host = values("int16", 100, 3)
    x = gp.asarray(x_host, device="cuda")
    x += 7
    assert x.device == "cuda:0" and x.dtype == gp.int16
    assert_bit_identical(x, gp.add(x_host, 7), host, "x += 7")
    with pytest.raises(TypeError, match="same_kind"):
        x += 1.5


def test_read_only_numpy_out_still_refused():
    out = np.zeros(3, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gp.add(np.ones(3, np.float32), 1.0, out=out)


# ---------------------------------------------------------------------------------------------
# Casts of device arrays run a cast kernel (astype relabelled the buffer before)

CASTS = [("float32", "int8"), ("float32", "float64"), ("float64", "float16"), ("float32", "bfloat16"),
         ("float32", "float8_e4m3fn"), ("float16", "float8_e5m2"), ("int32", "float16"), ("uint8", "float32"),
         ("float8_e4m3fn", "float32"), ("bfloat16", "float16"), ("complex64", "float32"), ("bool", "complex128"),
         ("int64", "uint16")]


def _in_range(src, dst, n=300):
    """Values of src that dst can hold after NumPy's cast (no float -> int overflow: see
    test_out_of_range_float_to_int_cast)."""
    x = values(src, n, 4)
    if np.dtype(gp.dtype(dst).numpy).kind in "iu" and gp.dtype(src).kind in "fc":
        info = np.iinfo(gp.dtype(dst).numpy)
        x = np.where(np.isfinite(x) & (x > info.min) & (x < info.max), x, 0).astype(x.dtype)
    return x


@pytest.mark.parametrize("src, dst", CASTS, ids=[f"{s}-{d}" for s, d in CASTS])
def test_device_astype_converts_values_like_numpy(host, src, dst):
    x = _in_range(src, dst)
    a = gp.asarray(x, device="cuda")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")   # ComplexWarning: the imaginary part is dropped, as intended
        want = x.astype(gp.dtype(dst).numpy)
    got = a.astype(dst)
    assert got.dtype == gp.dtype(dst) and got.device == "cuda:0" and got._storage is not a._storage
    assert_bit_identical(got, want, host, f"astype {src} -> {dst}")


def test_asarray_with_a_dtype_casts_device_data(host):
    x = values("float32", 64, 5)
    got = gp.asarray(host.asarray(x), dtype="float16")
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert_bit_identical(got, want, host, "asarray(cupy float32, dtype=float16)")


def _chalf_bits(z):
    return (z.real.astype(np.float16).view(np.uint16).astype(np.uint32)
            | (z.imag.astype(np.float16).view(np.uint16).astype(np.uint32) << np.uint32(16)))


def test_complex32_on_the_device_holds_complex32(host):
    z = values("complex64", 64, 6)
    c32 = gp.asarray(z, dtype="complex32", device="cuda")
    assert c32.dtype == gp.complex32 and c32._storage.dtype == np.uint32
    rounded = np.empty(z.shape, np.complex64)   # each part rounded to float16 (1j * inf would make a nan)
    with np.errstate(all="ignore"):
        assert np.array_equal(c32._storage.get(), _chalf_bits(z))
        rounded.real, rounded.imag = z.real.astype(np.float16), z.imag.astype(np.float16)
    assert_bit_identical(c32.astype("complex64"), rounded, host, "complex32 -> complex64")
    from_device = gp.asarray(host.asarray(z)).astype("complex32")   # the cast kernel packs it
    with np.errstate(all="ignore"):
        assert np.array_equal(from_device._storage.get(), _chalf_bits(z))


def test_every_float16_bit_pattern_converts_like_numpy(host):
    """The shim's cvt.f32.f16 / cvt.rn.f16.f32 / cvt.rn.bf16.f32 (the headers' inline PTX) through
    the engine's cast kernels: all 65,536 float16 patterns to float32 and back, float32 values on
    every float16 / bfloat16 rounding boundary down to both."""
    bits = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    up = gp.asarray(bits, device="cuda").astype("float32")
    assert_bit_identical(up, bits.astype(np.float32), host, "float16 -> float32")
    wide = bits.astype(np.float32)
    with np.errstate(invalid="ignore"):
        wide = np.concatenate([wide, np.nextafter(wide, np.float32(np.inf)), np.nextafter(wide, np.float32(-np.inf))])
    dev = gp.asarray(wide, device="cuda")
    with np.errstate(all="ignore"):
        assert_bit_identical(dev.astype("float16"), wide.astype(np.float16), host, "float32 -> float16")
        assert_bit_identical(dev.astype("bfloat16"), wide.astype(ml_dtypes.bfloat16), host, "float32 -> bfloat16")


# ---------------------------------------------------------------------------------------------
# Unary operators of device Arrays (storage of narrow floats is bit patterns)

UNARY = [("negative", "float8_e4m3fn"), ("absolute", "float8_e5m2"), ("negative", "bfloat16"), ("absolute", "bfloat16"),
         ("absolute", "float16"), ("negative", "int8")]


def _unary_case(op, dtype, bf16_native):
    case = ("*", op, dtype, "-", "gp.Array" + ("" if bf16_native else " (uint16 bfloat16 storage)"))
    d = known_divergence(case)
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=d.cause)] if d else []
    return pytest.param(op, dtype, bf16_native, id=f"{op}-{dtype}-{'native' if bf16_native else 'bits'}", marks=marks)


@pytest.mark.parametrize("op, dtype, bf16_native", [_unary_case(op, d, n) for op, d in UNARY for n in (True, False)
                                                    if n or d == "bfloat16"])
def test_unary_operators_of_device_arrays(op, dtype, bf16_native):
    x = values(dtype, 64, 7)
    with hostcuda.installed(bf16_native=bf16_native) as cp:
        a = gp.asarray(x, device="cuda")
        got = -a if op == "negative" else abs(a)
        want = -x if op == "negative" else np.abs(x)
        assert got.dtype == gp.dtype(dtype)
        assert_bit_identical(got, want, cp, f"{op} of a {dtype} device Array")


# ---------------------------------------------------------------------------------------------
# Host NumPy arrays beside device operands

def test_a_host_array_beside_device_operands_is_refused_with_the_fix(host):
    x = host.asarray(values("float32", 10, 1))
    with pytest.raises(TypeError, match=r"operand 1 is a NumPy array.*cuda:0.*cupy\.asarray\(x\)"):
        gp.add(x, np.ones(10, np.float32))
    with pytest.raises(TypeError, match=r"operand 0 is a NumPy array"):
        gp.multiply(gp.asarray(np.ones(10, np.float32)).numpy(), gp.asarray(x))
    with pytest.raises(TypeError, match="out is a NumPy array"):
        gp.add(x, x, out=np.empty(10, np.float32))


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
def test_a_host_0d_array_beside_device_operands_is_a_scalar(host, policy):
    x = values("float16", 100, 2)
    s = np.asarray(np.float32(1.25))
    assert_bit_identical(_quiet(gp.add, host.asarray(x), s, policy=policy), _quiet(gp.add, x, s, policy=policy),
                         host, f"{policy}: float16 device + 0-d host float32")


# ---------------------------------------------------------------------------------------------
# Views whose elements are not aligned to their size

def test_a_view_starting_mid_element_is_refused(host):
    raw = host.empty(4 * 65, np.uint8)
    view = raw[1:1 + 4 * 64].view(np.float32)
    assert view.data.ptr % 4 == 1
    with pytest.raises(ValueError, match=r"operand 0, a float32 view, starts 1 bytes past a 4-byte boundary.*copy"):
        gp.add(view, np.float32(1))
    z = host.empty(16 * 9, np.uint8)[8:8 + 16 * 8].view(np.complex128)   # an odd complex128 view
    with pytest.raises(ValueError, match="8 bytes past a 16-byte boundary"):
        gp.multiply(z, 2.0)
    out = host.empty(4 * 65, np.uint8)[3:3 + 4 * 64].view(np.float32)
    with pytest.raises(ValueError, match=r"out, a float32 view, starts 3 bytes"):
        gp.add(host.zeros(64, np.float32), 1.0, out=out)


def test_a_stride_that_is_not_a_multiple_of_the_element_is_refused(host):
    raw = host.zeros(4 * 64, np.uint8)
    odd = hostcuda.fake_cupy.from_host_view(raw, np.lib.stride_tricks.as_strided(raw._a.view(np.float32), (32,), (6,)))
    with pytest.raises(ValueError, match="byte stride of 6, not a multiple of its 4-byte elements"):
        gp.add(odd, 1.0)


# ---------------------------------------------------------------------------------------------
# Several devices

def test_an_op_runs_and_allocates_on_its_operands_device(host):
    x = values("bfloat16", 300, 1)
    y = values("float32", 300, 2)
    mark = len(host.launches)
    with host.cuda.Device(1):
        a, b = host.asarray(x), host.asarray(y)
    assert host.cuda.runtime.getDevice() == 0          # device 0 is current
    r = gp.add(a, b, policy="torch")
    assert r.device.id == 1 and {d for *_, d in host.launches[mark:]} == {1}
    assert_bit_identical(r, gp.add(x, y, policy="torch"), host, "on device 1")
    assert host.cuda.runtime.getDevice() == 0          # and device 0 is current again


def test_operands_on_two_devices_are_refused(host):
    a = host.asarray(np.ones(4, np.float32))
    with host.cuda.Device(1):
        b = host.asarray(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"different devices \(operand 0 on cuda:0, operand 1 on cuda:1\)"):
        gp.add(a, b)
    with pytest.raises(ValueError, match=r"out on cuda:1"):
        gp.add(a, a, out=b)


def test_device_names_place_data(host):
    x = values("float8_e4m3fn", 50, 3)
    on1 = gp.asarray(x, device="cuda:1")
    assert on1.device == "cuda:1" and on1._storage.device.id == 1
    assert gp.asarray(x, device="cuda").device == "cuda:0"
    with host.cuda.Device(1):
        assert gp.asarray(x, device="cuda").device == "cuda:1"   # "cuda" is the current device
    moved = gp.asarray(on1, device="cuda:0")
    assert moved._storage.device.id == 0 and np.array_equal(moved.numpy().view(np.uint8), x.view(np.uint8))
    cast = on1.astype("float32")
    assert cast.device == "cuda:1" and cast._storage.device.id == 1
    assert_bit_identical(cast, x.astype(np.float32), host, "astype on device 1")
    r = on1 * 2
    assert r.device == "cuda:1"
    with pytest.raises(ValueError, match="no CUDA device 2"):
        gp.asarray(x, device="cuda:2")


def test_a_result_stored_as_bit_patterns_keeps_its_dtype(host):
    """cupy uint8 + a host float8 0-d array is float8 (NumPy's rule), stored as uint8 bits on the
    device: it comes back as a gp.Array of float8, not as the bare uint8 CuPy array."""
    x = np.arange(17, dtype=np.uint8)   # exact in float8_e4m3fn
    s = np.asarray(ml_dtypes.float8_e4m3fn(2.5))
    got = _quiet(gp.add, host.asarray(x), s, policy="numpy")
    assert isinstance(got, gp.Array) and got.dtype == gp.float8_e4m3fn and got.device == "cuda:0"
    assert_bit_identical(got, _quiet(gp.add, x, s, policy="numpy"), host, "uint8 device + float8 0-d host")
    plain = gp.add(host.asarray(x), host.asarray(x))
    assert isinstance(plain, host.ndarray)   # a dtype CuPy has: a CuPy array, as before
