"""Streaming stores (engines/cpu/stream.py, intrinsics.stream_store): a contiguous call of plain
arithmetic whose bytes would not stay in the caches runs ``stream``, which writes the aligned middle
of the output with non-temporal stores and its ends with ``flat``. Same bits as flat for every
start address and length, in place too; chosen by the call's bytes (kernels.stream_min_bytes),
except into an output whose pages the OS has just given (pool.fresh); the compiled dispatcher
leaves such calls to it; math kernels have none, but the loops of one lean float16 entry (tanh:
bound by memory once its NaN test went, 10**7 elements one thread 0.87 -> 0.83 ms)."""
from __future__ import annotations

import platform

import ml_dtypes
import numpy as np
import pytest
from numba import njit

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import kernels, pool, source
from gpupromote.engines.cpu.engine import BACKEND
from gpupromote.engines.cpu.kernels import kernel_for
from gpupromote.engines.cpu.narrow import HARDWARE_HALF
from gpupromote.engines.cpu.stream import STREAM_BLOCK
from gpupromote.kernel import ir

_RNG = np.random.default_rng(41)
_N = 3 * STREAM_BLOCK + 77
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _values(dtype, n=_N):
    x = _RNG.standard_normal(n) * 50
    return x.astype(dtype) if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16 else x.astype(np.int64).astype(dtype)


# (id, op, operand dtypes or a Python scalar, out dtype for out= or None)
CASES = [
    ("f4+f4", "add", (np.float32, np.float32), None),
    ("i1*f4", "multiply", (np.int8, np.float32), None),
    ("f4-pyfloat", "subtract", (np.float32, 2.5), None),
    ("f4+f4->f2", "add", (np.float32, np.float32), np.float16),
    ("f2+f2", "add", (np.float16, np.float16), None),
    ("bf+bf", "add", (ml_dtypes.bfloat16, ml_dtypes.bfloat16), None),
    ("i8*pyint", "multiply", (np.int64, 3), None),
    ("u1+u1", "add", (np.uint8, np.uint8), None),
    ("f8<f8", "less", (np.float64, np.float64), None),
    ("tanh f2", "tanh", (np.float16,), None),   # a lean float16 loop (where the hardware converts float16)
]


def _operands(spec, n=_N):
    return [s if isinstance(s, (int, float)) else _values(s, n) for s in spec]


