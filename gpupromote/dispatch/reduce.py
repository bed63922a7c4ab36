"""The public reductions: gp.sum, prod, mean, var, std, max, min, any, all, argmax, argmin,
cumsum, cumprod.

A call resolves its plan as every op does (api.plan_for: promotion/resolve.py gives the result and
accumulator dtypes per policy), builds the kernel IR's Reduction (kernel/reduce.py) and runs it on
the CPU engine over (rows, K) views of the operand: the kept axes flattened into rows, the reduced
axes into K. The order of the additions is kernel/reduce.py's: it depends on K only, never on the
thread count. Inside gp.fuse a reduction is recorded like any op (dispatch/fuse.py).

Defaults follow the policy's framework: var / std divide by N - ddof with ddof 0 (NumPy, JAX,
TensorFlow, the Array API) or 1 (PyTorch's correction=1, Paddle's unbiased=True); ``dtype=`` casts
the operand to that dtype, accumulates and returns in it (NumPy's and PyTorch's dtype argument).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..core import caches
from ..core import dtypes as D
from ..core.ops import REDUCTION_OPS
from . import foreign as interop
from .api import CURRENT_POLICY, plan_for, spec
from .array import Array
from .operands import is_dask, is_device, lazy, native, storage_of, wants_gp_array
from .host_arrays import as_host_array, host_storages
from .opfunctions import compiled_reduction, reduce_entry
from ..promotion.policies import get_policy

__all__ = ["REDUCTION_FUNCTIONS", "reduce", "normalize_axes", "default_ddof", "reduction_plan", "reduction_layout",
           "run_reduction"]

_SCANS = ("cumsum", "cumprod")
_ARGS = ("argmax", "argmin")
_NO_IDENTITY = ("max", "min", "argmax", "argmin")
_OPMATH = {"float16": D.float32, "bfloat16": D.float32, "float8_e4m3fn": D.float32, "float8_e5m2": D.float32}


def default_ddof(policy_name: str) -> int:
    """The divisor's N - ddof of var / std by default: torch.var's correction=1, paddle.var's
    unbiased=True; 0 for NumPy, JAX, TensorFlow and the Array API."""
    return 1 if get_policy(policy_name).framework.lower().startswith(("pytorch", "torch", "paddle")) else 0


def normalize_axes(axis, ndim: int, op: str) -> tuple:
    """The sorted, non-negative reduced axes of ``axis`` (None: all)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis must be None, an int or a tuple of ints, not {type(a).__name__}")
        a = int(a)
        if not -ndim <= a < max(ndim, 1 if op in _SCANS else 0) and not (ndim == 0 and a in (0, -1)):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: duplicate value in 'axis'")
    return tuple(sorted(out))


def _operand(x):
    if isinstance(x, Array):
        return x.storage, x.dtype
    x = native(storage_of(x))
    if not hasattr(x, "dtype") or not hasattr(x, "shape"):
        x = np.asarray(x)
    return x, D.dtype(x.dtype)


def reduce(op: str, x, axis=None, keepdims=False, dtype=None, ddof=None, out=None, policy=None):
    """``op`` (a REDUCTION_OPS name) of ``x`` over ``axis`` under ``policy``."""
    tracer = getattr(x, "_tracer", None)
    if tracer is not None:   # inside gp.fuse: recorded, not run
        return tracer.record_reduction(op, x, dict(axis=axis, keepdims=keepdims, dtype=dtype, ddof=ddof), policy)
    if is_dask(x) or is_dask(out):   # a lazy dask graph: dask's tree reduction, gpupromote kernels per block
        return lazy("reduce")(op, x, axis, keepdims, dtype, ddof, out, policy)
    if interop.is_foreign(x) or (out is not None and interop.is_foreign(out)):
        return interop.call(lambda views, view_out: reduce(op, views[0], axis, keepdims, dtype, ddof, view_out,
                                                           policy), [x], out)
    name = policy or CURRENT_POLICY.get()
    # a host gp.Array's fast call is its storage's (host_arrays.host_storages), its result wrapped
    s = x
    if type(x) is Array:
        s = host_storages([x])
        s = x if s is None else s[0]
    if type(s) is np.ndarray and out is None and dtype is None and ddof is None and s.size and s.flags.c_contiguous \
            and (axis is None or type(axis) is int):
        key = (op, s.dtype, s.ndim, axis, keepdims, name)
        runner = _fast.get(key, _UNSET)
        if runner is _UNSET:
            runner = _fast[key] = _fast_runner(op, s, axis, keepdims, name)
        if runner is not None:
            return runner(s) if s is x else as_host_array(runner(s))
    elif out is None and dtype is None and ddof is None and (axis is None or type(axis) is int) \
            and type(s) is not np.ndarray and type(s) is not Array and is_device(s) and s.size and s.flags.c_contiguous:
        key = (op, s.dtype, s.ndim, axis, keepdims, name, type(s))
        runner = _fast_device.get(key, _UNSET)
        if runner is _UNSET:
            runner = _fast_device[key] = _fast_device_runner(op, s, axis, keepdims, name)
        if runner is not None:
            result = runner(s)
            if result is not None:
                return result
    arr, xdt = _operand(x)
    plan = reduction_plan(op, xdt, arr.ndim, dtype, name)
    if is_device(arr):
        result = _run_cuda(op, plan, arr, axis, keepdims, name, ddof)
        return result if out is None else _into_device_out(op, plan, result, out)
    for d in (xdt, plan.result):
        if d.numpy is None:
            raise TypeError(f"gp.{op}: {d.name} has no numpy storage, so it has no CPU kernel")
    result = _run(op, plan, arr, axis, keepdims, name, ddof)
    if out is not None:
        target = storage_of(out)
        if tuple(target.shape) != result.shape:
            raise ValueError(f"gp.{op}: out has shape {tuple(target.shape)}, the result {result.shape}")
        np.copyto(target, result, casting="unsafe")
        return out
    if wants_gp_array([x]) or (result.dtype != plan.result.numpy):
        return Array(result, plan.result)
    return result


