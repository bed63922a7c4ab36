"""Foreign arrays in and out (gpupromote/dispatch/foreign.py): torch tensors and JAX arrays through every op
and gp.fuse give the caller's own type, on the caller's device, with the dtype and the bits of the
NumPy path; memory is shared where DLPack allows (same data pointer), bfloat16 and float8
included. CUDA tensors, CuPy and JAX GPU arrays are checked under the ``gpu`` marker."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import foreign as interop
from gpupromote.dispatch.api import describe
from gpupromote.core.ops import OPS

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.oracle

# One pair of operands per op (dtypes, values): a promotion the op accepts under most policies.
_INTS = ("int32", [5, 6, 7, 8]), ("int16", [1, 2, 3, 0])
_MIXED = ("float32", [1.5, -2.25, 3.0, 4.5]), ("int32", [2, 3, -1, 4])
_FLOATS = ("float32", [1.5, -2.25, 3.0, 4.5]), ("float64", [0.5, 2.0, -3.0, 1.0])
_LOGIC = ("bool", [True, False, True, False]), ("float32", [0.0, 1.5, 2.0, 0.0])
OPERANDS = {name: (_INTS if "shift" in name or name.startswith("bitwise") else
                   _LOGIC if name.startswith("logical") else
                   _FLOATS if op.accepts == "f" else _MIXED)
            for name, op in OPS.items() if op.arity == 2}
BF16 = ("bfloat16", [1.5, -2.25, 3.0, 256.0])


def _numpy_array(dtype, values):
    return np.array(values, gp.dtype(dtype).numpy)


def _torch(a: np.ndarray):
    """A torch tensor holding ``a`` (by bit pattern for ml_dtypes), made by torch."""
    d = gp.dtype(a.dtype)
    if d.numpy.type.__module__ != "numpy":
        return torch.from_numpy(a.view(f"u{d.itemsize}").copy()).view(getattr(torch, d.name))
    return torch.from_numpy(a.copy())


def _from_torch(t) -> np.ndarray:
    d = gp.dtype(t.dtype)
    if d.numpy.type.__module__ != "numpy":
        return t.view(getattr(torch, f"uint{8 * d.itemsize}")).numpy().view(d.numpy)
    return t.numpy()


def _outcome(fn, convert=np.asarray):
    """(result type, dtype, bytes) of a call, or (exception type, message)."""
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return type(exc).__name__, str(exc)
    host = convert(r)
    library = {"jaxlib": "jax"}.get(type(r).__module__.split(".")[0], type(r).__module__.split(".")[0])
    return library, str(gp.dtype(host.dtype)), host.tobytes()


def _same(foreign, reference, library):
    """The foreign call gives the reference (NumPy path) outcome, in the caller's library."""
    if reference[0] in ("numpy",):
        assert foreign[0] == library, f"{library} in, {foreign[0]} out"
        assert foreign[1:] == reference[1:], f"{foreign[1]} vs {reference[1]}"
    else:
        assert foreign == reference


# --- torch CPU tensors through every op ---------------------------------------------------------------

@pytest.mark.parametrize("policy", ["torch", "numpy"])
@pytest.mark.parametrize("op", sorted(OPERANDS))
def test_torch_tensors_through_every_op(op, policy):
    (da, va), (db, vb) = OPERANDS[op]
    a, b = _numpy_array(da, va), _numpy_array(db, vb)
    fn = getattr(gp, op)
    reference = _outcome(lambda: fn(a, b, policy=policy))
    _same(_outcome(lambda: fn(_torch(a), _torch(b), policy=policy), _from_torch), reference, "torch")
    scalar = vb[1] if db != "bool" else True
    reference = _outcome(lambda: fn(a, scalar, policy=policy))
    _same(_outcome(lambda: fn(_torch(a), scalar, policy=policy), _from_torch), reference, "torch")


@pytest.mark.parametrize("op", sorted(n for n in OPERANDS if OPS[n].accepts != "ui" and not n.startswith("bitwise")))
def test_torch_bfloat16_tensors_through_every_op(op):
    a = _numpy_array(*BF16)
    b = _numpy_array("bfloat16", [2.0, 0.5, -1.0, 3.0])
    fn = getattr(gp, op)
    for args in ((a, b), (a, 1.5), (a, _numpy_array("float32", [1, 2, 3, 4]))):
        reference = _outcome(lambda: fn(*args, policy="torch"))
        foreign = [_torch(x) if isinstance(x, np.ndarray) else x for x in args]
        _same(_outcome(lambda: fn(*foreign, policy="torch"), _from_torch), reference, "torch")


