"""Arguments -> operands -> plan -> backend -> result: the eager call.

The dispatcher is the one place that looks at both a call's arguments and its plan:

* it describes the arguments (api.describe), resolves the plan (resolve.resolve) and picks the
  backend: "cuda" when any array operand (or ``out``) lives on a GPU, else "cpu";
* it folds Python scalars and 0-d host arrays into by-value kernel parameters (dispatch/folding.py: both
  backends use it);
* it owns the shapes: broadcasting, allocating the output, the ``out=`` rules of the emulated
  framework (cast rule, shape, read-only, aliasing an input), and the checks a framework makes
  before it launches a kernel (dispatch/checks.py: integer division by zero, negative integer powers).

Backends (gpupromote/backends) then execute the plan elementwise and nothing else. The public op
functions and their fast paths, which call in here when they cannot take a call, are in
dispatch/opfunctions.py; the checks of one operand in dispatch/operands.py.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core import dtypes as D
from . import foreign as interop
from .api import CURRENT_POLICY, describe, plan_for
from .array import Array
from ..engines import get_backend
from .checks import needs_checks, pre_launch_checks
from . import sanitize as _sanitize
from .folding import cast_array, fold_operand
from .operands import (broadcast_shapes, check_operand, is_device, native, overlaps, same_array, shape_error,
                       storage_of, wants_gp_array)
from ..core.kinds import Form
from ..kernel import ir
from ..core.ops import ALIASES
from ..promotion.policies import get_policy
from ..promotion.store import check_store

__all__ = ["call", "check_cpu_dtypes", "run_into_out", "wrap_result"]

_ENGINE_ARGS = frozenset({np.ndarray, float, int, bool, complex})  # never foreign: no interop check


# ---------------------------------------------------------------------------------------------
# The call

def call(op: str, args, policy=None, out=None, form=Form.FUNCTION):
    """Run ``op`` on ``args`` under ``policy`` (default: the current one) into ``out``, eagerly (a dask
    operand goes through opfunctions.call). ``form``: how the call was written (gp.<op>(...) or an
    operator), which decides whether the policy refuses a Python scalar (promotion/refusals.py)."""
    foreign = out is not None and interop.is_foreign(out)
    for x in args:
        tracer = getattr(x, "_tracer", None)
        if tracer is not None:   # inside gp.fuse: the step is recorded, not run
            return tracer.record(op, args, policy, out, form)
        foreign = foreign or (type(x) not in _ENGINE_ARGS and interop.is_foreign(x))
    if foreign:   # torch, JAX, ...: run on views of their memory, answer in the caller's type
        return interop.call(lambda views, view_out: call(op, views, policy, view_out, form), args, out)
    name = policy or CURRENT_POLICY.get()
    op = ALIASES.get(op, op)
    for i, x in enumerate(args):
        if not (op == "astype" and i == 1):   # astype's dtype
            check_operand(op, i, x)
    if out is not None:
        check_operand(op, None, out)
    args = [native(x) for x in args]
    operands = [describe(x) for x in args]
    plan = plan_for(op, args, name, form)
    if (out is not None and is_device(out)) or any(not o.host for o in operands if o.category != "scalar"):
        backend = get_backend("cuda")
        kargs = [x if f else storage_of(x) for x, f in zip(args, plan.folded)]
        with _one_device(plan, backend, kargs, out) as device:
            kargs = _no_host_arrays(plan, backend, kargs, out, device)
            return _call_on(op, plan, backend, name, operands, kargs, args, out)
    backend = get_backend("cpu")
    check_cpu_dtypes(plan)
    kargs = [x if f else storage_of(x) for x, f in zip(args, plan.folded)]
    return _call_on(op, plan, backend, name, operands, kargs, args, out)


def _call_on(op, plan, backend, name, operands, kargs, args, out):
    """The rest of a call, once the backend (and for CUDA the device) is chosen."""
    canonical = get_policy(name).rules.canonical
    if canonical:
        plan, kargs = _canonicalize(plan, operands, kargs, canonical, backend)
    sanitizing = _sanitize.current() is not None
    for i, f in enumerate(plan.folded):
        if f:   # (sanitizing: a folded value is one number, checked on the host as it is folded)
            kargs[i] = fold_operand(plan, i, operands[i], kargs[i],
                                    _sanitize.folded_check(plan, i, operands[i], operands) if sanitizing else None)
    shapes = [a.shape for a, f in zip(kargs, plan.folded) if not f]
    try:
        shape = broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        raise shape_error(op, shapes) from None

    if needs_checks(plan) and 0 not in shape:
        # Note: value checks only when there are values: NumPy and PyTorch check element by element,
        # so an empty result raises and warns nothing
        pre_launch_checks(plan, kargs, shape, args)

    if sanitizing:
        arrays = [a for a, f in zip(kargs, plan.folded) if not f]
        run = lambda target: _sanitize.run(plan, backend, kargs, target, operands)  # noqa: E731
    if out is None:
        result = backend.empty(shape, plan.result)
        if 0 not in result.shape:
            if sanitizing:
                run(result)
            else:
                backend.run(plan, kargs, result)
        return wrap_result(result, plan.result, args, backend)
    if sanitizing:
        return run_into_out(plan, backend, arrays, shape, out, args, run=run)
    return run_into_out(plan, backend, kargs, shape, out, args)


def _device_of(x, backend):
    """The CUDA device number a device array (CuPy, gp.Array storage) lives on, else None."""
    if x is None or isinstance(x, (np.ndarray, np.generic)) or not is_device(x):
        return None
    return backend.device_index(x)


def _one_device(plan, backend, kargs, out):
    """The device a CUDA call runs on: where its device operands and ``out`` live (whichever
    device is current), as a context manager that makes it current. Operands on two devices are
    refused: a kernel on one device cannot read another's memory (no implicit peer copies)."""
    where = {}
    for i, (x, f) in enumerate(zip(kargs, plan.folded)):
        d = None if f else _device_of(x, backend)
        if d is not None:
            where.setdefault(d, f"operand {i}")
    d = _device_of(storage_of(out), backend) if out is not None else None
    if d is not None:
        where.setdefault(d, "out")
    if len(where) > 1:
        shown = ", ".join(f"{what} on cuda:{d}" for d, what in sorted(where.items()))
        raise ValueError(f"policy {plan.policy!r}, {plan.op}: the arrays live on different devices ({shown}); an op "
                         f"runs on one device. Move them first: gp.asarray(x, device='cuda:N'), or cupy.asarray(x) "
                         f"inside `with cupy.cuda.Device(N):`")
    return backend.on_device(next(iter(where)) if where else None)