_plans: dict = {}
caches.register(_plans.clear)

# Calls that reduce a whole C-contiguous NumPy array, or its last axis, with the defaults (no
# dtype=, ddof= or out=): by (op, dtype, ndim, axis, keepdims, policy), the plan, the Reduction and
# the result's shape rule are found once, and a call reshapes, allocates and runs. gp.sum of 100
# float32: 12.8 us a call through the general path, 2.6 us here (np.sum: 2.1 us).
_fast: dict = {}
caches.register(_fast.clear)
_UNSET = object()


def _fast_reduction(op, x, axis, policy_name):
    """(plan, Reduction) of calls keyed like this one (a C-contiguous numpy array, the defaults,
    axis None or the last) that take the fast paths, or None where they take the general path
    (scans, var / std, other axes, byte-swapped or storage-less dtypes)."""
    from ..kernel.reduce import reduction_of
    if op in _SCANS or op in ("var", "std") or not x.dtype.isnative:
        return None
    ndim = x.ndim
    if axis is not None and not (ndim and axis in (ndim - 1, -1)):
        return None
    if axis is not None and op in _ARGS and ndim > 1:
        return None   # argmax along the last axis of an n-d array: the general path's layout
    try:
        plan = reduction_plan(op, D.dtype(x.dtype), ndim, None, policy_name)
    except Exception:  # noqa: BLE001 - the general path raises it, in its words
        return None
    if plan.result.numpy is None or plan.inputs[0].numpy is None:
        return None
    return plan, reduction_of(plan)


def _fast_runner(op, x, axis, keepdims, policy_name):
    """A callable (x) -> the result of ``op`` for calls keyed like this one, or None (see _fast_reduction)."""
    from ..engines.cpu import reduce as engine
    found = _fast_reduction(op, x, axis, policy_name)
    if found is None:
        return None
    plan, red = found
    res_np, ndim = plan.result.numpy, x.ndim
    small, one_call, run = engine.ONE_CALL_MAX, engine.one_call(red), engine.run
    whole = axis is None or ndim == 1

    def reduce_rows(a):
        shape = a.shape
        K = a.size if whole else shape[-1]
        M = a.size // K
        result = np.empty(M, res_np)
        if a.size <= small:
            one_call(a.reshape(M, K), result, K, float(K))
        else:
            run(red, [a.reshape(M, K)], result, K, float(K))
        if whole:
            return result.reshape((1,) * a.ndim if keepdims else ())
        return result.reshape(shape[:-1] + (1,) if keepdims else shape[:-1])
    return reduce_rows


def _entry_maker(op):
    """The compiled dispatcher's maker for ``op`` (fastpath/reduce_op.c): the ReduceEntry of calls
    keyed like (policy, x, last_axis, keepdims) - the fast path's reduction as a C entry point,
    for calls of up to ONE_CALL_MAX elements (one thread: the bits of every path) - or None."""
    def make(policy, x, last_axis, keepdims):
        from ..engines.cpu import reduce as engine
        try:
            found = _fast_reduction(op, x, -1 if last_axis else None, policy)
            if found is None:
                return None
            native = engine.reduction_for(found[1]).native()
        except Exception:  # noqa: BLE001 - the Python path meets it again and raises it in its words
            return None
        if native is None:
            return None
        return reduce_entry(native.address, native, found[0].result.numpy, engine.ONE_CALL_MAX)
    return make


