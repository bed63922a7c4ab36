"""gp.fuse: a function of arrays traced into one ir.Kernel, so a chain of ops is one kernel.

    @gp.fuse
    def f(a, b, c, d, e):
        return a * b + c * d - e

    f(a, b, c, d, e)               # one Numba kernel (NumPy inputs) or one CUDA kernel (CuPy inputs)
    f(a, b, c, d, e, out=buf)      # the out= rules of the last op, as the eager call applies them
    gp.fuse(g, policy="torch")     # a fixed policy (default: the policy current at each call)
    gp.explain(f, a, b, c, d, e)   # each op's dtype and the rules that fired

``fn`` runs once per (policy, device, each argument's dtype and rank (its number of dimensions) or
Python scalar type, and the values it captures: see below) on
symbolic operands: the Python operators (+ - * / // % ** & | ^ << >>, comparisons, unary -, ~,
abs) and every gp.<op> function record one step each, resolved by the resolver under the policy
exactly as the eager call resolves it (a refused promotion raises the same PromotionError, at
trace time). The chain becomes one ir.Kernel: each step reads its operands as the eager call
reads arrays of those dtypes, so every intermediate is rounded to its eager dtype (a float16
intermediate stays float16), integers wrap where eager wraps, and a NaN's payload travels as the
eager kernels carry it. That is the promise none of the usual fusers make (numexpr and XLA compute
intermediates in a wider type): the fused result equals the eager one bit for bit.

Python scalars: constants inside ``fn`` and Python scalar arguments are folded into the kernel
as by-value parameters, converted per call as the eager call converts them; an argument's value
is checked against its step's plan at every call (an out-of-range int raises as eager does, and a
value that changes the plan - PyTorch's 2**63, say - gets a trace of its own). Python arithmetic
on scalar arguments (``x * (s + 1)``) runs in Python at each call, as it does eagerly.

What a trace captures (docs/fuse.md says it at length): the Python code of ``fn`` runs at trace time
only, so a value it reads from outside its arguments is the value of that moment. Two kinds are
watched, and a call that finds them changed gets a trace of its own (as eager would see the new
value): a Python or NumPy scalar, and which array object, held by a name of ``fn``'s own code - a
closure variable or a module global it names (nested functions, comprehensions and lambdas inside
``fn`` included). An array so captured is read by the kernel at each call (its contents as they are
then); anything else (an attribute ``self.k``, an item ``cfg["k"]``, what a helper function reads) is
frozen at trace time: pass such values as arguments. The rank of each argument is part of the key,
so ``fn`` may branch on ``x.ndim``; it may not branch on values (use gp.where).

Steps whose value the result does not use are left out of the kernel: they neither broadcast the
result nor read their inputs, yet their shapes are checked at each call (a broadcast error is
raised as the eager call raises it), and a data check of theirs (integer division by zero) runs
the chain eagerly. A function that raises - a refused promotion, its own exception - runs once
per call: the error of the first step that would fail eagerly is raised (a data check of an
earlier step first, computed by a kernel of the steps so far).

Data-dependent checks the eager call makes before a launch (integer division by zero, NumPy's
INT_MIN // -1 warning, a negative integer power) are made by the kernel and reported after it,
in the order of the steps, with the eager exception or warning; ``out`` is left untouched when
one raises. A call with an empty output runs ``fn`` eagerly (its checks look at the operands, not
at elements that exist).
"""
from __future__ import annotations

import functools
import types

import numpy as np

from . import foreign as interop
from ..kernel import ir
from .api import CURRENT_POLICY, describe, use_policy
from .array import Array, VALUES_HIDDEN, asarray
from ..engines import get_backend
from .eager import run_into_out
from ..core.errors import FuseError
from .operands import is_dask, lazy, native, storage_of, wants_gp_array
from ..promotion.resolve import explain_resolution
from .traced import Traced
from .fuse_trace import PY_SCALARS, Tracer, is_host, rank_of, show_operand
from .fuse_programs import run_recorded, run_small
from .fuse_stages import StagedFunction, check_one_result
from . import sanitize as _sanitize