def test_torch_where_and_unary_ops():
    cond = np.array([True, False, True, False])
    x, y = _numpy_array(*_MIXED[0]), _numpy_array(*_MIXED[1])
    for policy in ("torch", "numpy"):
        reference = _outcome(lambda: gp.where(cond, x, y, policy=policy))
        _same(_outcome(lambda: gp.where(_torch(cond), _torch(x), _torch(y), policy=policy), _from_torch), reference,
              "torch")
    for op, arr in (("negative", _numpy_array(*BF16)), ("absolute", x), ("invert", _numpy_array(*_INTS[0]))):
        reference = _outcome(lambda: getattr(gp, op)(arr, policy="torch"))
        _same(_outcome(lambda: getattr(gp, op)(_torch(arr), policy="torch"), _from_torch), reference, "torch")


def test_the_issue_example():
    r = gp.add(torch.arange(3.0), 1.5)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float32 and r.tolist() == [1.5, 2.5, 3.5]
    t = torch.tensor([1.5, 2.0, 3.0], dtype=torch.bfloat16)
    r = gp.multiply(t, 2, policy="torch")
    assert r.dtype == torch.bfloat16 and r.tolist() == [3.0, 4.0, 6.0]


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_torch_float8_tensors_by_bit_pattern(dtype):
    a = _numpy_array(dtype, [1.5, -2.0, 0.25, 448.0 if dtype.endswith("fn") else 57344.0])
    reference = _outcome(lambda: gp.add(a, a, policy="numpy"))
    _same(_outcome(lambda: gp.add(_torch(a), _torch(a), policy="numpy"), _from_torch), reference, "torch")
    assert gp.result_type(_torch(a), 1, policy="numpy") == dtype


def test_torch_complex32_on_the_cpu_says_what_to_do():
    t = torch.ones(3, dtype=torch.complex32)
    assert gp.result_type(t, t, policy="torch") is gp.complex32
    with pytest.raises(TypeError, match="complex32 has no NumPy storage.*complex64"):
        gp.add(t, t, policy="torch")


@pytest.mark.parametrize("policy", ["torch", "numpy", "jax"])
def test_result_type_reads_foreign_arrays(policy):
    t, j = torch.ones(3, dtype=torch.int16), jnp.ones(3, jnp.bfloat16)
    assert gp.result_type(t, 1.5, policy=policy) == gp.result_type(np.ones(3, np.int16), 1.5, policy=policy)
    assert gp.result_type(j, 2, policy=policy) == gp.result_type(np.ones(3, ml_dtypes.bfloat16), 2, policy=policy)


_TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                 "complex64", "complex128"]


def test_torch_result_type_of_tensors_agrees_with_torch():
    diffs = []
    for a in _TORCH_DTYPES:
        for b in _TORCH_DTYPES + [True, 3, 1.5, 1j]:
            x = torch.ones(2, dtype=getattr(torch, a))
            y = torch.ones((), dtype=getattr(torch, b)) if isinstance(b, str) else b
            want = str(torch.result_type(x, y)).replace("torch.", "")
            got = gp.result_type(x, y, policy="torch").name
            if got != want:
                diffs.append(f"  {a}[n] with {b}: torch {want}, gp {got}")
    assert not diffs, "\n".join(diffs)


# --- JAX arrays -----------------------------------------------------------------------------------------

def _from_jax(j) -> np.ndarray:
    return np.asarray(j)


@pytest.mark.parametrize("op", sorted(OPERANDS))
def test_jax_arrays_through_every_op(op):
    (da, va), (db, vb) = OPERANDS[op]
    if da == "float32" and db == "float64":
        db = "float32"   # JAX with x64 off has no float64 arrays
    a, b = _numpy_array(da, va), _numpy_array(db, vb)
    fn = getattr(gp, op)
    reference = _outcome(lambda: fn(a, b, policy="jax"))
    _same(_outcome(lambda: fn(jnp.asarray(a), jnp.asarray(b), policy="jax"), _from_jax), reference, "jax")
    reference = _outcome(lambda: fn(_numpy_array(*BF16), 2, policy="jax"))
    _same(_outcome(lambda: fn(jnp.asarray(_numpy_array(*BF16)), 2, policy="jax"), _from_jax), reference, "jax")