# The same for CuPy arrays on the current device (engines/cuda/reduce.py): a call reduces its
# rows in place (the operand given by its strides, no view made), allocates the result and
# launches. gp.sum of 10^7 float32 on an H200: 116 us of host time a call through the general
# path (2026-11-27), which switched devices, built views and a layout per call.
_fast_device: dict = {}
caches.register(_fast_device.clear)


def _fast_device_runner(op, x, axis, keepdims, policy_name):
    """A callable (x) -> the result, or None for a call it does not take (another device), for
    CuPy calls keyed like this one; None where such calls take the general path."""
    from ..engines.cuda import device as cuda_device, reduce as engine
    found = _fast_reduction(op, x, axis, policy_name)
    if found is None or op in _ARGS:
        return None
    plan, red = found
    if any(cuda_device.storage_dtype(d) != d.numpy for d in (plan.inputs[0], plan.result)):
        return None   # bit-pattern storages: the general path's views
    cp = cuda_device.cupy_module()
    current, res_np, ndim, itemsize = cp.cuda.runtime.getDevice, plan.result.numpy, x.ndim, x.dtype.itemsize
    whole = axis is None or ndim == 1
    run = engine.run

    def reduce_rows(a):
        device = a.data.device_id
        if device != current():
            return None
        shape = a.shape
        K = a.size if whole else shape[-1]
        M = a.size // K
        result = cp.empty(M, res_np)
        run(red, [(a, K * itemsize, itemsize)], result, K, float(K), device)
        if whole:
            return result.reshape((1,) * ndim if keepdims else ())
        return result.reshape(shape[:-1] + (1,) if keepdims else shape[:-1])
    return reduce_rows


def reduction_plan(op, xdt, ndim, dtype, policy_name):
    """The plan of ``op`` on an array of ``xdt`` (the resolver's), read from ``xdt``; with
    ``dtype=``, the operand is cast to it, accumulated and returned in it. Cached."""
    key = (op, xdt, ndim > 0, None if dtype is None else D.dtype(dtype), policy_name)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _reduction_plan(op, xdt, ndim, dtype, policy_name)
    return plan


def _reduction_plan(op, xdt, ndim, dtype, policy_name):
    plan = plan_for(op, [spec(dtype if dtype is not None else xdt, ndim=max(ndim, 1))], policy_name)
    if dtype is not None:
        to = D.dtype(dtype)
        plan = replace(plan, result=to, compute=_OPMATH.get(to.name, to), promoted=to)
    return replace(plan, inputs=(D.dtype(xdt),))