__all__ = ["fuse", "Fused", "Traced", "FuseError"]

_MAX_TRACES = 256


def fuse(fn=None, *, policy=None):
    """``@gp.fuse`` / ``gp.fuse(fn, policy=None)``: ``fn`` as one fused kernel (see the module)."""
    if fn is None:
        return functools.partial(fuse, policy=policy)
    return Fused(fn, policy)


class Fused:
    """A function traced into one kernel per argument signature; call it as ``fn``."""

    def __init__(self, fn, policy=None):
        if not callable(fn):
            raise TypeError(f"gp.fuse needs a function, not {type(fn).__name__}")
        self.fn, self.policy = fn, policy
        self._traces: dict = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args, out=None, policy=None, sanitize=None):
        if sanitize is not None:   # gp.sanitize for this call (True / "warn", "raise", False / "off")
            with _sanitize.for_call(sanitize):
                return self(*args, out=out, policy=policy)
        if is_dask(out) or any(is_dask(a) for a in args):   # a lazy dask graph, one fused kernel per block
            return lazy("call_fused")(self, args, out, policy)
        if (out is not None and interop.is_foreign(out)) or any(interop.is_foreign(a) for a in args):
            # torch, JAX, ...: the chain runs on views of their memory, the result in the caller's type
            return interop.call(lambda views, view_out: self(*views, out=view_out, policy=policy), args, out)
        name = policy or self.policy or CURRENT_POLICY.get()
        args = [native(a) for a in args]
        sanitizing = _sanitize.current() is not None
        captured = self._captured()
        try:
            trace = self._trace_for(name, args, call=True, sanitize=sanitizing, captured=captured, staged=True)
        except StagedFunction:   # met a reduction now (later calls: the staged trace, no exception)
            trace = None
        if trace is None or type(trace) is _StagedTrace:   # a reduction inside: a few kernels, each fused
            if out is None and not sanitizing and _small_host(args):
                # the eager calls, which the stages equal bit for bit: on small arrays they are
                # faster than the stages' staging (softmax of 16 x 1024: 62 us, 145 staged), or
                # the stages' recorded launches (fuse_programs.py)
                return run_small(self, name, args, captured, lambda: self._eager_staged(name, args))
            return run_recorded(self, name, args, out, captured)
        if trace.eager is not None or trace.empty(args):
            return self._eager(name, args, out, trace)
        if sanitizing:
            return trace.run(args, out, rerun=lambda: self._eager(name, args, None, trace))
        return trace.run(args, out)

    def _eager_staged(self, name, args):
        """A function with reductions as its eager calls (the stages' bits), under policy ``name``."""
        hidden = VALUES_HIDDEN.set(True)   # as on the stages, which this run stands in for
        try:
            with use_policy(name):
                return _unwrapped(check_one_result(self.fn, self.fn(*_as_gp_arrays(args))), args)
        finally:
            VALUES_HIDDEN.reset(hidden)

    def __getstate__(self):
        """What pickling keeps (dask ships fused functions to its workers): the function, the policy
        and the wrapper's attributes. The traces, the stages and the capture readers are rebuilt
        where the copy is called: their IR nodes are interned per process and cannot be unpickled."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_traces", "_stages", "_readers", "_programs")}
        state["_traces"] = {}
        return state

    def kernel(self, *args, policy=None) -> ir.Kernel:
        """The ir.Kernel these arguments run (arrays, or gp.spec(dtype, ndim, device) for none);
        print ``gpupromote.engines.cpu.engine.source(k)`` or ``gpupromote.engines.cuda.source.kernel_source(k, variant)``."""
        trace = self._trace_for(policy or self.policy or CURRENT_POLICY.get(), list(args))
        if trace.kernel is None:
            raise FuseError(f"no kernel: {trace.eager}")
        return trace.kernel

    def explain(self, *args, policy=None) -> str:
        """Each step of the chain: its operands' dtypes, its result and the rules that fired."""
        name = policy or self.policy or CURRENT_POLICY.get()
        trace = self._trace_for(name, list(args))
        lines = [f"{getattr(self.fn, '__name__', 'fn')} fused under policy {name!r}: {len(trace.steps)} step(s)"]
        for k, step in enumerate(trace.steps):
            rules, _ = explain_resolution(name, step.plan.op, step.operands, form=step.form)
            shown = ", ".join(f"{show_operand(o)} ({label})" for o, label in zip(step.operands, step.labels))
            lines.append(f"  step {k}: {step.plan.op}({shown}) -> {step.plan.result.name}"
                         + (f", computed in {step.plan.compute.name}" if step.plan.compute is not step.plan.result else ""))
            lines += [f"    - {line}" for line in rules[2:]]
        if trace.eager is not None:
            lines.append(f"  runs eagerly: {trace.eager}")
        else:
            lines.append("  kernel:")
            lines += [f"    {line}" for line in trace.kernel.text.splitlines()]
        return "\n".join(lines)

    # -----------------------------------------------------------------------------------------

    def _trace_for(self, name, args, call=False, sanitize=False, captured=None, staged=False):
        """The trace for these arguments: keyed by the policy, each argument's dtype and rank (or
        Python scalar type) and what ``fn`` captures (``_captured``). ``call``: the arguments hold
        data, and a trace that raises first runs the data checks of the steps before (as eager).
        ``sanitize``: the kernel with gp.sanitize's checks (a trace of its own). ``captured``: what
        ``_captured()`` gives now, where the caller has it. A function with a reduction raises
        StagedFunction, or, where ``staged`` and its key was met before, returns its _StagedTrace
        (raising and catching took 1.6 of a replayed small softmax's 21 us)."""
        captured = self._captured() if captured is None else captured
        key = (name, tuple(_arg_key(a) for a in args), captured) + (("sanitize",) if sanitize else ())
        trace = self._traces.get(key)
        if type(trace) is _StagedTrace:
            if call:
                trace.tracer.raise_in_order(args)
            if staged:
                return trace
            raise StagedFunction(trace)
        if trace is None or not trace.holds_for(args):
            values_key = key + (tuple(a for a in args if type(a) in PY_SCALARS),)
            trace = self._traces.get(values_key)
            if trace is None or not trace.holds_for(args):
                tracer = Tracer(name, _all_host(args), sanitize)
                try:
                    trace = tracer.trace(self.fn, args)
                except FuseError:
                    raise
                except StagedFunction:
                    # a reduction inside: remembered, so that the next call of this key goes to the
                    # stages at once (tracing up to the reduction again took half of a small call)
                    if call:
                        tracer.raise_in_order(args)
                    self._file_trace(key, _StagedTrace(tracer))
                    raise
                except Exception:
                    # Eager raises this too, unless a data check of an earlier step raises first:
                    # those checks run as a kernel of their own (fn is not run a second time).
                    if call:
                        tracer.raise_in_order(args)
                    raise
                # the first trace of a key is the ordinary one; a value that needs another plan gets its own
                self._file_trace(key if key not in self._traces else values_key, trace)
        return trace

    def _file_trace(self, key, trace):
        """Keep ``trace`` under ``key``, the oldest trace dropped past _MAX_TRACES."""
        if len(self._traces) >= _MAX_TRACES:
            self._traces.pop(next(iter(self._traces)))
        self._traces[key] = trace

    def _captured(self):
        """What ``fn`` reads from outside its arguments and the trace must follow (the module
        docstring): a Python / NumPy scalar by type and exact value (``repr``: -0.0 and 0.0 differ,
        NaN equals itself), an array by identity, for each name of fn's closure and each global its
        code names."""
        readers = self.__dict__.get("_readers")
        if readers is None:
            readers = self._readers = _capture_readers(self.fn)
        if not readers:
            return ()
        key = []
        for name, read in readers:
            value = read()
            t = type(value)
            if t in PY_SCALARS or isinstance(value, np.generic):
                key.append((name, t, repr(value)))
            elif t in _NOT_DATA:
                continue   # (before the hasattr below, which raises inside on these: 1.8 -> 0.6 us a softmax call)
            elif isinstance(value, (np.ndarray, Array)) or hasattr(value, "__cuda_array_interface__"):
                key.append((name, t, id(value)))
        return tuple(key)

    def _eager(self, name, args, out, trace):
        with use_policy(name):
            result = _unwrapped(self.fn(*_as_gp_arrays(args)), args)
        if out is None:
            return result
        if not trace.steps:
            raise TypeError("gp.fuse: out= needs a function that computes its result with gp ops")
        backend = get_backend("cpu" if trace.host else "cuda")
        stored = storage_of(result)
        return run_into_out(trace.steps[-1].plan, backend, [stored], stored.shape, out, args,
                             run=lambda target: backend.copyto(target, stored))


