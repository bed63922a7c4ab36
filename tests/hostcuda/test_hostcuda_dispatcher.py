"""The compiled dispatcher's CUDA entries (gpupromote/dispatch/fastpath/device.c, "CUDA entries": a call on CuPy
arrays as one cuLaunchKernel from C) against the Python op function behind it, on the host tier:
CuPy is tests/hostcuda/fake_cupy.py and cuLaunchKernel its cu_launch_kernel, which runs the same
g++-built kernels with the driver's checks.

Each call runs on fresh device arrays through both paths and must give the same outcome (result
type, dtype, shape and bits, or the same exception and message), leave the same contents in every
array and raise the same warnings; the compiled side runs twice (its miss, then its hit). The
calls it must serve itself (contiguous, aligned, on the current device) are held to one
driver-level launch each; the rest must decline to the Python path, which broadcasts, runs the
strided kernels, switches devices or raises.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import opfunctions
from gpupromote.promotion.policies import get_policy
from tests import hostcuda
from tests.support.refcounts import assert_no_reference_leaked_or_dropped
from tests.support.engine_cases import values
from tests.hostcuda.support import HOSTCUDA_MARKS, host_result

pytestmark = [*HOSTCUDA_MARKS, pytest.mark.skipif(opfunctions._fastpath is None,
                                                  reason="no compiled dispatcher (not built, or GPUPROMOTE_PURE_PYTHON)")]


@pytest.fixture(scope="module")
def host():
    with hostcuda.installed() as cp:
        gp.add(cp.ones(1, np.float32), cp.ones(1, np.float32))   # a CuPy array reaches the dispatcher: bound
        yield cp


def _snapshot(x, cp):
    if isinstance(x, (cp.ndarray, gp.Array)):
        name, a = host_result(x, cp)
        return (type(x).__name__, name, a.shape, a.tobytes())
    return repr(x)


def _run(fn, make, cp):
    """fn(*args, **kwargs) on fresh arguments: (outcome, arguments after, warnings, driver launches)."""
    args, kwargs = make()
    launches = cp.driver_launches
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kwargs)
            outcome = (_snapshot(r, cp), r is kwargs.get("out", object()))
        except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
            outcome = ("raises", type(exc).__name__, str(exc))
    after = [_snapshot(x, cp) for x in (*args, kwargs.get("out"))]
    return (outcome, after, [f"{w.category.__name__}: {w.message}" for w in seen]), cp.driver_launches - launches


def _check(op, label, make, cp, served):
    """Both paths give one outcome; the compiled one launched from C ``served`` (True / False;
    None: either, as long as the outcome is the Python path's)."""
    compiled = getattr(gp, op)
    want, python_launches = _run(compiled.__wrapped__, make, cp)
    assert python_launches == 0, f"{op}{label}: the Python path launched through the driver entry"
    for attempt in ("miss", "hit"):
        got, launches = _run(compiled, make, cp)
        assert got == want, f"{op}{label} [{attempt}]:\n    C      {got}\n    Python {want}"
        if attempt == "hit" and served is not None:
            assert launches == int(served), \
                f"{op}{label}: {launches} driver launch(es), expected {'one' if served else 'none (declined)'}"


# ---------------------------------------------------------------------------------------------
# Calls the compiled dispatcher serves: dtypes, scalars, policies

# (op, operands: a dtype name is a device array of 37 elements, anything else a Python scalar)
SERVED = [
    ("add", ("float32", "float32")),
    ("add", ("float16", "float32")),
    ("add", ("int8", 3)),
    ("add", ("int8", "float32")),
    ("add", ("int32", 2.5)),
    ("add", ("bfloat16", "float32")),
    ("add", ("uint8", True)),
    ("add", ("complex64", 1 + 2j)),
    ("add", (2.5, "float16")),
    ("subtract", ("float64", "int64")),
    ("subtract", ("complex128", 0.5)),
    ("multiply", ("int16", "uint16")),
    ("multiply", ("float16", 1e-3)),
    ("true_divide", ("int32", "int32")),
    ("maximum", ("float32", "float64")),
    ("minimum", ("uint32", 7)),
    ("logical_and", ("bool", "int8")),
    ("where", ("bool", "float32", 0.0)),
    ("where", ("bool", "int8", "float16")),
    ("negative", ("int16",)),
    ("absolute", ("complex64",)),
]
POLICIES = ["numpy", "torch", "jax", "paddle"]


def _maker(cp, operands, n=37, out=None, policy="numpy"):
    def make():
        args = tuple(cp.asarray(values(x, n, seed)) if isinstance(x, str) else x for seed, x in enumerate(operands))
        kwargs = {"policy": policy}
        if out is not None:
            kwargs["out"] = out(args)
        return args, kwargs
    return make


def _label(operands, policy):
    return f"({', '.join(map(str, operands))}) [{policy}]"


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op, operands", SERVED, ids=[f"{op}-{'-'.join(map(str, xs))}" for op, xs in SERVED])
def test_served_calls_equal_the_python_path(host, op, operands, policy):
    make = _maker(host, operands, policy=policy)
    # a policy may refuse a pair (Paddle's bool & int8 logical_and is fine, torch's uint32 is not
    # everywhere): then both raise the same error and nothing launches
    args, kwargs = make()
    try:
        getattr(gp, op).__wrapped__(*args, **kwargs)
        served = True
    except Exception:  # noqa: BLE001 - a refusal is compared like any outcome
        served = False
    # JAX without x64 makes 64-bit arrays 32-bit before any op: the Python path casts them first
    canonical = get_policy(policy).rules.canonical or {}
    served = served and not any(isinstance(x, str) and x in canonical for x in operands)
    _check(op, _label(operands, policy), make, host, served)


def test_sizes_around_the_vector_width(host):
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257, 4097):
        for operands in (("float16", "float32"), ("int8", 3), ("complex128", "float64")):
            _check("add", f"{operands} n={n}", _maker(host, operands, n=n), host, True)