def test_a_cpu_jax_array_runs_on_the_cpu_engine():
    j = jnp.arange(4.0)
    assert describe(j).host and interop.device_kind(j) == "cpu"
    r = gp.add(j, 1.5, policy="jax")
    assert isinstance(r, jax.Array) and r.dtype == jnp.float32 and list(r.devices())[0].platform == "cpu"
    assert r.tolist() == [1.5, 2.5, 3.5, 4.5]


def test_jax_results_jax_cannot_hold_are_refused():
    with pytest.raises(TypeError, match="float64.*jax_enable_x64 off"):
        gp.add(jnp.arange(3), 1.5, policy="numpy")   # NumPy: int32 + 1.5 is float64
    with jax.enable_x64(True):
        r = gp.add(jnp.arange(3, dtype=jnp.int32), 1.5, policy="numpy")
        assert r.dtype == jnp.float64


def test_jax_arrays_cannot_be_written():
    j = jnp.zeros(3, jnp.float32)
    with pytest.raises(ValueError, match="read-only.*JAX arrays are immutable"):
        gp.add(j, 1.0, out=j, policy="jax")


# --- gp.fuse -----------------------------------------------------------------------------------------

def _chain(a, b, c):
    return a * b + c - 1.5


@pytest.mark.parametrize("dtypes", [("float32", "int32", "float32"), ("bfloat16", "bfloat16", "float32"),
                                    ("float16", "int8", "bfloat16")], ids="-".join)
@pytest.mark.parametrize("policy", ["torch", "jax"])
def test_fuse_takes_foreign_arrays(dtypes, policy):
    f = gp.fuse(_chain, policy=policy)
    args = [_numpy_array(d, v) for d, v in zip(dtypes, ([1.5, 2, 3, 4], [2, 3, 4, 5], [0.5, 1, -1, 2]))]
    reference = _outcome(lambda: f(*args))
    _same(_outcome(lambda: f(*[_torch(x) for x in args]), _from_torch), reference, "torch")
    _same(_outcome(lambda: f(*[jnp.asarray(x) for x in args]), _from_jax), reference, "jax")
    out = _torch(np.zeros(4, gp.dtype(reference[1]).numpy))
    assert f(*[_torch(x) for x in args], out=out) is out and _from_torch(out).tobytes() == reference[2]


# --- zero copy --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_torch_tensors_are_adopted_without_a_copy(dtype):
    t = _torch(_numpy_array(dtype, [1, 2, 3, 4, 5, 6]))[::2]   # a strided view
    view = interop.adopt(t)
    assert view.dtype == dtype and view._storage.ctypes.data == t.data_ptr()
    assert view._storage.strides == tuple(s * t.element_size() for s in t.stride())
    bits = f"u{view.dtype.itemsize}"
    np.testing.assert_array_equal(view.numpy().view(bits), _from_torch(t.contiguous()).view(bits))


@pytest.mark.parametrize("dtype", ["float32", "uint16", "bfloat16", "float8_e4m3fn"])
def test_results_go_back_to_torch_without_a_copy(dtype):
    a = _numpy_array(dtype, [1, 2, 3])
    t = interop.export(gp.asarray(a), torch.empty(0))
    assert isinstance(t, torch.Tensor) and t.dtype == getattr(torch, dtype) and t.data_ptr() == a.ctypes.data
    assert _from_torch(t).tobytes() == a.tobytes()


def test_jax_arrays_are_adopted_without_a_copy_and_aligned_results_return_without_one():
    j = jnp.asarray(np.arange(4, dtype=np.float32))
    assert interop.adopt(j)._storage.ctypes.data == j.unsafe_buffer_pointer()
    jb = jnp.asarray(_numpy_array(*BF16))
    assert interop.adopt(jb)._storage.ctypes.data == jb.unsafe_buffer_pointer()
    # XLA imports host memory in place only when it is 64-byte aligned
    raw = np.zeros(64 + 16, np.uint8)
    start = -raw.ctypes.data % 64
    aligned = raw[start:start + 16].view(np.float32)
    back = interop.export(gp.asarray(aligned), j)
    assert back.unsafe_buffer_pointer() == aligned.ctypes.data