def _no_host_arrays(plan, backend, kargs, out, device):
    """Host NumPy arrays beside device operands: a 0-d one is a scalar (copied to the device when
    the policy does not fold it); any other is refused, as CuPy refuses it, rather than copied
    behind the caller's back."""
    # Note: CuPy raises TypeError for a numpy + cupy mix; so does gpupromote, with the fix in the message.
    kargs = list(kargs)
    for i, (x, f) in enumerate(zip(kargs, plan.folded)):
        if f or not isinstance(x, (np.ndarray, np.generic)):
            continue
        if np.ndim(x) == 0:
            kargs[i] = backend.asarray(np.asarray(x), plan.inputs[i])
            continue
        raise TypeError(f"policy {plan.policy!r}, {plan.op}: operand {i} is a NumPy array in host memory "
                        f"({x.dtype}, shape {x.shape}) and the other operands live on cuda:{device.id}. Copy it to "
                        f"the device first (cupy.asarray(x) or gp.asarray(x, device='cuda:{device.id}')), or bring "
                        f"the device operands to the host (.get()) to compute on the CPU")
    if out is not None and isinstance(storage_of(out), np.ndarray):
        raise TypeError(f"policy {plan.policy!r}, {plan.op}: out is a NumPy array in host memory and the operands "
                        f"live on cuda:{device.id}; pass a device array as out (cupy.empty(...)), or leave out= "
                        f"and copy the result with .get()")
    return kargs