def test_a_grid_larger_than_the_resident_blocks(host):
    """More elements than one wave of blocks covers: the kernel's grid-stride loop does the rest,
    with the grid the Python launcher would choose."""
    from gpupromote.engines.cuda import engine as cuda_cupy
    sms = hostcuda.fake_cupy.SMS
    old = cuda_cupy.set_launch_config(block=32)
    try:
        host.reset(sms=1)      # one SM: 2048 / 32 = 64 resident blocks
        _check("multiply", "(float32 x 20000, 0.5)", _maker(host, ("float32", 0.5), n=20000), host, True)
        assert {grid for _, grid, _, _ in host.launches} == {64}
    finally:
        host.reset(sms=sms)
        cuda_cupy.set_launch_config(*old)


# ---------------------------------------------------------------------------------------------
# Calls it declines: the Python path runs them, or raises

DECLINED = {
    "broadcast": lambda cp: (cp.asarray(values("float32", 12, 0)).reshape(3, 4), cp.asarray(values("float32", 4, 1))),
    "strided": lambda cp: (cp.asarray(values("float32", 20, 0))[::2], cp.asarray(values("float32", 10, 1))),
    "misaligned view": lambda cp: (cp.asarray(values("float32", 21, 0))[1:], cp.asarray(values("float32", 20, 1))),
    "Fortran order": lambda cp: (cp.asarray(np.asfortranarray(values("float32", 12, 0).reshape(3, 4))),
                                 cp.asarray(np.asfortranarray(values("float32", 12, 1).reshape(3, 4)))),
    "0-d device array": lambda cp: (cp.asarray(values("float32", 5, 0)), cp.asarray(np.float16(2.5))),
    "empty": lambda cp: (cp.asarray(values("float32", 0, 0)), cp.asarray(values("float32", 0, 1))),
    "host array beside a device one": lambda cp: (cp.asarray(values("float32", 5, 0)), values("float32", 5, 1)),
}


@pytest.mark.parametrize("policy", ["numpy", "torch"])
@pytest.mark.parametrize("case", list(DECLINED))
def test_declined_calls_equal_the_python_path(host, case, policy):
    def make():
        return DECLINED[case](host), {"policy": policy}
    _check("add", f"[{case}, {policy}]", make, host, False)


