"""Layouts on the host tier: the CUDA engine's kernels (vectorized, N = 1, strided 32- and 64-bit)
over every kind of view, bit for bit against the CPU engine on the same views of host arrays.

Each layout is a function applied to a base array, once to a NumPy array and once to its copy in
(fake) device memory, so both engines see the same offsets, strides and overlaps; the kernel the
launcher picked is checked too (``_v<N>``: contiguous, N elements per step; ``_s<ndim>_<bits>``:
strided). Index arithmetic past 2**31 is checked on sparse views over lazily mapped memory (byte
offsets of 3 and 12 GiB); a run over more than 2**31 elements (minutes on the host, 2 GiB of
memory) is part of GP_HOSTCUDA_SWEEP=full.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import gpupromote as gp
from tests import hostcuda
from tests.support.engine_cases import to_device, values
from tests.hostcuda.support import HOSTCUDA_MARKS, assert_bit_identical

pytestmark = HOSTCUDA_MARKS
fake = hostcuda.fake_cupy


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        yield cp


def _call(op, args, policy, out=None):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(gp, op)(*args, policy=policy, **({} if out is None else {"out": out}))


def _storage(x):
    return x._storage if isinstance(x, gp.Array) else x


def check(host, op, host_args, dev_args, policy="numpy", kernel=None, host_out=None, dev_out=None, what=""):
    """The CUDA engine on dev_args equals the CPU engine on host_args, bit for bit; ``kernel``: a
    suffix the launched kernel's name must end with (the path the launcher took)."""
    want = _call(op, host_args, policy, host_out)
    mark = len(host.launches)
    got = _call(op, dev_args, policy, dev_out)
    assert_bit_identical(got, want, host, what or f"{policy} {op}")
    if host_out is not None:
        assert got is dev_out
    if kernel is not None:
        names = host.launched_since(mark)
        assert names and names[-1].endswith(kernel), f"{what}: launched {names}, expected a kernel ending in {kernel}"
    return got