def _canonicalize(plan, operands, kargs, canonical, backend):
    """JAX with x64 off makes every 64-bit array 32-bit when it is created (int64 2**32 + 1 is
    1), before any op sees it: cast such operands the same way, and read them as that dtype."""
    inputs = list(plan.inputs)
    for i, o in enumerate(operands[:len(plan.inputs)]):   # (astype's dtype is no input)
        if plan.folded[i] or o.dtype is None or o.dtype.name not in canonical:
            continue  # folded operands are canonicalized as they are folded (fold_operand)
        to = D.dtype(canonical[o.dtype.name])
        if _sanitize.current() is not None:
            _sanitize.check_canonical(plan, i, kargs[i], to, operands)
        kargs[i] = cast_array(kargs[i], to, backend)
        if not plan.folded[i]:
            inputs[i] = to
    return replace(plan, inputs=tuple(inputs)), kargs



def check_cpu_dtypes(plan):
    for d in (*plan.inputs, plan.result):
        if d.numpy is None:
            raise TypeError(f"policy {plan.policy!r}, {plan.op}: {d.name} has no numpy storage, so it has no "
                            f"CPU kernel; cast to {D.dtype('complex64').name} first, or run on a CUDA device")


def run_into_out(plan, backend, kargs, shape, out, args, run=None, run_cast=None):
    """Evaluate into ``out`` under the framework's out= rules for ``plan``'s result. ``run(target)``
    evaluates into an array of plan.result's storage, broadcast to its shape (default: ``plan``'s
    kernel on ``kargs``); gp.fuse passes its chain and, as ``kargs``, the arrays it reads (which
    ``out`` must not clobber; plan.folded then describes the last op only and is not used).
    ``run_cast(target, dtype)``: what ``run`` does with the result cast to ``dtype`` in the same pass
    (default: with ``run``'s, ``plan``'s kernel stored as ``dtype``), for an out= of another dtype."""
    if run is None:
        arrays = [a for a, f in zip(kargs, plan.folded) if not f]
        run = lambda target: backend.run(plan, kargs, target)  # noqa: E731
        run_cast = lambda target, dtype: backend.run_kernel(  # noqa: E731
            ir.stored_as(ir.from_plan(plan), dtype), kargs, target, None, plan)
    else:
        arrays = list(kargs)
    target = storage_of(out)
    if not hasattr(target, "shape") or not hasattr(target, "dtype"):
        raise TypeError(f"{plan.op}: out must be an array, got {type(out).__name__}")
    out_dtype = out.dtype if isinstance(out, Array) else D.dtype(target.dtype)
    # Note: CuPy's flags have no `writeable` (every CuPy array is writable); NumPy's do.
    if not getattr(getattr(target, "flags", None), "writeable", True):
        raise ValueError(f"{plan.op}: the out array is read-only")
    if tuple(target.shape) != tuple(shape):
        try:
            ok = broadcast_shapes(shape, target.shape) == tuple(target.shape)
        except ValueError:
            ok = False
        if not ok:
            raise shape_error(plan.op, [a.shape for a in arrays], target.shape)
    check_store(plan, out_dtype, inplace=any(same_array(a, out) for a in args))
    if 0 in target.shape:
        return out
    clobbers = any(overlaps(a, target) for a in arrays)
    native = getattr(target.dtype, "isnative", True)
    if out_dtype is plan.result and not clobbers and native:
        run(target)
    elif run_cast is not None and not clobbers and native and target.dtype == out_dtype.numpy:
        # out has another dtype: the result cast into it as backend.copyto casts (ir.Cast is
        # astype's conversion on both engines), by the kernel itself instead of a second pass
        run_cast(target, out_dtype)
    else:
        # Note: a temporary when out has another dtype and no run_cast (the sanitizer's runs; a
        # storage of bit patterns), the other byte order (NumPy writes '>f4' outputs by value), or
        # overlaps an input other than element for element.
        tmp = backend.empty(target.shape, plan.result)
        run(tmp)
        backend.copyto(target, tmp)
    return out


def wrap_result(result, dtype, args, backend):
    # A device result stored as bit patterns (float8 in uint8, complex32 in uint32, bfloat16 in
    # uint16 on a CuPy without bfloat16) is a gp.Array, or its dtype would be lost: cupy uint8 [] +
    # a host float8 0-d array is float8.
    if wants_gp_array(args) or result.dtype != dtype.numpy:
        return Array(result, dtype)
    return result

