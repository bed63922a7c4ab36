"""Arguments -> operands -> plan -> backend -> result.

The dispatcher is the one place that looks at both a call's arguments and its plan:

* it describes the arguments (api.describe), resolves the plan (resolve.resolve) and picks the
  backend: "cuda" when any array operand (or ``out``) lives on a GPU, else "cpu";
* it folds Python scalars and 0-d host arrays into by-value kernel parameters, converted first
  to the dtype the policy keeps them in (``plan.inputs[i]``: NumPy rounds 1e-8 to float16,
  PyTorch keeps it in float32, int8 + 300 wraps 300 to 44 in PyTorch) and then to the compute
  dtype (``fold_scalar``: both backends use it);
* it owns the shapes: broadcasting, allocating the output, the ``out=`` rules of the emulated
  framework (cast rule, shape, read-only, aliasing an input), and the checks a framework makes
  before it launches a kernel (integer division by zero, negative integer powers).

Backends (gpupromote/backends) then execute the plan elementwise and nothing else.

A per-op cache keyed by (policy, argument dtypes/types) keeps the common call - numpy arrays
of one shape, or an array and a Python float - to a dict lookup and one kernel call.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import replace

import numpy as np

from . import caches
from . import dtypes as D
from . import interop
from .api import CURRENT_POLICY, Spec, cached_plan, describe, plan_for
from .array import Array
from .backends import get_backend
from .errors import IntegerDivisionByZero, check_integer_divisor
from .limits import INT_RANGES
from .ops import ALIASES, OPS, UNARY_OPS
from .policies import get_policy
from .store import check_store

__all__ = ["call", "fold_scalar", "make_op", "OP_FUNCTIONS", "IntegerDivisionByZero"]

_ndarray = np.ndarray
_ENGINE_ARGS = frozenset({np.ndarray, float, int, bool, complex})  # never foreign: no interop check
_INT_DIVISION_OPS = ("floor_divide", "remainder", "fmod")




# ---------------------------------------------------------------------------------------------
# Folding scalars

def _wrap_int(v: int, bits: int, signed: bool) -> int:
    """A Python int reduced modulo 2**bits into the signed or unsigned range (two's complement)."""
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def _cast_value(x, src: D.DType):
    """Any scalar or 0-d array -> a numpy scalar of ``src`` (C-style cast where it narrows)."""
    with np.errstate(all="ignore"):  # why: a deliberate narrowing cast, as the framework's own
        return np.asarray(x).astype(src.numpy)[()]


_converters: dict = {}
caches.register(_converters.clear)


def _converter(src: D.DType, to: D.DType):
    """value -> ``src`` (the policy's scalar precision) -> ``to`` (a numpy scalar)."""
    key = (src.name, to.name)
    conv = _converters.get(key)
    if conv is not None:
        return conv
    if src.numpy is None or to.numpy is None:
        missing = src if src.numpy is None else to
        raise TypeError(f"{missing.name} has no numpy storage: it cannot be folded into a CPU kernel")
    src_t, to_t = src.numpy.type, to.numpy.type
    bits, signed, kind = src.bits, src.kind == "i", src.kind

    def conv(v):
        t = type(v)
        if kind in "ui" and (t is int or t is bool):
            x = src_t(_wrap_int(int(v), bits, signed))   # PyTorch / np.where wrap out-of-range ints
        elif kind == "b":
            x = np.bool_(bool(v))
        elif kind in "fc" and (t is float or (kind == "c" and t is complex)):
            x = src_t(v)                                  # rounds (numpy: 1e-8 -> float16 0.0)
        elif kind in "fc" and (t is int or t is bool):
            x = src_t(float(v))   # why: ml_dtypes' constructors refuse ints beyond int64 (2**63)
        else:
            x = _cast_value(v, src)                       # 0-d arrays, numpy scalars, float -> int
        if to is src:
            return x
        if to.kind == "b":
            return np.bool_(x)
        if to.kind in "fc" and src.kind != "c":
            return to_t(x)
        return _cast_value(x, to)

    if src is to and kind in "fc" and src.numpy.kind in "fc":
        general = conv

        def conv(v):  # the common case (a Python float kept in the compute dtype), fewest steps
            return src_t(v) if type(v) is float else general(v)

    _converters[key] = conv
    return conv


def fold_scalar(value, src: D.DType, to: D.DType):
    """The kernel parameter for a folded operand: ``value`` (a Python scalar or a 0-d host array)
    converted to ``src`` (``plan.inputs[i]``), then to ``to`` (``plan.compute``; bool for
    ``where``'s condition). Shared by the CPU and the CUDA backends."""
    return _converter(src, to)(value)


def _fold_target(plan, i):
    return D.bool_ if plan.op == "where" and i == 0 else plan.compute


def fold_operand(plan, i: int, operand, value):
    """The by-value kernel parameter of folded operand ``i`` of ``plan``: ``value`` (a Python
    scalar, a 0-d host array, a numpy scalar; ``operand`` describes it) as the framework turns it
    into a kernel argument: a 64-bit 0-d array canonicalized first (JAX with x64 off), an int
    beyond an integer array's range compared exactly, an exact integer exponent folded as an
    equivalent one that fits, then converted (fold_scalar). The eager call and gp.fuse use it."""
    canonical = get_policy(plan.policy).rules.canonical
    if canonical and operand.dtype is not None and operand.dtype.name in canonical:
        value = _cast_array(np.asarray(value), D.dtype(canonical[operand.dtype.name]), None)
    if plan.op in _COMPARISONS and plan.compute.kind == "f" and plan.promoted is not None \
            and plan.promoted.kind in "ui" and operand.category == "scalar" and operand.pykind == "i":
        value = _exact_comparand(plan, value)
    if plan.exact_exponent and i == len(plan.folded) - 1:
        value = _equivalent_exponent(int(value), plan.compute)
    return fold_scalar(value, plan.inputs[i], _fold_target(plan, i))


# ---------------------------------------------------------------------------------------------
# Operands

def _storage(x):
    """The array a backend reads for a non-folded operand."""
    if type(x) is _ndarray:
        return x
    if isinstance(x, Array):
        return x.storage
    if isinstance(x, np.ndarray):
        return x.view(np.ndarray)   # subclasses (np.matrix, masked arrays): their data
    if isinstance(x, np.generic):
        return np.asarray(x)
    return x


def _native(x):
    """Arrays in the other byte order (``'>f4'`` here) are read as their native-order values."""
    if isinstance(x, np.ndarray) and not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x


def _is_dask(x) -> bool:
    """A dask collection, judged by its type's module so that gpupromote never imports dask
    itself (gpupromote/dask.py does, when such an operand first comes)."""
    return type(x).__module__.startswith("dask.")


def _check_operand(op, i, x):
    """Refuse what an op cannot compute on with a message saying what was passed and what to pass
    (``i`` is the argument's position, None for ``out=``)."""
    if type(x) is _ndarray or type(x) in _FAST_SCALARS:
        return
    where = "out=" if i is None else f"operand {i + 1}"
    if x is None:
        raise TypeError(f"{op}: {where} is None; pass an array or a Python bool/int/float/complex")
    if isinstance(x, np.ma.MaskedArray):
        # Note: refused rather than kept: a kernel reads every element, the masked-out ones too
        raise TypeError(f"{op}: {where} is a masked array; gpupromote would compute on its masked-out values "
                        f"and drop the mask. Use np.ma.{op} for masked semantics, or pass m.filled(value) "
                        f"or m.data explicitly")
    if isinstance(x, Spec):
        raise TypeError(f"{op}: {where} is {x!r}, an abstract array without data: ops compute on arrays, "
                        f"gp.result_type(...) takes specs")
    if isinstance(x, (np.dtype, D.DType, str, type)):
        what = f"the string {x!r}" if isinstance(x, str) else f"the dtype {getattr(x, 'name', None) or x.__name__!r}"
        raise TypeError(f"{op}: {where} is {what}, not an array: ops compute on arrays, gp.result_type(...) "
                        f"takes dtypes. Make an array, e.g. np.asarray(value, dtype)")
    if not (hasattr(x, "dtype") and hasattr(x, "shape")) and not isinstance(x, (bool, int, float, complex)):
        shown = repr(x)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise TypeError(f"{op}: {where} is not an array (type {type(x).__name__}: {shown}); pass np.asarray(...) "
                        f"of it, or a Python bool/int/float/complex")


def _is_device(x) -> bool:
    if type(x) is _ndarray:
        return False
    dev = getattr(x, "device", None)
    if type(x).__module__.split(".")[0] == "cupy":
        return True
    return dev is not None and str(dev).startswith("cuda")


def _wants_gp_array(args) -> bool:
    return any(isinstance(a, Array) for a in args)


def _shape_error(op, shapes, out_shape=None):
    shown = " ".join(str(tuple(s)) for s in shapes)
    if out_shape is not None:
        return ValueError(f"{op}: operands with shapes {shown} cannot be broadcast to the out array's "
                          f"shape {tuple(out_shape)}")
    return ValueError(f"{op}: operands could not be broadcast together with shapes {shown}")


# ---------------------------------------------------------------------------------------------
# out= rules

def _data_range(a):
    """(lowest, highest + 1) byte address an array touches (a cheap bounds check)."""
    itf = getattr(a, "__array_interface__", None) or a.__cuda_array_interface__
    ptr = itf["data"][0]
    lo = hi = ptr
    strides = itf.get("strides") or _c_strides(a.shape, a.dtype.itemsize)
    for n, s in zip(a.shape, strides):
        if n == 0:
            return ptr, ptr
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi + a.dtype.itemsize


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _same_array(a, out) -> bool:
    """Whether ``out`` is operand ``a`` itself (x += y, out=x): the same object, or the same
    elements of the same memory (two views of it), so that the op runs in place on ``a``."""
    if a is out:
        return True
    a, out = _storage(a), _storage(out)
    if not (hasattr(a, "shape") and hasattr(a, "strides")) or a.shape != out.shape or a.strides != out.strides:
        return False
    return a.dtype.itemsize == out.dtype.itemsize and _data_range(a) == _data_range(out)


def _overlaps(a, out) -> bool:
    """Whether writing ``out`` can clobber ``a`` before it is read: any shared bytes, unless
    ``a`` is ``out`` element for element (same address, shape, strides and item size)."""
    if a is out:
        return False
    alo, ahi = _data_range(a)
    olo, ohi = _data_range(out)
    if alo >= ohi or olo >= ahi:
        return False
    return not (alo == olo and a.shape == out.shape and a.strides == out.strides
                and a.dtype.itemsize == out.dtype.itemsize)


# ---------------------------------------------------------------------------------------------
# Checks the frameworks make before launching

def _float_error(kind, message):
    """Report a NumPy floating-point-error condition the way np.errstate says."""
    mode = np.geterr()[kind]
    if mode == "ignore":
        return
    if mode == "raise":
        raise FloatingPointError(message)
    if mode == "call":
        np.geterrcall()(message, 0)
        return
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def report_check(plan, what: str):
    """What the framework does when a check fires before (eager) or during (gp.fuse, through a
    kernel's flags) a launch: the one place these errors and warnings are raised. ``what``: one of
    the conditions checks_of() lists."""
    if what == "zero_division":
        if plan.int_division == "raise":
            check_integer_divisor(plan.policy, get_policy(plan.policy).framework, plan.op, plan.compute.name, True)
        _float_error("divide", f"divide by zero encountered in {plan.op}")
    elif what == "int_min_by_minus_one":
        _float_error("over", f"overflow encountered in {plan.op}")
    elif what == "negative_power":
        raise ValueError("Integers to negative integer powers are not allowed.")
    elif what == "negative_shift":
        raise ValueError(f"policy {plan.policy!r}: {plan.op}(x1, x2) is only defined for x2 >= 0 in "
                         f"{get_policy(plan.policy).framework}, and the shift array x2 holds a negative count "
                         f"(array-api-strict raises ValueError too); take abs() or mask it first")
    else:
        raise ValueError(f"unknown check {what!r}")


def checks_of(plan) -> tuple:
    """The conditions the framework tests on ``plan``'s operands before its kernel runs, in the
    order it tests them: "zero_division" (an integer divisor is 0: raise or warn),
    "int_min_by_minus_one" (NumPy's INT_MIN // -1 overflow warning), "negative_power" (NumPy
    refuses a negative integer exponent), "negative_shift" (the Array API refuses a negative shift
    count)."""
    if plan.compute.kind not in "ui":
        return ()
    if plan.op in _INT_DIVISION_OPS:
        if plan.int_division == "raise":
            return ("zero_division",)
        if plan.int_division == "numpy":
            return ("zero_division", "int_min_by_minus_one") if plan.op == "floor_divide" and \
                plan.compute.kind == "i" else ("zero_division",)
        return ()  # xla: defined values, no warning
    if plan.op == "power" and plan.compute.kind == "i" and get_policy(plan.policy).rules.negative_power_arrays_refused:
        return ("negative_power",)
    if plan.op in _SHIFTS and plan.compute.kind == "i" and get_policy(plan.policy).rules.negative_shift_arrays_refused:
        return ("negative_shift",)
    return ()


def _int_division_checks(plan, args, shape):
    divisor = args[1]
    folded = plan.folded[1]
    for what in checks_of(plan):
        if what == "zero_division":
            fired = (divisor == 0) if folded else (divisor.size > 0 and not bool(divisor.all()))
        else:  # INT_MIN // -1 overflows (the result wraps to INT_MIN); NumPy reports it.
            lo = -(1 << (plan.compute.bits - 1))
            minus_one = (divisor == -1) if folded else bool((divisor == -1).any())
            fired = minus_one and bool(np.logical_and(args[0] == lo, divisor == -1).any())
        if fired:
            report_check(plan, what)


def _power_checks(plan, args):
    exponent, folded = args[1], plan.folded[1]
    if folded:
        negative = exponent < 0
    else:
        negative = exponent.dtype.kind == "i" and exponent.size > 0 and bool((exponent < 0).any())
    if negative:
        report_check(plan, "negative_power")


def _pre_launch_checks(plan, args, shape, raw):
    if plan.compute.kind in "ui":
        if plan.op in _INT_DIVISION_OPS:
            _int_division_checks(plan, args, shape)
        elif plan.op == "power" and get_policy(plan.policy).rules.negative_power_arrays_refused:
            # NumPy refuses a negative integer exponent inside an array too (a Python int
            # exponent the resolver has already checked).
            _power_checks(plan, args)
        elif "negative_shift" in checks_of(plan) and not plan.folded[1]:
            # the Array API refuses a negative shift count inside an array too (a Python int the
            # resolver has already checked)
            count = args[1]
            if count.size > 0 and bool((count < 0).any()):
                report_check(plan, "negative_shift")


_SHIFTS = ("left_shift", "right_shift")


def _needs_checks(plan) -> bool:
    return plan.compute.kind in "ui" and (plan.op in _INT_DIVISION_OPS or plan.op == "power" or (
        plan.op in _SHIFTS and get_policy(plan.policy).rules.negative_shift_arrays_refused))


# ---------------------------------------------------------------------------------------------
# The call

def call(op: str, args, policy=None, out=None):
    """Run ``op`` on ``args`` under ``policy`` (default: the current one) into ``out``."""
    lazy = out is not None and _is_dask(out)
    foreign = out is not None and not lazy and interop.is_foreign(out)
    for x in args:
        tracer = getattr(x, "_tracer", None)
        if tracer is not None:   # inside gp.fuse: the step is recorded, not run
            return tracer.record(op, args, policy, out)
        lazy = lazy or _is_dask(x)
        foreign = foreign or (type(x) not in _ENGINE_ARGS and interop.is_foreign(x))
    if lazy:   # a dask array among the operands: a lazy dask graph, one eager call per block
        from .dask import call as dask_call
        return dask_call(op, args, policy, out)
    if foreign:   # torch, JAX, ...: run on views of their memory, answer in the caller's type
        return interop.call(lambda views, view_out: call(op, views, policy, view_out), args, out)
    name = policy or CURRENT_POLICY.get()
    op = ALIASES.get(op, op)
    for i, x in enumerate(args):
        _check_operand(op, i, x)
    if out is not None:
        _check_operand(op, None, out)
    args = [_native(x) for x in args]
    operands = [describe(x) for x in args]
    plan = plan_for(op, args, name)
    if (out is not None and _is_device(out)) or any(not o.host for o in operands if o.category != "scalar"):
        backend = get_backend("cuda")
        kargs = [x if f else _storage(x) for x, f in zip(args, plan.folded)]
        with _one_device(plan, backend, kargs, out) as device:
            kargs = _no_host_arrays(plan, backend, kargs, out, device)
            return _call_on(op, plan, backend, name, operands, kargs, args, out)
    backend = get_backend("cpu")
    _check_cpu_dtypes(plan)
    kargs = [x if f else _storage(x) for x, f in zip(args, plan.folded)]
    return _call_on(op, plan, backend, name, operands, kargs, args, out)


def _call_on(op, plan, backend, name, operands, kargs, args, out):
    """The rest of a call, once the backend (and for CUDA the device) is chosen."""
    canonical = get_policy(name).rules.canonical
    if canonical:
        plan, kargs = _canonicalize(plan, operands, kargs, canonical, backend)
    for i, f in enumerate(plan.folded):
        if f:
            kargs[i] = fold_operand(plan, i, operands[i], kargs[i])
    shapes = [a.shape for a, f in zip(kargs, plan.folded) if not f]
    try:
        shape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        raise _shape_error(op, shapes) from None

    if _needs_checks(plan) and 0 not in shape:
        # Note: value checks only when there are values: NumPy and PyTorch check element by element,
        # so an empty result raises and warns nothing
        _pre_launch_checks(plan, kargs, shape, args)

    if out is None:
        result = backend.empty(shape, plan.result)
        if 0 not in result.shape:
            backend.run(plan, kargs, result)
        return _wrap_result(result, plan.result, args, backend)
    return _run_into_out(plan, backend, kargs, shape, out, args)


def _device_of(x, backend):
    """The CUDA device number a device array (CuPy, gp.Array storage) lives on, else None."""
    if x is None or isinstance(x, (np.ndarray, np.generic)) or not _is_device(x):
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
    d = _device_of(_storage(out), backend) if out is not None else None
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
    if out is not None and isinstance(_storage(out), np.ndarray):
        raise TypeError(f"policy {plan.policy!r}, {plan.op}: out is a NumPy array in host memory and the operands "
                        f"live on cuda:{device.id}; pass a device array as out (cupy.empty(...)), or leave out= "
                        f"and copy the result with .get()")
    return kargs


def _canonicalize(plan, operands, kargs, canonical, backend):
    """JAX with x64 off makes every 64-bit array 32-bit when it is created (int64 2**32 + 1 is
    1), before any op sees it: cast such operands the same way, and read them as that dtype."""
    inputs = list(plan.inputs)
    for i, o in enumerate(operands):
        if plan.folded[i] or o.dtype is None or o.dtype.name not in canonical:
            continue  # folded operands are canonicalized as they are folded (fold_operand)
        to = D.dtype(canonical[o.dtype.name])
        kargs[i] = _cast_array(kargs[i], to, backend)
        if not plan.folded[i]:
            inputs[i] = to
    return replace(plan, inputs=tuple(inputs)), kargs


def _cast_array(x, to: D.DType, backend):
    with np.errstate(all="ignore"):   # wrapping int64 -> int32 is the point
        if isinstance(x, (np.ndarray, np.generic)):
            return np.asarray(x).astype(to.numpy)
        out = backend.empty(x.shape, to)
        backend.copyto(out, x)
        return out


_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _exact_comparand(plan, value: int):
    """NumPy compares a Python int outside an integer array's range exactly (uint64 [2**64 - 1]
    < 2**64 is True). The plan compares in float64, where 2**64 - 1 rounds to 2**64; every value
    of the array is on the same side of such an int, so comparing with +-inf is exact."""
    info = np.iinfo(plan.promoted.numpy)
    if info.min <= value <= info.max:
        return value
    return float("inf") if value > info.max else float("-inf")


def _equivalent_exponent(exponent: int, compute: D.DType) -> int:
    """An exponent the compute dtype holds that gives x ** exponent for every x, when the plan
    keeps the exponent exactly (JAX's integer_pow) and the products wrap in k = compute.bits bits:
    an even x reaches 0 from x ** k on, and an odd x repeats with a period dividing 2**(k - 2)
    (the exponent of the unit group mod 2**k), so any exponent >= k can become
    k + (exponent - k) % 2**(k - 2), at most 2**(k - 2) + k - 1, which fits the signed k-bit type."""
    k = compute.bits
    if exponent < k:
        return exponent
    return k + (exponent - k) % (1 << (k - 2))


def _check_cpu_dtypes(plan):
    for d in (*plan.inputs, plan.result):
        if d.numpy is None:
            raise TypeError(f"policy {plan.policy!r}, {plan.op}: {d.name} has no numpy storage, so it has no "
                            f"CPU kernel; cast to {D.dtype('complex64').name} first, or run on a CUDA device")


def _run_into_out(plan, backend, kargs, shape, out, args, run=None):
    """Evaluate into ``out`` under the framework's out= rules for ``plan``'s result. ``run(target)``
    evaluates into an array of plan.result's storage, broadcast to its shape (default: ``plan``'s
    kernel on ``kargs``); gp.fuse passes its chain and, as ``kargs``, the arrays it reads (which
    ``out`` must not clobber; plan.folded then describes the last op only and is not used)."""
    if run is None:
        arrays = [a for a, f in zip(kargs, plan.folded) if not f]
        run = lambda target: backend.run(plan, kargs, target)  # noqa: E731
    else:
        arrays = list(kargs)
    target = _storage(out)
    if not hasattr(target, "shape") or not hasattr(target, "dtype"):
        raise TypeError(f"{plan.op}: out must be an array, got {type(out).__name__}")
    out_dtype = out.dtype if isinstance(out, Array) else D.dtype(target.dtype)
    # Note: CuPy's flags have no `writeable` (every CuPy array is writable); NumPy's do.
    if not getattr(getattr(target, "flags", None), "writeable", True):
        raise ValueError(f"{plan.op}: the out array is read-only")
    if tuple(target.shape) != tuple(shape):
        try:
            ok = np.broadcast_shapes(shape, target.shape) == tuple(target.shape)
        except ValueError:
            ok = False
        if not ok:
            raise _shape_error(plan.op, [a.shape for a in arrays], target.shape)
    check_store(plan, out_dtype, inplace=any(_same_array(a, out) for a in args))
    if 0 in target.shape:
        return out
    clobbers = any(_overlaps(a, target) for a in arrays)
    native = getattr(target.dtype, "isnative", True)
    if out_dtype is plan.result and not clobbers and native:
        run(target)
    else:
        # Note: a temporary when out has another dtype (computed in the result dtype, then cast,
        # as the frameworks do), the other byte order (NumPy writes '>f4' outputs by value), or
        # overlaps an input other than element for element.
        tmp = backend.empty(target.shape, plan.result)
        run(tmp)
        backend.copyto(target, tmp)
    return out


def _wrap_result(result, dtype, args, backend):
    # A device result stored as bit patterns (float8 in uint8, complex32 in uint32, bfloat16 in
    # uint16 on a CuPy without bfloat16) is a gp.Array, or its dtype would be lost: cupy uint8 [] +
    # a host float8 0-d array is float8.
    if _wants_gp_array(args) or result.dtype != dtype.numpy:
        return Array(result, dtype)
    return result


# ---------------------------------------------------------------------------------------------
# Public op functions with a fast path
#
# The fast path caches, per op, (policy, per-argument dtype or Python type, ndim) -> a runner
# bound to one plan and one backend kernel. It covers numpy arrays and Python scalars without
# out=; gp.Array, cupy and out= take the full path. A Python scalar's value can change the plan
# (range checks, exact comparisons, 2**63 as uint64): the runner holds the plan of an ordinary
# value and the bounds within which it holds (api.cached_plan), and returns None for a value
# outside them, as it does when it cannot take a call (e.g. shapes differ): the full path runs.

_FAST_SCALARS = (float, bool, complex, int)
_INT64 = INT_RANGES["int64"]


def _fast_key(x):
    """The cache key of one argument: the dtype of a numpy array, the type of anything else.

    Keyed by the dtype's value, not its identity: arrays that arrive through pickle
    (multiprocessing, joblib, DataLoader) or carry dtype metadata bring a new dtype object each
    time, equal to the last one; each must find the same runner, not add an entry that keeps its
    dtype alive. (Hashing a dtype costs what id() does.)"""
    t = type(x)
    return x.dtype if t is _ndarray else t


# The runners are few (one per op, policy and argument dtypes or types); the limit only bounds
# what unusual dtypes (structured, datetime, ...) could add to a long-running process.
_FAST_CACHE_LIMIT = 4096


def _fast_plan(op, args, policy):
    """(plan, bounds) for the fast paths (the Python runners and the compiled dispatcher): the plan
    of calls like this one and the ((position, lo, hi), ...) its Python ints must lie in; None
    where such calls always take the full path, _MISS where this one does (not remembered)."""
    if not all(type(x) is _ndarray or type(x) in _FAST_SCALARS for x in args):
        return None   # Python ints (value-dependent plans), gp.Array, cupy, ...
    if any(type(x) is _ndarray and not x.dtype.isnative for x in args):
        return None   # the full path converts the byte order
    if any(type(x) is _ndarray and x.ndim == 0 for x in args):
        return _MISS   # 0-d arrays fold: not cached, as the key (the dtype) does not say ndim
    if any(type(x) is int and not _INT64[0] <= x <= _INT64[1] for x in args):
        return _MISS   # a plan of its own (PyTorch's uint64 kind), not one for every int
    pol = get_policy(policy)
    if pol.rules.canonical and any(type(x) is _ndarray and D.dtype(x.dtype).name in pol.rules.canonical for x in args):
        return None   # 64-bit arrays under JAX x32: the full path casts them first
    cached = cached_plan(op, args, policy)
    if cached is None:
        return None   # no ordinary scalar value passes here: the full path says why, every time
    plan, bounds = cached
    if plan.exact_exponent:
        return None   # the exponent is folded as an equivalent one (call)
    bounds += tuple((i, *_INT64) for i, x in enumerate(args) if type(x) is int)
    if _needs_checks(plan):
        # Integer division and power check their operands before the launch; with an array
        # first and a Python int second, that check is the int's sign: x // 2, x % 3, x ** 2 pass.
        # (the bounds of the int, from the policy's rules, keep 0 and negative divisors and
        # negative exponents and shift counts out)
        if not (type(args[0]) is _ndarray and type(args[1]) is int):
            return None
    for d in (*plan.inputs, plan.result):
        if d.numpy is None:
            return None
    return plan, _merged(bounds)


def _make_runner(op, args, policy):
    found = _fast_plan(op, args, policy)
    if found is None or found is _MISS:
        return found
    plan, bounds = found
    backend = get_backend("cpu")
    make = getattr(backend, "fast_runner", None)
    if make is None:
        return None
    converters = [(_converter(plan.inputs[i], _fold_target(plan, i)) if f else None)
                  for i, f in enumerate(plan.folded)]
    runner = make(plan, converters)
    if runner is not None and len(args) != 2:
        runner = _arrays_with_dimensions(runner)
    if runner is not None and bounds:
        runner = _within(bounds, runner, len(args))
    return runner


def _arrays_with_dimensions(runner):
    """``runner`` for calls whose arrays all have dimensions; None (the full path, which folds them)
    for a 0-d array. The key of a call is its dtypes, not its ranks: where(cond[n], 1, 2) and
    where(cond[], 1, 2) share one, and the generic runner cannot take a 0-d array."""
    def run(*args):
        for x in args:
            if type(x) is _ndarray and not x.ndim:
                return None
        return runner(*args)
    return run


def _merged(bounds):
    """One (position, lo, hi) per position: the intersection of the ranges given for it."""
    merged = {}
    for i, lo, hi in bounds:
        old_lo, old_hi = merged.get(i, (lo, hi))
        merged[i] = (max(lo, old_lo), min(hi, old_hi))
    return tuple((i, lo, hi) for i, (lo, hi) in sorted(merged.items()))


def _within(bounds, runner, arity):
    """``runner`` for the calls whose Python scalars lie within ``bounds`` ((position, lo, hi),
    ...); None, for the full path, otherwise."""
    if arity == 2 and len(bounds) == 1:  # why: x + 1 and 1 + x, the common cases, in one comparison
        i, lo, hi = bounds[0]
        if i == 1:
            return lambda a, b: runner(a, b) if lo <= b <= hi else None
        return lambda a, b: runner(a, b) if lo <= a <= hi else None

    def run(*args):
        for i, lo, hi in bounds:
            if not lo <= args[i] <= hi:
                return None
        return runner(*args)
    return run


_MISS = object()


def _remember(cache, key, runner):
    if len(cache) >= _FAST_CACHE_LIMIT:
        cache.clear()
    cache[key] = runner


def make_op(name: str):
    """The public function for op ``name`` (an OPS name; aliases get the same function)."""
    op = OPS.get(name) or UNARY_OPS[name]
    cache: dict = {}
    caches.register(cache.clear)
    get = cache.get
    current = CURRENT_POLICY.get

    if op.arity == 1:
        def fn(x, /, *, policy=None, out=None):
            return call(name, (x,), policy, out)
        fn.__doc__ = (f"{name}(x, *, policy=None, out=None): elementwise `{op.expr}`; the result keeps x's dtype "
                      f"(absolute: a complex x gives its real dtype), computed as `policy` computes it.")
    elif op.arity == 2:
        def fn(a, b, /, *, policy=None, out=None):
            if out is None:
                # _fast_key, inlined: this line is most of the per-call overhead
                key = (policy or current(), a.dtype if type(a) is _ndarray else type(a),
                       b.dtype if type(b) is _ndarray else type(b))
                runner = get(key, _MISS)
                if runner is _MISS:
                    runner = _make_runner(name, (a, b), key[0])
                    if runner is not _MISS:
                        _remember(cache, key, runner)
                if runner is not None and runner is not _MISS:
                    res = runner(a, b)
                    if res is not None:
                        return res
            return call(name, (a, b), policy, out)
        fn.__doc__ = (f"{name}(a, b, *, policy=None, out=None): elementwise `{op.expr}` with the dtype "
                      f"promotion of `policy` (default: the current policy, see gp.use_policy).")
    else:
        def fn(cond, a, b, /, *, policy=None, out=None):
            if out is None:
                key = (policy or current(), _fast_key(cond), _fast_key(a), _fast_key(b))
                runner = get(key, _MISS)
                if runner is _MISS:
                    runner = _make_runner(name, (cond, a, b), key[0])
                    if runner is not _MISS:
                        _remember(cache, key, runner)
                if runner is not None and runner is not _MISS:
                    res = runner(cond, a, b)
                    if res is not None:
                        return res
            return call(name, (cond, a, b), policy, out)
        fn.__doc__ = (f"{name}(cond, a, b, *, policy=None, out=None): `a` where `cond` else `b`, with the "
                      f"dtype promotion of `policy` (default: the current policy).")
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "gpupromote"
    fn._fast_cache = cache
    return _compiled_op(name, op.arity, fn)


# ---------------------------------------------------------------------------------------------
# The compiled dispatcher (gpupromote/_fastpath.c)
#
# Each op function is a C callable (_fastpath.Op) in front of the Python function above, which
# stays the fallback and the reference (GPUPROMOTE_PURE_PYTHON=1 uses it alone). The C side keeps,
# per (policy, operands' dtypes or Python types, out's dtype or None), an Entry that _make_entry
# builds here, once: the plan (from the same _fast_plan as the Python runners), the kernel's C
# entry point, how each Python scalar is folded, the bounds its ints must lie in, and whether the
# plan's store rules allow out= / in place. A call that fits no entry - another layout, a value
# out of bounds, an overlap, an unusual conversion - runs the Python function, unchanged, so
# both give one result, error and warning (tests/test_dispatcher.py).

# Kernel parameter types the C side converts a folded scalar into (enum in _fastpath.c).
_FOLD_CODES = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6, "uint32": 7,
               "uint64": 8, "float32": 9, "float64": 10, "complex64": 11, "complex128": 12, "float16": 13,
               "bfloat16": 14}


