"""Foreign arrays of every view kind, in and as out= (issue 25): each one is either read with the values
its library shows, or refused with a message that names the fix - never read as raw memory that
holds other values, never written where its library refuses.

* torch's view flags: the negative bit (``z.conj().imag``, ``torch._neg_view``) and the conjugate bit
  (``z.conj()``) are read resolved, in eager calls and in gp.fuse, and refused as out=; an expanded
  (stride-0) tensor is read, and refused as out= as torch refuses it (a RuntimeError, here also a
  ValueError); non-contiguous, transposed and offset views are read and written in place; a meta
  tensor (no data), a sparse one and one that requires grad are refused with the fix, while
  gp.result_type still describes a meta tensor.
* JAX arrays: read (eager and fused), refused as out= (immutable).
* Objects that misuse DLPack: a __dlpack__ that returns no capsule, a __dlpack_device__ that returns
  no integers or raises, a device type gpupromote has no engine for, and a claim of CUDA memory on
  a machine without a usable CUDA driver: each a TypeError that says what to do.
"""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core.errors import OverlappingOutput

torch = pytest.importorskip("torch")
jnp = pytest.importorskip("jax.numpy")

pytestmark = pytest.mark.oracle

_Z = torch.tensor([1 + 2j, -3 - 4j, 5.5 + 0.25j, -0.0 + 7j], dtype=torch.complex64)
_T = torch.arange(24, dtype=torch.float32).reshape(4, 6) - 11.5


def _views():
    """label -> (a tensor view, what reading it must give, as torch resolves it)."""
    neg_real = torch._neg_view(_T)
    return {
        "negative bit (z.conj().imag)": _Z.conj().imag,
        "negative bit (torch._neg_view)": neg_real,
        "negative bit, transposed": torch._neg_view(_T).T,
        "conjugate bit (z.conj())": _Z.conj(),
        "expanded (stride 0)": torch.tensor([2.5, -1.0]).reshape(2, 1).expand(2, 5),
        "non-contiguous (every other column)": _T[:, ::2],
        "transposed": _T.T,
        "offset view": _T[1:, 2:],
        "0-d": torch.tensor(3.25),
        "empty": torch.zeros(0, 3),
    }


VIEWS = _views()


def _same(got, want):
    assert isinstance(got, torch.Tensor), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.resolve_conj().resolve_neg(), want.resolve_conj().resolve_neg()), (got, want)


@pytest.mark.parametrize("label", list(VIEWS))
def test_views_are_read_with_their_values_eagerly(label):
    v = VIEWS[label]
    _same(gp.add(v, 1.5, policy="torch"), torch.add(v, 1.5))
    _same(gp.multiply(v, v, policy="torch"), torch.mul(v, v))


@pytest.mark.parametrize("label", list(VIEWS))
def test_views_are_read_with_their_values_in_fuse(label):
    v = VIEWS[label]
    f = gp.fuse(lambda a: a * 2 - 1, policy="torch")
    _same(f(v), v * 2 - 1)


@pytest.mark.parametrize("label", [k for k in VIEWS if "bit" in k])
def test_a_view_with_a_lazy_bit_is_refused_as_out(label):
    v = VIEWS[label]
    before = v.clone()
    with pytest.raises(ValueError, match=r"(negative|conjugate) bit.*copy_"):
        gp.add(torch.ones(v.shape, dtype=v.dtype), 1, out=v, policy="torch")
    with pytest.raises(ValueError, match=r"bit"):
        gp.fuse(lambda a: a + 1, policy="torch")(torch.ones(v.shape, dtype=v.dtype), out=v)
    assert torch.equal(v.resolve_conj().resolve_neg(), before.resolve_conj().resolve_neg()), "out is untouched"


def test_an_expanded_out_is_refused_as_torch_refuses_it():
    e = torch.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.add(torch.ones(3), torch.ones(3), out=e)
    for call in (lambda: gp.add(torch.ones(3), torch.ones(3), out=e, policy="torch"),
                 lambda: gp.fuse(lambda a, b: a + b)(torch.ones(3), torch.ones(3), out=e)):
        with pytest.raises(OverlappingOutput, match="single memory location.*clone") as info:
            call()
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    assert e.tolist() == [0.0, 0.0, 0.0]
    broadcast_row = torch.zeros(4, 1).expand(4, 3)
    with pytest.raises(OverlappingOutput):
        gp.add(torch.ones(4, 3), 1, out=broadcast_row)
    single = torch.zeros(1, 1).expand(1, 1)   # one element: nothing shares a location
    assert gp.add(torch.ones(1, 1), 1, out=single) is single and single.item() == 2.0