class _StagedTrace:
    """The trace of a key whose function reduces (StagedFunction): its tracer, whose steps before
    the reduction say what eager raises first on a call's arguments."""

    def __init__(self, tracer):
        self.tracer = tracer

    def holds_for(self, args) -> bool:
        return True


# A staged function whose arrays are all NumPy ones of at most this many elements runs as the eager
# calls (measured, one thread, float32 softmax / layer norm / sum(x * x): at 2^16 elements 117 / 84 /
# 34 us eagerly against 202 / 178 / 75 staged; at 2^18 1155 / 187 / 76 against 411 / 254 / 98)
STAGED_EAGER_MAX = 1 << 17


def _small_host(args) -> bool:
    arrays = [a for a in args if type(a) not in PY_SCALARS]
    return all(type(a) is np.ndarray and a.size <= STAGED_EAGER_MAX for a in arrays)


def _as_gp_arrays(args):
    """The arguments as the trace sees them: an array's operators are gp ops under the policy
    (the eager run of a chain that cannot fuse must not fall to NumPy's or CuPy's own ``-``)."""
    return [asarray(a) if isinstance(a, np.ndarray) or hasattr(a, "__cuda_array_interface__") else a
            for a in args]


def _unwrapped(result, args):
    """An eager result in the arguments' array type, as a traced run returns it."""
    storage = result.storage if isinstance(result, Array) else None
    if storage is None or wants_gp_array(args) or storage.dtype != result.dtype.numpy:
        return result
    return storage