# Python scalars at the edges of their plan: out of the range the cached plan holds for (NumPy
# raises, PyTorch wraps), or too large for the type they are folded into (a warning, or not)
EDGE_VALUES = [("int8", 300), ("int8", -129), ("uint8", -1), ("int64", 2**63), ("float16", 1e300),
               ("float32", 1e300), ("float16", 65520.0), ("bfloat16", 3.5e38), ("int32", float("nan")),
               ("complex64", complex(1e300, 1)), ("bool", 2)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype, value", EDGE_VALUES, ids=[f"{d}-{v!r}" for d, v in EDGE_VALUES])
def test_scalars_at_the_edges_equal_the_python_path(host, dtype, value, policy):
    _check("add", f"({dtype}, {value!r}) [{policy}]", _maker(host, (dtype, value), policy=policy), host, None)


def test_a_2d_contiguous_call_is_served(host):
    def make():
        return (host.asarray(values("float16", 12, 0)).reshape(3, 4),
                host.asarray(values("float32", 12, 1)).reshape(3, 4)), {"policy": "torch"}
    _check("add", "[(3, 4) + (3, 4)]", make, host, True)


def test_another_current_device_declines(host):
    """The entry's kernel is loaded on device 0: with device 1 current, the Python path makes the
    arrays' device current and launches there."""
    make = _maker(host, ("float32", "float16"))
    _check("add", "[device 0]", make, host, True)
    with host.cuda.Device(1):
        _check("add", "[device 0 arrays, device 1 current]", make, host, False)


OUTS = {
    "out of the result dtype": (lambda args, cp: cp.empty(37, np.float32), True),
    "out is an operand (in place)": (lambda args, cp: args[0], True),
    "out of another dtype (cast)": (lambda args, cp: cp.empty(37, np.float64), False),
    "out of another shape": (lambda args, cp: cp.empty(36, np.float32), False),
    "out in host memory": (lambda args, cp: np.empty(37, np.float32), False),
}


@pytest.mark.parametrize("case", list(OUTS))
def test_out_equals_the_python_path(host, case):
    build, served = OUTS[case]
    make = _maker(host, ("float32", "float32"), out=lambda args: build(args, host))
    _check("add", f"[{case}]", make, host, served)


def test_out_overlapping_an_operand_declines(host):
    """out 4 elements (16 bytes: still aligned) past an operand in one buffer: not element for
    element, so the Python path computes into a temporary first."""
    def make():
        buffer = host.asarray(values("float32", 41, 0))
        return (buffer[:37], host.asarray(values("float32", 37, 1))), {"out": buffer[4:]}
    _check("add", "[out overlapping operand 0]", make, host, False)


def test_the_store_rule_refuses_in_place_as_python_does(host):
    make = _maker(host, ("int8", "float32"), out=lambda args: args[0], policy="torch")
    _check("add", "[int8 += float32, torch]", make, host, False)


# ---------------------------------------------------------------------------------------------
# Launch failures, references

def test_a_failed_launch_raises_and_is_not_run_again(host):
    a, b = host.asarray(values("float32", 9, 0)), host.asarray(values("float32", 9, 1))
    gp.add(a, b)   # the entry
    saved = dict(hostcuda.fake_cupy._functions)
    hostcuda.fake_cupy._functions.clear()   # every CUfunction handle now unknown to the "driver"
    launches = len(host.launches)
    try:
        with pytest.raises(host.CUDADriverError, match="CUDA_ERROR_INVALID_HANDLE: no loaded function"):
            gp.add(a, b)
    finally:
        hostcuda.fake_cupy._functions.update(saved)
    assert len(host.launches) == launches, "the Python path ran the call after the launch failed"


def test_device_calls_keep_reference_counts(host):
    a, b = host.asarray(values("float16", 64, 0)), host.asarray(values("float32", 64, 1))
    out = host.empty(64, np.float32)
    gp.add(a, b, policy="torch")

    def run(n):
        for _ in range(n):
            gp.add(a, b, policy="torch")
            gp.add(a, 2.5, policy="torch")
            gp.add(b, b, policy="torch", out=out)
    launches = host.driver_launches
    assert_no_reference_leaked_or_dropped(run, [a, b, out, a.dtype, b.dtype, "torch", None, True, False])
    assert host.driver_launches - launches == 3 * 2010


def test_a_new_thread_makes_its_context_current_before_launching(host):
    """cuLaunchKernel needs the device's context current on the calling thread (the emulated
    driver refuses it otherwise): a thread whose first call is a cache hit must make it current
    itself, as CuPy's own launcher does once per thread and device."""
    import threading
    make = _maker(host, ("float16", "float32"), policy="torch")
    args, kwargs = make()
    want = host_result(gp.add.__wrapped__(*args, **kwargs), host)
    gp.add(*args, **kwargs)   # the entry, made on this thread
    results = []

    def worker():
        launches = host.driver_launches
        try:
            results.append((host_result(gp.add(*args, **kwargs), host), host.driver_launches - launches))
        except Exception as exc:  # noqa: BLE001 - reported below
            results.append(exc)
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    (got, launches), = results
    assert launches == 1 and got[0] == want[0] and got[1].tobytes() == want[1].tobytes()


def test_the_real_cupy_has_every_handle_the_c_path_reads():
    """What the host tier stands in for, checked on the installed CuPy (no GPU needed): the
    callables device_handles hands over, and the attributes fastpath/device.c reads by name."""
    cupy = pytest.importorskip("cupy")
    from gpupromote.engines.cuda import device as _cuda_device, engine as cuda_cupy
    saved = _cuda_device._cp
    _cuda_device._cp = cupy
    try:
        module, handles = cuda_cupy.device_handles()
    finally:
        _cuda_device._cp = saved
    assert module is cupy and handles[0] is cupy.ndarray and handles[1] is cupy.empty
    assert all(callable(h) for h in handles)
    assert issubclass(handles[4], Exception)
    for owner, names in ((cupy.ndarray, ("shape", "strides", "data", "dtype")),
                         (cupy.cuda.MemoryPointer, ("ptr", "device_id")),
                         (cupy.cuda.function.Function, ("ptr",))):
        missing = [n for n in names if not hasattr(owner, n)]
        assert not missing, f"{owner.__name__} has no {missing}"
    assert cupy.cuda.Stream.null.ptr == 0   # a stream's ptr is set per instance