def test_out_is_the_callers_tensor_written_in_place():
    t = torch.arange(4, dtype=torch.int32)
    alias = t[:]
    assert gp.multiply(t, 3, out=t, policy="torch") is t
    assert t.tolist() == [0, 3, 6, 9] and alias.tolist() == [0, 3, 6, 9]
    with pytest.raises(TypeError, match="canCast"):
        gp.add(t, 1.5, out=t, policy="torch")       # torch's in-place rule
    out = torch.zeros(4, dtype=torch.bfloat16)
    gp.add(np.ones(4, np.float32), 0.5, out=out, policy="torch")
    assert out.tolist() == [1.5] * 4


# --- one rule for mixed inputs ------------------------------------------------------------------------------

def test_mixed_inputs_take_the_type_of_the_first_foreign_array():
    n, t, j = np.ones(3, np.float32), torch.ones(3), jnp.ones(3)
    assert isinstance(gp.add(n, t), torch.Tensor)          # NumPy never decides
    assert isinstance(gp.add(t, j), torch.Tensor)
    assert isinstance(gp.add(j, t), jax.Array)
    assert isinstance(gp.add(1.0, j), jax.Array)
    g = gp.asarray(n)
    assert isinstance(gp.add(t, g), gp.Array) and isinstance(g + t, gp.Array)   # a gp.Array decides first
    assert interop.result_like([n, 1.0]) is None and interop.result_like([n, j, t]) is j


# --- on a GPU ------------------------------------------------------------------------------------------

def _cuda_torch():
    return torch.cuda.is_available()


@pytest.mark.parametrize("op", sorted(OPERANDS))
@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_torch(), reason="needs a CUDA device (and a CUDA build of torch)")
def test_torch_cuda_tensors_through_every_op(op):
    (da, va), (db, vb) = OPERANDS[op]
    a, b = _numpy_array(da, va), _numpy_array(db, vb)
    fn = getattr(gp, op)
    reference = _outcome(lambda: fn(a, b, policy="torch"))
    result = _outcome(lambda: fn(_torch(a).cuda(), _torch(b).cuda(), policy="torch"), lambda r: _from_torch(r.cpu()))
    _same(result, reference, "torch")
    if reference[0] == "numpy":
        r = fn(_torch(a).cuda(), _torch(b).cuda(), policy="torch")
        assert r.device.type == "cuda"


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_torch(), reason="needs a CUDA device (and a CUDA build of torch)")
def test_torch_cuda_bfloat16_in_place_and_zero_copy():
    t = _torch(_numpy_array(*BF16)).cuda()
    view = interop.adopt(t)
    assert view.device.startswith("cuda") and view._storage.data.ptr == t.data_ptr()
    r = gp.add(t, 1.5, policy="torch")
    assert r.device.type == "cuda" and r.dtype == torch.bfloat16
    assert _from_torch(r.cpu()).tobytes() == gp.add(_numpy_array(*BF16), 1.5, policy="torch").tobytes()
    gp.multiply(t, 2, out=t, policy="torch")
    assert _from_torch(t.cpu()).tolist() == (_numpy_array(*BF16) * 2).tolist()


@pytest.mark.gpu
def test_cupy_arrays_stay_cupy_and_fuse():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no driver
        pytest.skip("needs a CUDA device")
    a, b = _numpy_array(*_MIXED[0]), _numpy_array(*_MIXED[1])
    for op in sorted(OPERANDS):
        (da, va), (db, vb) = OPERANDS[op]
        x, y = _numpy_array(da, va), _numpy_array(db, vb)
        reference = _outcome(lambda: getattr(gp, op)(x, y, policy="torch"))
        result = _outcome(lambda: getattr(gp, op)(cp.asarray(x), cp.asarray(y), policy="torch"), lambda r: r.get())
        _same(result, reference, "cupy")
    f = gp.fuse(_chain, policy="torch")
    assert f(cp.asarray(a), cp.asarray(b), cp.asarray(a)).get().tobytes() == f(a, b, a).tobytes()


@pytest.mark.gpu
def test_jax_gpu_arrays_run_on_the_gpu():
    try:
        devices = jax.devices("gpu")
    except RuntimeError:   # no GPU backend in this jaxlib
        devices = []
    if not devices:
        pytest.skip("needs a JAX with a GPU")
    j = jax.device_put(jnp.arange(4.0), devices[0])
    assert interop.device_kind(j) == "cuda" and not describe(j).host
    r = gp.add(j, 1.5, policy="jax")
    assert list(r.devices())[0].platform == "gpu" and np.asarray(r).tolist() == [1.5, 2.5, 3.5, 4.5]