def _load_fastpath():
    if os.environ.get("GPUPROMOTE_PURE_PYTHON"):
        return None
    try:
        from . import _fastpath
    except ImportError:   # no C compiler at install time, or run from a source tree (PYTHONPATH=.)
        return None
    if not hasattr(_fastpath, "Op"):
        return None   # an extension built from an older source
    _fastpath.bind_ops(CURRENT_POLICY, _ndarray)
    return _fastpath


_fastpath = _load_fastpath()


def _store_allowed(plan, inplace: bool) -> bool:
    try:
        check_store(plan, plan.result, inplace=inplace)
    except TypeError:
        return False
    return True


def _make_entry(op, args, policy, out):
    """The compiled dispatcher's Entry for calls like this one, None where they always take the
    Python path, _MISS where this one does."""
    if out is not None and (type(out) is not _ndarray or not out.dtype.isnative):
        return None
    found = _fast_plan(op, args, policy)
    if found is None or found is _MISS:
        return found
    plan, bounds = found
    if not any(type(x) is _ndarray for x in args):
        return None
    if out is not None and (D.dtype(out.dtype) is not plan.result or out.dtype != plan.result.numpy):
        return None   # computed in the result dtype, then cast: the Python path's temporary
    folds = []
    for i, f in enumerate(plan.folded):
        if not f:
            folds.append(None)
            continue
        to = _fold_target(plan, i)
        if to.name not in _FOLD_CODES:
            return None
        folds.append((_FOLD_CODES.get(plan.inputs[i].name, -1), _FOLD_CODES[to.name],
                      _converter(plan.inputs[i], to)))
    backend = get_backend("cpu")
    native = getattr(backend, "native_kernel", None)
    kernel = native(plan) if native is not None else None
    if kernel is None:
        return None
    return _fastpath.Entry(kernel.address, kernel, plan.result.numpy, backend.alloc, backend.pool_min_bytes,
                           tuple(folds), bounds, _store_allowed(plan, False), _store_allowed(plan, True))


def _entry_maker(name, cache):
    def make(key, args, policy, out):
        try:
            entry = _make_entry(name, args, policy, out)
        except Exception:  # noqa: BLE001 - the Python path meets it again and raises it in its words
            return False
        if entry is _MISS:
            return False
        _remember(cache, key, entry)
        return entry
    return make


def _compiled_op(name, arity, fn):
    """``fn`` (the Python op function) behind the compiled dispatcher, where it was built."""
    if _fastpath is None:
        return fn
    cache: dict = {}
    caches.register(cache.clear)   # (its memo in C is cleared by _fastpath.forget, registered by api.py)
    return _fastpath.Op(name, arity, fn, _entry_maker(name, cache), cache)


OP_FUNCTIONS = {name: make_op(name) for name in (*OPS, *UNARY_OPS)}
OP_FUNCTIONS.update({alias: OP_FUNCTIONS[target] for alias, target in ALIASES.items()})


# The dispatcher's steps gp.fuse and gpupromote.dask reuse, by public names.
storage_of, run_into_out, shape_error, wrap_result, check_cpu_dtypes = \
    _storage, _run_into_out, _shape_error, _wrap_result, _check_cpu_dtypes
is_dask, native, wants_gp_array = _is_dask, _native, _wants_gp_array