@pytest.mark.parametrize("op, spec, out_dtype", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_stream_gives_flats_bits_at_every_offset_and_length(op, spec, out_dtype):
    args = _operands(spec)
    want = getattr(np, op)(*args, **({} if out_dtype is None else {"out": np.empty(_N, out_dtype)}))
    out_dtype = want.dtype
    kernel = ir.from_plan(plan_for(op, args, policy="numpy"))
    if op == "tanh" and not HARDWARE_HALF:
        pytest.skip("no float16 conversion in hardware: the float16 tanh is not a lean loop here")
    compiled = kernel_for(kernel if kernel.out.numpy == out_dtype else ir.stored_as(kernel, out_dtype))
    assert compiled.element_bytes is not None, "plain arithmetic has a streaming loop"
    views = [None if isinstance(a, (int, float)) else (compiled.views[i] or a.dtype) for i, a in enumerate(args)]
    arrays = [a if v is None else a.view(v) for a, v in zip(args, views)]
    store = np.dtype(compiled.out_view or out_dtype)
    for offset in (0, 1, 3, 7, 16, 31):
        for n in (0, 5, STREAM_BLOCK - 1, STREAM_BLOCK + 64 // store.itemsize, 2 * STREAM_BLOCK + 13, _N - 40):
            buffer = np.zeros(n + 64, store)
            got = buffer[offset:offset + n]
            ends = buffer.copy()
            compiled.stream()(*[a if isinstance(a, (int, float)) else a[:n] for a in arrays], got)
            flat = np.empty(n, store)
            compiled.flat(*[a if isinstance(a, (int, float)) else a[:n] for a in arrays], flat)
            bits = _BITS[store.itemsize]
            bad = np.flatnonzero(got.view(bits) != flat.view(bits))
            assert bad.size == 0, f"offset {offset}, n {n}: elements {bad[:8]} differ from flat's bits"
            ends[offset:offset + n] = got
            assert buffer.tobytes() == ends.tobytes(), f"offset {offset}, n {n}: wrote outside out"


def test_stream_in_place():
    a, b = _values(np.float32, 5000), _values(np.float32, 5000)
    want = a + b
    compiled = kernel_for(plan_for("add", [a, b], policy="numpy"))
    compiled.stream()(a, b, a)
    assert a.tobytes() == want.tobytes()


@pytest.fixture
def stream_from_4k(monkeypatch):
    monkeypatch.setattr(kernels, "_STREAM_MIN_BYTES", [4096])


def test_the_calls_bytes_choose_the_streaming_loop(stream_from_4k):
    a = _values(np.float32, 1000)
    compiled = kernel_for(plan_for("add", [a, a], policy="numpy"))
    assert compiled.element_bytes == 12
    assert compiled.stream_min() == 342          # ceil(4096 / 12)
    assert compiled.contiguous(341) is compiled.flat
    assert compiled.contiguous(342) == compiled._stream_or_flat
    assert BACKEND.native_max_n(plan_for("add", [a, a], policy="numpy")) == 341


def test_an_output_the_os_just_gave_takes_flat(stream_from_4k, monkeypatch):
    # fresh pages are zeroed into the cache on first touch, where ordinary stores find them (pool.fresh)
    a = _values(np.float32, 1 << 21)
    compiled = kernel_for(plan_for("add", [a, a], policy="numpy"))
    ran = []
    monkeypatch.setattr(compiled, "flat", lambda *args: ran.append(("flat", args[-1].size)))
    monkeypatch.setattr(compiled, "stream", lambda: lambda *args: ran.append(("stream", args[-1].size)))
    monkeypatch.setattr(compiled, "_stream", None)     # not loaded yet
    monkeypatch.setattr(pool, "_POOL_CAP", 0)
    fresh = pool.alloc(a.shape, np.float32)
    assert pool.fresh(fresh) and pool.fresh(fresh[1000:])
    compiled.contiguous(a.size)(a, a, fresh)
    written = np.ones_like(a)
    assert not pool.fresh(written)
    compiled.contiguous(a.size)(a, a, written)
    # the fresh call also loads stream, on empty views, for the next long call
    assert ran == [("flat", a.size), ("stream", 0), ("stream", a.size)]


def test_a_pooled_buffer_handed_out_again_is_not_fresh(monkeypatch):
    monkeypatch.setattr(pool, "_POOL_CAP", 1 << 30)
    monkeypatch.setattr(pool, "_pool", {})
    monkeypatch.setattr(pool, "_pool_bytes", [0])
    first = pool.alloc((1 << 21,), np.float32)
    assert pool.fresh(first)
    address = first.ctypes.data
    del first                                   # back to the pool
    again = pool.alloc((1 << 21,), np.float32)
    assert again.ctypes.data == address and not pool.fresh(again)


@pytest.mark.parametrize("threads", [1, 2])
def test_long_calls_through_the_api_equal_numpy(stream_from_4k, threads):
    a, b = _values(np.float32, 100_003), _values(np.float32, 100_003)
    out16 = np.empty(a.size, np.float16)
    before = gp.get_num_threads()
    gp.set_num_threads(threads)
    try:
        assert gp.add(a, b).tobytes() == (a + b).tobytes()
        assert gp.multiply(a[1:], 3.0).tobytes() == (a[1:] * np.float32(3)).tobytes()
        gp.add(a, b, out=out16)
        assert out16.tobytes() == np.add(a, b, out=np.empty_like(out16)).tobytes()
    finally:
        gp.set_num_threads(before)


@pytest.mark.parametrize("op, dtype", [("exp", np.float32), ("sin", np.float16), ("tanh", np.float64)])
def test_math_kernels_do_not_stream(op, dtype):
    """Bound by arithmetic: the lean float16 loops alone stream (the case above)."""
    x = _values(dtype, 64)
    compiled = kernel_for(plan_for(op, [x], policy="numpy"))
    assert compiled.element_bytes is None and compiled.stream_min() is None
    assert "def stream(" not in compiled.source
    assert source.streams(compiled.kernel) is False


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 instruction names")
def test_the_streaming_loop_stores_non_temporally():
    a = _values(np.float32, 4096)
    # compiled here, not through the kernel's disk-cached dispatcher (no assembly to read after a load)
    stream = njit(error_model="numpy", boundscheck=False)(kernel_for(plan_for("add", [a, a], policy="numpy")).module.stream)
    stream(a, a, np.empty_like(a))
    asm = next(iter(stream.inspect_asm().values()))
    assert "movntps" in asm   # (vmovntps with AVX)
    assert "sfence" in asm


@pytest.mark.parametrize("text, bytes_", [("", None), ("1048576", 1048576), (" 0 ", 0), ("big", ValueError),
                                          ("-5", ValueError), ("1e6", ValueError)])
def test_the_threshold_from_the_environment(monkeypatch, text, bytes_):
    monkeypatch.setattr(kernels, "_STREAM_MIN_BYTES", [None])
    monkeypatch.setenv("GPUPROMOTE_STREAM_MIN_BYTES", text)
    if bytes_ is ValueError:
        with pytest.raises(ValueError, match="GPUPROMOTE_STREAM_MIN_BYTES=.*not a whole number of bytes"):
            kernels.stream_min_bytes()
    elif bytes_ is None:
        assert kernels.stream_min_bytes() == kernels._last_level_cache_bytes() > 0
    else:
        assert kernels.stream_min_bytes() == bytes_


def test_an_output_off_its_item_size_takes_flat_for_all():
    # an address that is not a multiple of the item size has no aligned middle: stream_head is n
    a = _values(np.float32, 2000)
    raw = np.zeros(2000 * 4 + 8, np.uint8)
    out = np.frombuffer(raw.data, np.float32, count=2000, offset=1)
    compiled = kernel_for(plan_for("add", [a, a], policy="numpy"))
    compiled.stream()(a, a, out)
    assert out.tobytes() == (a + a).tobytes()