def _vec(*dtypes):
    """The contiguous kernel's elements per step for operands of these dtypes (16 bytes of the
    narrowest, at most 64 bytes of the widest: _cuda_source.vector_width's rule)."""
    sizes = [gp.dtype(d).itemsize for d in dtypes]
    return max(1, min(16 // min(sizes), 64 // max(sizes)))


# ---------------------------------------------------------------------------------------------
# Contiguous: the vectorized body, and tails of every length below the vector width

PAIRS = [("uint8", "uint8", "numpy", "add"), ("float16", "float32", "torch", "add"), ("int8", "float64", "numpy", "multiply"),
         ("bfloat16", "bfloat16", "torch", "true_divide"), ("float8_e4m3fn", "float32", "numpy", "subtract"),
         ("complex64", "complex64", "numpy", "multiply"), ("bool", "int16", "jax", "maximum")]


@pytest.mark.parametrize("da, db, policy, op", PAIRS, ids=[f"{p}-{op}-{a}-{b}" for a, b, p, op in PAIRS])
def test_contiguous_every_tail_length(host, da, db, policy, op):
    result = gp.result_type(gp.spec(da), gp.spec(db), op=op, policy=policy)
    width = _vec(da, db, result)
    for n in [*range(1, 2 * width + 1), 1031, 4 * width * 256 + width - 1]:
        a, b = values(da, n, 1), values(db, n, 2)
        check(host, op, (a, b), (to_device(a, host), to_device(b, host)), policy, f"_v{width}",
              what=f"{policy} {op} {da}[{n}] {db}[{n}] (vector width {width})")


def test_grid_stride_loop_with_few_blocks():
    """Fewer resident blocks than work: every thread takes several steps of the grid-stride loop."""
    a, b = values("int32", 50_001, 3), values("int32", 50_001, 4)
    with hostcuda.installed(sms=1) as cp:   # 1 SM: 8 blocks of 256 threads
        check(cp, "add", (a, b), (cp.asarray(a), cp.asarray(b)), "numpy", "_v4")
        check(cp, "subtract", (a[::-1], b), (cp.asarray(a)[::-1], cp.asarray(b)), "numpy", "_s1_32")
        assert {g for _, g, *_ in cp.launches} == {8}


# ---------------------------------------------------------------------------------------------
# Misaligned data pointers: 1 to 15 bytes past a 16-byte boundary take the N = 1 kernel

@pytest.mark.parametrize("da, db, policy", [("uint8", "int8", "numpy"), ("float16", "float32", "torch"),
                                            ("float32", "float64", "numpy"), ("complex64", "float32", "numpy")])
def test_misaligned_offsets(host, da, db, policy):
    n = 700
    base_a, base_b = values(da, n + 16, 1), values(db, n + 16, 2)
    dev_a, dev_b = to_device(base_a, host), to_device(base_b, host)
    result = gp.result_type(gp.spec(da), gp.spec(db), op="add", policy=policy).numpy
    for offset in range(1, 16):
        for dtype, base, dev, role in ((da, base_a, dev_a, "operand"), (None, None, None, "out")):
            size = np.dtype(result).itemsize if role == "out" else gp.dtype(dtype).itemsize
            if offset % size:
                continue
            k = offset // size
            if role == "operand":
                assert _storage(dev[k:k + n]).data.ptr % 16 == offset
                check(host, "add", (base[k:k + n], base_b[:n]), (dev[k:k + n], dev_b[:n]), policy, "_v1",
                      what=f"{da} operand {offset} bytes past a 16-byte boundary")
            else:
                out_host, out_dev = np.empty(n + 16, result)[k:k + n], host.empty(n + 16, result)[k:k + n]
                check(host, "add", (base_a[:n], base_b[:n]), (dev_a[:n], dev_b[:n]), policy, "_v1", out_host, out_dev,
                      what=f"{result} out {offset} bytes past a 16-byte boundary")


# ---------------------------------------------------------------------------------------------
# Strided views: negative and zero strides, broadcasting, 2-4 dimensions

def _rng_values(dtype, shape, seed):
    return values(dtype, int(np.prod(shape)), seed).reshape(shape)


LAYOUTS = {
    # name: (shape of a's base, shape of b's base, view of a, view of b)
    "reversed": ((1031,), (1031,), lambda x: x[::-1], lambda y: y),
    "step-3-backwards": ((3000,), (1000,), lambda x: x[::-3][:1000], lambda y: y[::-1]),
    "zero-stride-row": ((1, 257), (64, 257), lambda x: x, lambda y: y),
    "broadcast-row-col": ((64, 1), (1, 33), lambda x: x, lambda y: y),
    "broadcast-1d": ((64, 33), (33,), lambda x: x, lambda y: y),
    "transposed": ((33, 64), (64, 33), lambda x: x.T, lambda y: y),
    "negative-2d": ((64, 33), (64, 17), lambda x: x[::-1, ::-2], lambda y: y),
    "3d-mixed": ((5, 1, 7), (1, 6, 14), lambda x: x, lambda y: y[:, :, ::-2]),
    "3d-permuted": ((3, 4, 5), (5, 3, 1), lambda x: x.transpose(2, 0, 1), lambda y: y),
    "4d": ((2, 6, 4, 10), (6, 1, 5), lambda x: x[:, ::-1, :, ::2], lambda y: y),
    "4d-transposed": ((3, 2, 5, 4), (4, 5, 2, 3), lambda x: x, lambda y: y.T),
    "fortran": ((40, 30), (40, 30), lambda x: x.T.copy().T, lambda y: y.T.copy().T),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("da, db, policy, op", [("float16", "float32", "torch", "add"),
                                                ("int16", "uint8", "numpy", "floor_divide"),
                                                ("bfloat16", "complex64", "numpy", "multiply")])
def test_strided_views(host, name, da, db, policy, op):
    shape_a, shape_b, view_a, view_b = LAYOUTS[name]
    a, b = _rng_values(da, shape_a, 1), _rng_values(db, shape_b, 2)
    if op == "floor_divide":
        b[b == 0] = 3
    dev_a, dev_b = to_device(a, host), to_device(b, host)
    check(host, op, (view_a(a), view_b(b)), (view_a(dev_a), view_b(dev_b)), policy, what=f"{name}: {policy} {op} {da} {db}")


def test_zero_strides_over_one_element(host):
    """A sparse view: 1031 elements that are all the same byte of device memory."""
    small = host.asarray(values("float32", 4, 5))
    x_dev = fake.from_host_view(small, np.lib.stride_tricks.as_strided(small._a, (1031,), (0,)))
    x_host = np.lib.stride_tricks.as_strided(small.get(), (1031,), (0,))
    y = values("float16", 1031, 6)
    check(host, "add", (x_host, y), (x_dev, host.asarray(y)), "torch", "_s1_32")


def test_zero_dim_device_operand_broadcasts(host):
    x, s = values("float16", 1000, 1), np.asarray(np.float32(1.5))
    check(host, "add", (x, s), (host.asarray(x), host.asarray(s)), "torch", "_s1_32")   # an operand on the device
    check(host, "add", (x, s), (host.asarray(x), s), "torch", "_v8")                    # a host 0-d: folded


# ---------------------------------------------------------------------------------------------
# out=: aliasing an input, other dtypes and layouts, 0-size

def test_out_aliasing_an_input_element_for_element(host):
    x, y = values("float32", 999, 7), values("float32", 999, 8)
    for order in ("forward", "reverse"):   # threads in either order: an elementwise in-place op does not care
        xh, xd = x.copy(), host.asarray(x)
        fake.REVERSE_ORDER = order == "reverse"
        try:
            check(host, "add", (xh, y), (xd, host.asarray(y)), "numpy", "_v4", xh, xd, what=f"in place, {order}")
        finally:
            fake.REVERSE_ORDER = False


def test_out_overlapping_an_input_shifted_takes_a_temporary(host):
    x, y = values("int32", 1000, 7), values("int32", 999, 8)
    xh, xd = x.copy(), host.asarray(x)
    check(host, "add", (xh[1:], y), (xd[1:], host.asarray(y)), "numpy", None, xh[:-1], xd[:-1], what="shifted overlap")
    assert np.array_equal(xd.get(), xh)


def test_out_of_another_dtype_and_layout(host):
    a, b = _rng_values("int8", (20, 30), 1), values("float32", 30, 2)
    check(host, "add", (a, b), (host.asarray(a), host.asarray(b)), "numpy", None,
          np.zeros((30, 20), np.float32).T, host.zeros((30, 20), np.float32).T, what="transposed out")
    check(host, "add", (a, b), (host.asarray(a), host.asarray(b)), "numpy", None,
          np.zeros((20, 30), np.complex128), host.zeros((20, 30), np.complex128), what="complex128 out")
    c, d = _rng_values("float16", (33, 30), 3), _rng_values("float32", (33, 30), 4)
    check(host, "multiply", (c, d), (host.asarray(c), host.asarray(d)), "torch", "_s2_32",
          np.asfortranarray(np.zeros((33, 30), np.float32)), host.zeros((33, 30), np.float32, order="F"),
          what="F-ordered out, C inputs: strided")


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_zero_size(host, shape):
    a = np.zeros(shape, np.float32)
    mark = len(host.launches)
    r = check(host, "add", (a, 1.0), (host.zeros(shape, np.float32), 1.0), "numpy")
    assert r.shape == shape and host.launched_since(mark) == []   # nothing to launch
    out = host.empty(shape, np.float32)
    assert gp.add(host.zeros(shape, np.float32), 2.5, out=out) is out


# ---------------------------------------------------------------------------------------------
# Index arithmetic past 2**31

def test_byte_offsets_past_2_31_take_the_64_bit_kernel(host):
    """Rows 3 GiB apart and a column 12 GiB long, over lazily mapped memory: only the elements read
    or written are ever touched."""
    gib = 1 << 30
    mem = host.empty(12 * gib + 64, np.uint8)
    rows_dev = fake.from_host_view(mem, np.lib.stride_tricks.as_strided(mem._a, (3, 16), (3 * gib + 8, 1)))
    rows_dev[...] = host.asarray(values("uint8", 48, 1).reshape(3, 16))
    rows_host = rows_dev.get()
    check(host, "add", (rows_host, np.uint8(2)), (rows_dev, np.uint8(2)), "numpy", "_s2_64", what="rows 3 GiB apart")
    check(host, "multiply", (rows_host[::-1], 3), (rows_dev[::-1], 3), "numpy", "_s2_64", what="rows backwards")
    col = fake.from_host_view(mem, np.lib.stride_tricks.as_strided(mem._a[4:].view(np.float32), (4,), (3 * gib,)))
    col[...] = host.asarray(np.array([1.5, -2.0, 3.25, 1e30], np.float32))
    out = host.zeros(4, np.float64)
    check(host, "add", (col.get(), np.float64(0.5)), (col, np.float64(0.5)), "numpy", "_s1_64", what="float32 stride 3 GiB")
    check(host, "add", (col.get(), col.get()), (col, col), "numpy", None, np.zeros(4, np.float64), out,
          what="into a float64 out (computed in float32 by the 64-bit kernel, then cast)")
    assert any(name.endswith("_s1_64") for name in host.launched_since(len(host.launches) - 2))


@pytest.mark.skipif(os.environ.get("GP_HOSTCUDA_SWEEP") != "full",
                    reason="2**31 + 4099 elements take minutes and 2 GiB on the host: GP_HOSTCUDA_SWEEP=full")
def test_more_than_2_31_elements(host):
    n = 2**31 + 4099
    tail = (np.arange(4099) % 256).astype(np.uint8)
    a = host.zeros(n, np.uint8)          # lazily mapped zero pages
    a._a[-4099:] = tail
    r = gp.add(a, np.uint8(2), policy="numpy")            # contiguous, vectorized, 64-bit indices
    assert host.launches[-1][0].endswith("_v16")
    assert np.array_equal(r._a[-4099:], tail + 2) and not np.any(r._a[:-4099] != 2)
    del r
    r = gp.add(a[::-1], np.uint8(2), policy="numpy")      # negative stride: the strided 64-bit kernel
    assert host.launches[-1][0].endswith("_s1_64")
    assert np.array_equal(r._a[:4099], (tail + 2)[::-1]) and not np.any(r._a[4099:] != 2)


# ---------------------------------------------------------------------------------------------
# out= of another dtype: the kernel stores the cast result itself (ir.stored_as), one launch

OUT_CASTS = [("float32", "float16", "numpy", "add"), ("float64", "bfloat16", "numpy", "multiply"),
             ("float16", "float64", "torch", "add"), ("int8", "int32", "numpy", "multiply"),
             ("float16", "float16", "numpy", "sigmoid")]   # scipy's expit of float16 is float64


@pytest.mark.parametrize("da, dout, policy, op", OUT_CASTS, ids=[f"{p}-{op}-{a}-into-{o}" for a, o, p, op in OUT_CASTS])
def test_out_of_another_dtype_in_one_launch(host, da, dout, policy, op):
    n = 1031
    args = (values(da, n, 1),) if op == "sigmoid" else (values(da, n, 1), values(da, n, 2))
    host_out, dev_out = np.empty(n, gp.dtype(dout).numpy), host.empty(n, gp.dtype(dout).numpy)
    mark = len(host.launches)
    check(host, op, args, tuple(to_device(a, host) for a in args), policy, host_out=host_out, dev_out=dev_out,
          what=f"{policy} {op} {da} into {dout}")
    assert len(host.launched_since(mark)) == 1, f"launched {host.launched_since(mark)}: the cast was a second pass"