def _all_host(args) -> bool:
    return all(is_host(a) for a in args)


def _arg_key(x):
    t = type(x)
    if t in PY_SCALARS:
        return t
    if t is np.ndarray:
        return (x.dtype, x.ndim)
    o = describe(x)
    if o.category == "scalar":
        return type(o.value)
    return (t, o.dtype.name, o.category, o.host, rank_of(x, o))


_NO_VALUE = object()


# what a name fn reads may hold that no launch reads: a module (gp), a function, a class, no value
# (an attribute's name, max in gp.max, is among the names its code reads)
_NOT_DATA = frozenset({types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, object})


def _capture_readers(fn):
    """(name, read) for each value ``fn`` can read by a name of its own code: its closure cells and
    the module globals its code (and the code nested in it: lambdas, comprehensions, inner
    functions) names. Nothing for a callable without Python code (a partial, a class instance)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    readers = []
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        readers.append((name, lambda cell=cell: cell.cell_contents if _cell_full(cell) else _NO_VALUE))
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    g = getattr(fn, "__globals__", {})
    for name in sorted(names - set(code.co_freevars)):
        readers.append((name, lambda name=name: g.get(name, _NO_VALUE)))
    return tuple(readers)


def _cell_full(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:   # a closure variable not assigned yet
        return False
    return True