class _Layout:
    """How an array of ``shape`` is reduced over ``axes``: (rows M, K) views and the result's shape."""

    def __init__(self, shape, axes, keepdims):
        ndim = len(shape)
        self.shape, self.axes = tuple(shape), axes
        self.kept = [d for d in range(ndim) if d not in axes]
        self.M = math.prod(shape[d] for d in self.kept)
        self.K = math.prod(shape[d] for d in axes)
        self.out_shape = (tuple(1 if d in axes else shape[d] for d in range(ndim)) if keepdims
                          else tuple(shape[d] for d in self.kept))

    def rows(self, a):
        """``a`` (of the layout's shape) as a (M, K) view (a copy where the axes cannot merge)."""
        return a.transpose(self.kept + list(self.axes)).reshape(self.M, self.K) if a.ndim else a.reshape(1, 1)

    def batches(self, a):
        """``a`` as a (B, K, M2) view when the reduced axes are one run between kept axes of a
        C-contiguous array ((B, T, C) over T: the engine's batched columns, no copy), else None."""
        axes = self.axes
        if not axes or axes[0] == 0 or axes[-1] == a.ndim - 1 or axes != tuple(range(axes[0], axes[-1] + 1)) \
                or not a.flags.c_contiguous or self.K < 2:
            return None
        B = math.prod(self.shape[:axes[0]])
        return a.reshape(B, self.K, self.M // B) if B and self.M // B > 1 else None


def reduction_layout(shape, axis, keepdims, op) -> _Layout:
    axes = normalize_axes(axis, len(shape), op)
    if op in _ARGS and axis is not None and len(axes) != 1:
        raise TypeError(f"gp.{op}: axis must be None or one int")
    return _Layout(shape, axes, keepdims)


def run_reduction(op, red, plan, arrays, layout, mean_red=None, ddof=0, divisor=None, keep=None):
    """Run the Reduction ``red`` of ``plan`` over ``arrays`` ((M, K) views, or folded scalars):
    the result, of ``layout.out_shape``. var / std: ``mean_red`` first, then ``red`` over
    ``arrays`` and the mean. ``divisor``: what a finish divides by, when not K (a mean of partial sums).
    ``keep``: the (M, K) view the kept value of ``red`` is stored in (kernel/reduce.py ``kept``)."""
    from ..engines.cpu import reduce as engine   # numba loads with the first reduction
    M, K = layout.M, layout.K
    result = np.empty(M, plan.result.numpy)
    if M == 0:
        return result.reshape(layout.out_shape)
    if K == 0 and op in _NO_IDENTITY:
        raise ValueError(f"gp.{op}: zero-size array to reduction operation {op} which has no identity")
    if mean_red is not None:
        mean = np.empty(M, plan.compute.numpy)
        engine.run(mean_red, arrays, mean, K, float(K))
        engine.run(red, [*arrays, np.broadcast_to(mean[:, None], (M, K))], result, K, float(max(K - ddof, 0)))
    else:
        engine.run(red, arrays, result, K, float(K if divisor is None else divisor), keep=keep)
    return result.reshape(layout.out_shape)


def _run(op, plan, arr, axis, keepdims, policy_name, ddof):
    from ..engines.cpu import reduce as engine
    from ..kernel.reduce import reduction_of
    if op in _SCANS:
        return _scan(op, plan, arr, axis, engine, reduction_of)
    layout = reduction_layout(arr.shape, axis, keepdims, op)
    x3 = layout.batches(arr) if op not in _ARGS else None
    if x3 is not None:
        return _run_batched(op, plan, x3, layout, policy_name, ddof, engine, reduction_of)
    x2 = layout.rows(arr)
    if op in ("var", "std"):
        d = default_ddof(policy_name) if ddof is None else ddof
        return run_reduction(op, reduction_of(plan), plan, [x2], layout, reduction_of(plan, "mean"), d)
    return run_reduction(op, reduction_of(plan), plan, [x2], layout)


def _run_batched(op, plan, x3, layout, policy_name, ddof, engine, reduction_of):
    """run_reduction's work over the batches of x3 (_Layout.batches), on the CPU engine."""
    B, K = x3.shape[0], layout.K
    result = np.empty(layout.M, plan.result.numpy)
    if op in ("var", "std"):
        d = default_ddof(policy_name) if ddof is None else ddof
        mean = np.empty(layout.M, plan.compute.numpy)
        engine.run_batched(reduction_of(plan, "mean"), [x3], mean, K, B, float(K))
        engine.run_batched(reduction_of(plan), [x3, mean], result, K, B, float(max(K - d, 0)))
    else:
        engine.run_batched(reduction_of(plan), [x3], result, K, B, float(K))
    return result.reshape(layout.out_shape)


def _run_cuda(op, plan, arr, axis, keepdims, policy_name, ddof):
    """The reduction on the CUDA engine (engines/cuda/reduce.py): the same order as the CPU's, so
    the same bits."""
    from ..engines import get_backend
    from ..engines.cuda import reduce as engine
    from ..kernel.reduce import reduction_of
    backend = get_backend("cuda")
    if op in _SCANS:
        return _scan_cuda(plan, arr, axis, backend, engine, reduction_of(plan), op)
    with backend.on_device(backend.device_index(arr)) as device:
        layout = reduction_layout(arr.shape, axis, keepdims, op)
        M, K = layout.M, layout.K
        result = backend.empty((M,), plan.result)
        if M and K == 0 and op in _NO_IDENTITY:
            raise ValueError(f"gp.{op}: zero-size array to reduction operation {op} which has no identity")
        if M:
            x2 = layout.rows(arr)
            store = storage_of(result)
            if op in ("var", "std"):
                d = default_ddof(policy_name) if ddof is None else ddof
                mean = backend.empty((M,), plan.compute)
                engine.run(reduction_of(plan, "mean"), [x2], storage_of(mean), K, float(K), device.id)
                m = storage_of(mean)
                engine.run(reduction_of(plan), [x2, (m, m.strides[0], 0)], store, K, float(max(K - d, 0)), device.id)
            else:
                engine.run(reduction_of(plan), [x2], store, K, float(K), device.id)
        shaped = storage_of(result).reshape(layout.out_shape)
    if isinstance(result, Array) or shaped.dtype != plan.result.numpy:
        return Array(shaped, plan.result)
    return shaped


def _scan_cuda(plan, arr, axis, backend, engine, red, op):
    """cumsum / cumprod of a device array along ``axis`` (None: of the flattened array), the rows
    laid out as the CPU path lays them (_scan), so the same bits."""
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    if arr.ndim == 0:
        arr = arr.reshape(1)
    (axis,) = normalize_axes(axis, arr.ndim, op)
    order = [d for d in range(arr.ndim) if d != axis] + [axis]
    moved = arr.transpose(order)
    K = moved.shape[-1]
    M = math.prod(moved.shape[:-1])
    with backend.on_device(backend.device_index(arr)) as device:
        result = backend.empty(moved.shape, plan.result)
        store = storage_of(result)
        if store.size:
            engine.run(red, [moved.reshape(M, K)], store.reshape(M, K), K, 0.0, device.id)
    back = store.transpose([order.index(d) for d in range(arr.ndim)])
    if isinstance(result, Array) or back.dtype != plan.result.numpy:
        return Array(back, plan.result)
    return back


def _into_device_out(op, plan, result, out):
    """``out`` (a device array, or a gp.Array on the device) holding ``result``, cast as NumPy's
    out= of a reduction casts (unsafe), as the CPU path does."""
    from ..engines import get_backend
    target = storage_of(out)
    if not is_device(target):
        raise TypeError(f"gp.{op}: out is a host array ({type(out).__name__}) and x is on the device; pass a device "
                        f"array (cupy.empty(...)) or leave out= out and copy the result")
    src = storage_of(result)
    if tuple(target.shape) != tuple(src.shape):
        raise ValueError(f"gp.{op}: out has shape {tuple(target.shape)}, the result {tuple(src.shape)}")
    get_backend("cuda").copyto(target, src, out.dtype if isinstance(out, Array) else None, plan.result)
    return out


def _scan(op, plan, arr, axis, engine, reduction_of):
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    if arr.ndim == 0:
        arr = arr.reshape(1)
    (axis,) = normalize_axes(axis, arr.ndim, op)
    moved = np.moveaxis(arr, axis, -1)
    K = moved.shape[-1]
    M = math.prod(moved.shape[:-1])
    result = np.empty(moved.shape, plan.result.numpy)
    if result.size:
        r2 = result.reshape(M, K)
        engine.run(reduction_of(plan), [moved.reshape(M, K)], r2, K)
    return np.moveaxis(result, -1, axis)


def _make(op: str):
    scan, arg = op in _SCANS, op in _ARGS
    if op in ("var", "std"):
        def fn(x, axis=None, *, keepdims=False, dtype=None, ddof=None, correction=None, out=None, policy=None):
            return reduce(op, x, axis, keepdims, dtype, correction if ddof is None else ddof, out, policy)
    elif scan:
        def fn(x, axis=None, *, dtype=None, out=None, policy=None):
            return reduce(op, x, axis, False, dtype, None, out, policy)
    elif arg:
        def fn(x, axis=None, *, keepdims=False, out=None, policy=None):
            return reduce(op, x, axis, keepdims, None, None, out, policy)
    elif op in ("max", "min", "any", "all"):
        def fn(x, axis=None, *, keepdims=False, out=None, policy=None):
            return reduce(op, x, axis, keepdims, None, None, out, policy)
    else:
        def fn(x, axis=None, *, keepdims=False, dtype=None, out=None, policy=None):
            return reduce(op, x, axis, keepdims, dtype, None, out, policy)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"gp.{op}(x, axis=None, ...): the {op} reduction under the current policy's dtype rules "
                  f"(gp.result_type(x, op={op!r})); deterministic: the same bits on any thread count.")
    return fn


# the reductions that can take the compiled dispatcher (whole arrays and last axes; not the scans,
# whose result is an array of the operand's shape, nor var / std, two passes) are C callables in
# front of their Python function (fastpath/reduce_op.c; GPUPROMOTE_PURE_PYTHON=1: the functions alone)
REDUCTION_FUNCTIONS = {name: _make(name) if name in (*_SCANS, "var", "std") else
                       compiled_reduction(name, _make(name), _entry_maker(name)) for name in REDUCTION_OPS}


def _method(name):
    fn = REDUCTION_FUNCTIONS[name]

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


# gp.Array's methods: x.sum(axis=0), x.argmax(), ...
for _name in REDUCTION_OPS:
    setattr(Array, _name, _method(_name))