@pytest.mark.parametrize("label", ["non-contiguous (every other column)", "transposed", "offset view"])
def test_strided_views_are_written_in_place(label):
    base = _T.clone()
    view = {"non-contiguous (every other column)": lambda t: t[:, ::2], "transposed": lambda t: t.T,
            "offset view": lambda t: t[1:, 2:]}[label](base)
    want = torch.add(view, 0.5)
    assert gp.add(view, 0.5, out=view, policy="torch") is view
    assert torch.equal(view, want)
    assert torch.equal(base[0, 1::2], _T[0, 1::2]) if label.startswith("non") else True


def test_a_meta_tensor_is_described_but_not_computed_on():
    m = torch.empty(3, 2, device="meta", dtype=torch.float16)
    assert gp.result_type(m, 1.0, policy="torch") == gp.float16
    for call in (lambda: gp.add(m, 1), lambda: gp.fuse(lambda a: a + 1)(m), lambda: gp.asarray(m),
                 lambda: gp.add(np.ones((3, 2), np.float16), 1, out=m)):
        with pytest.raises(TypeError, match="meta device has no data.*gp.result_type"):
            call()


@pytest.mark.parametrize("make", [lambda: torch.ones(3).to_sparse(), lambda: torch.eye(2).to_sparse_csr()],
                         ids=["coo", "csr"])
def test_a_sparse_tensor_is_refused_with_to_dense(make):
    s = make()
    for call in (lambda: gp.add(s, 1), lambda: gp.fuse(lambda a: a + 1)(s), lambda: gp.add(s, s, out=s)):
        with pytest.raises(TypeError, match=r"sparse.*to_dense\(\)"):
            call()


def test_a_tensor_that_requires_grad_is_refused_with_detach():
    t = torch.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="detach"):
        gp.add(t, 1)


def test_jax_arrays_in_and_as_out():
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    r = gp.add(x, 1.5, policy="jax")
    assert type(r).__module__.split(".")[0] in ("jax", "jaxlib") and np.array_equal(np.asarray(r), np.asarray(x) + 1.5)
    f = gp.fuse(lambda a, b: a * b + 1, policy="jax")
    assert np.array_equal(np.asarray(f(x, x)), np.asarray(x) * np.asarray(x) + 1)
    for call in (lambda: gp.add(x, 1.5, out=x), lambda: f(x, x, out=x)):
        with pytest.raises(ValueError, match="read-only .*drop out="):
            call()


# --- objects that misuse DLPack -------------------------------------------------------------------------

class _Foreign:
    dtype, shape, ndim = np.dtype("float32"), (3,), 1

    def __init__(self):
        self.a = np.array([1.0, 2.0, 3.0], np.float32)

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


class _NoCapsule(_Foreign):
    def __dlpack__(self, **kwargs):
        return "not a capsule"


class _TextDevice(_Foreign):
    def __dlpack_device__(self):
        return ("cpu", 0)


class _NumberDevice(_Foreign):
    def __dlpack_device__(self):
        return 7


class _RaisingDevice(_Foreign):
    def __dlpack_device__(self):
        raise ValueError("Unknown device type meta for Dlpack")


class _OtherDevice(_Foreign):
    def __dlpack_device__(self):
        return (14, 0)   # kDLOneAPI


class _ClaimsCuda(_Foreign):
    def __dlpack_device__(self):
        return (2, 0)    # kDLCUDA


def _cuda_usable() -> bool:
    from gpupromote.engines.cuda.device import available
    return available()[0]


_MISUSES = [
    (_NoCapsule, r"__dlpack__\(\) returned a str, not a DLPack capsule.*np\.asarray"),
    (_TextDevice, r"__dlpack_device__\(\) returned \('cpu', 0\), not \(device type, device id\)"),
    (_NumberDevice, r"__dlpack_device__\(\) returned 7, not \(device type, device id\)"),
    (_RaisingDevice, r"cannot say where its data lives .*Unknown device type meta.*move it"),
    (_OtherDevice, r"DLPack device type 14.*move it to one first"),
    pytest.param(_ClaimsCuda, r"says its data lives on a CUDA device.*move the array to the CPU",
                 marks=pytest.mark.skipif(_cuda_usable(), reason="a CUDA device is usable here")),
]


@pytest.mark.parametrize("cls, message", _MISUSES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("how", ["eager", "fuse", "out", "asarray"])
def test_dlpack_misuse_is_a_clear_type_error(cls, message, how):
    call = {"eager": lambda x: gp.add(x, 1), "fuse": gp.fuse(lambda a: a * 2),
            "out": lambda x: gp.add(np.ones(3, np.float32), 1, out=x), "asarray": gp.asarray}[how]
    with pytest.raises(TypeError, match=message) as info:
        call(cls())
    text = str(info.value)
    for raw in ("PyCapsule_GetName", "invalid literal for int()", "cudaErrorInsufficientDriver:"):
        assert not text.startswith(raw)
