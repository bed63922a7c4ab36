"""gp.fuse of a function with reductions: a few kernels, each the fused form of a stretch of it.

A reduction ends what one elementwise kernel can compute (its result has another shape, and the
steps after it read all of it). When gp.fuse's trace meets one (``StagedFunction`` from the
tracer), the function runs again on ``Staged`` values, which record elementwise steps instead of
computing them:

* a reduction of a recorded chain is one reduction kernel whose element term is the chain
  (kernel/reduce.fused: ``gp.sum(x * y)`` reads x and y once and writes one number per row);
  var, std, argmax, argmin and the scans take the chain computed first, by one fused kernel;
* a reduction of an argument is the eager reduction;
* the chain that makes the result is one fused kernel (gp.fuse's own), reading the reductions'
  results as arrays.

A reduction of a chain is recorded, not run, until the function has returned (or something
needs its value first: its dtype, another stage reading it). By then the whole graph is known, and
a chain that is reduced and also used again (softmax's ``e = gp.exp(x - m)``, summed and then
divided) is stored by the reduction kernel as it computes it (kernel/reduce.py ``kept``): the
stages after it read it instead of computing it a second time.

Softmax over the last axis (max; sum of exp(x - max), keeping exp(x - max); that divided by the
sum) is three kernels, with one exp per element; layer norm (mean, mean of squared deviations, the
normalized affine result) three. Each
kernel rounds what it computes as the eager calls round it, so the result equals the eager one
bit for bit: a chain's value read by a reduction is the value the eager reduction reads from the
chain's stored result (the kernel IR carries every intermediate in its eager dtype).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import FuseError, VALUE_IN_FUSE
from ..core.kinds import Form
from ..core.ops import op_named
from ..kernel import ir
from .api import use_policy
from .array import Array
from .folding import fold_operand
from . import sanitize as _sanitize
from .operands import storage_of
from ..engines.cpu import program as _cpu_program
from ..engines.cpu.pool import alloc

__all__ = ["StagedFunction", "Staged", "run_staged", "check_one_result"]

_PY_SCALARS = (bool, int, float, complex)
_FUSED_MAPS = ("sum", "prod", "max", "min", "any", "all", "mean")


class StagedFunction(Exception):
    """Raised by gp.fuse's tracer at a reduction: the function runs as stages (this module)."""


class _Recorder:
    """What gp ops called on Staged values reach (eager.call and reduce.reduce look for ``_tracer``)."""

    def __init__(self, policy, fused):
        self.policy, self.fused_cls = policy, type(fused)
        # the stages' Fused functions, kept on the fused function across calls (so their traces
        # are too), keyed by the policy and the stage's recorded tree
        self.stages = fused.__dict__.setdefault("_stages", {})
        self.scratch = set()   # ids of the kept chains' arrays: this call's own, free to overwrite at its end
        self.kernels = 0   # kernels launched (for tests and the docs' counts)

    def record(self, op, args, policy=None, out=None, form=Form.FUNCTION):
        if out is not None:
            raise FuseError("gp.fuse: out= inside a fused function; pass out= to the fused function's call")
        if (policy or self.policy) != self.policy:
            raise FuseError(f"gp.fuse: a step asks for policy {policy!r} inside a function fused under {self.policy!r}")
        # the form (gp.add(x, 1) or x + 1) is replayed as written: a policy may refuse a scalar in one only
        return Staged(self, ("op", op_named(op).name, tuple(args), form))

    def record_reduction(self, op, x, kwargs, policy=None):
        from .reduce import reduce
        if (policy or self.policy) != self.policy:
            raise FuseError(f"gp.fuse: a step asks for policy {policy!r} inside a function fused under {self.policy!r}")
        if not isinstance(x, Staged):
            return reduce(op, x, policy=self.policy, **kwargs)
        if x._settled()[0] == "leaf":
            self.kernels += 1
            return Staged(self, ("leaf", reduce(op, x._expr[1], policy=self.policy, **kwargs)))
        if op in _FUSED_MAPS and kwargs.get("dtype") is None:
            # what the eager call refuses (the chain's promotions, the reduction's, an axis) raises
            # here, at the call, as eagerly (a caller may catch it); only the kernel waits for _settle
            from ..core import dtypes as D
            from .reduce import normalize_axes, reduction_plan
            ndim = x.ndim
            reduction_plan(op, D.dtype(x.dtype), ndim, None, self.policy)
            normalize_axes(kwargs.get("axis"), ndim, op)
            return Staged(self, ("reduce", op, x, kwargs))
        return Staged(self, ("leaf", self.run_reduction(op, x, kwargs, keep=False)))

    def stage(self, x):
        """(leaves, F): the arrays the recorded chain ``x`` reads and a Fused function of them that
        computes it (one kernel), the same F for the same tree on every call."""
        leaves, tree = _evaluator(x)
        key = _tree_key(tree)
        if key is None:
            return leaves, self.fused_cls(_tree_function(tree), policy=self.policy)
        key = (self.policy, key)
        F = self.stages.get(key)
        if F is None:
            if len(self.stages) >= _MAX_STAGES:
                try:   # (another thread calling the same fused function may drop the same one)
                    self.stages.pop(next(iter(self.stages)), None)
                except (RuntimeError, StopIteration):
                    pass
            F = self.stages[key] = self.fused_cls(_tree_function(tree), policy=self.policy)
        return leaves, F

    def run_reduction(self, op, x, kwargs, keep):
        """The value of ``op`` of the chain ``x``: one fused kernel (storing the chain's value in
        place of its recording when ``keep``), or the chain by one kernel and then the reduction."""
        from .reduce import reduce
        leaves, fn = self.stage(x)
        if op in _FUSED_MAPS and kwargs.get("dtype") is None:
            done = _fused_reduction(self, op, leaves, fn, kwargs, keep)
            if done is not None:
                value, kept = done
                self.kernels += 1
                if kept is not None:
                    x._expr = ("leaf", kept)
                return value
        chain = fn(*leaves)   # the chain, one kernel; then the reduction
        self.kernels += 2
        if keep:
            x._expr = ("leaf", chain)
        return reduce(op, chain, policy=self.policy, **kwargs)


class Staged:
    """A value inside a staged gp.fuse function: an argument, a reduction's result, or a recorded
    elementwise chain over them."""

    __slots__ = ("_tracer", "_expr")
    __array_ufunc__ = None
    __hash__ = None

    def __init__(self, recorder, expr):
        self._tracer, self._expr = recorder, expr

    def _settled(self):
        """The recording, with a pending reduction run first (nothing is known of its users yet)."""
        if self._expr[0] == "reduce":
            _, op, x, kwargs = self._expr
            self._expr = ("leaf", self._tracer.run_reduction(op, x, kwargs, keep=False))
        return self._expr

    def _value(self):
        e = self._settled()
        return e[1] if e[0] == "leaf" else None

    @property
    def dtype(self):
        v = self._value()
        if v is None:
            leaves, fn = self._tracer.stage(self)
            return fn.kernel(*leaves).out
        return v.dtype

    @property
    def ndim(self):
        v = self._value()
        if v is not None:
            return np.ndim(storage_of(v))
        leaves, _ = _evaluator(self)
        return max((np.ndim(storage_of(a)) for a in leaves), default=0)

    def __bool__(self):
        raise FuseError(VALUE_IN_FUSE)

    __int__ = __float__ = __complex__ = __index__ = __bool__

    def __neg__(self):
        return self._tracer.record("negative", (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._tracer.record("absolute", (self,))

    def __invert__(self):
        return self._tracer.record("invert", (self,))

    def astype(self, dtype):
        return self._tracer.record("astype", (self, dtype))


def _operator(op, reflected=False):
    def method(self, other):
        if not (isinstance(other, (Staged, np.ndarray, np.generic, Array, *_PY_SCALARS))):
            return NotImplemented
        return self._tracer.record(op, (other, self) if reflected else (self, other), form=Form.OPERATOR)
    return method


for _d, _op in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
                "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}.items():
    setattr(Staged, f"__{_d}__", _operator(_op))
    setattr(Staged, f"__r{_d}__", _operator(_op, reflected=True))
for _d, _op in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                "ge": "greater_equal"}.items():
    setattr(Staged, f"__{_d}__", _operator(_op))


# ---------------------------------------------------------------------------------------------

def _evaluator(x: Staged):
    """(leaves, tree): the arrays a recorded chain reads, in order of first use, and the chain as a
    tree of ("arg", i), ("const", value) and ("op", name, args, form) over them."""
    leaves = []
    return leaves, _collect(x, leaves, {})


# Note: module functions, not closures that call themselves: such a closure is a reference cycle,
# which would keep the arrays it saw (the call's leaves, a pooled kept buffer) until the next GC.
def _collect(e, leaves, index):
    if isinstance(e, Staged):
        e = e._settled()
        if e[0] == "leaf":
            key = id(e[1])
            if key not in index:
                index[key] = len(leaves)
                leaves.append(e[1])
            return ("arg", index[key])
        return ("op", e[1], tuple(_collect(a, leaves, index) for a in e[2]), e[3])
    return ("const", e)


def _tree_function(tree):
    """A function of the leaves that computes ``tree`` with gp ops (what gp.fuse traces into one
    kernel); a subtree used twice is computed once."""
    return lambda *args: _computed(tree, args, {})


def _computed(t, args, memo):
    from .eager import call
    from .opfunctions import OP_FUNCTIONS as ops   # the public op functions (gp.add ...)
    if t[0] == "arg":
        return args[t[1]]
    if t[0] == "const":
        return t[1]
    key = id(t)
    if key not in memo:
        values = [_computed(a, args, memo) for a in t[2]]
        memo[key] = ops[t[1]](*values) if t[3] == Form.FUNCTION else call(t[1], values, form=t[3])
    return memo[key]


_MAX_STAGES = 64
_KEYED_CONSTS = (bool, int, float, complex, str, np.generic, np.dtype, type)


def _tree_key(tree):
    """``tree`` with each constant as its type and repr (-0.0 and 0.0 differ); None when a constant
    is not such a value (an array: its identity would be the key of a cache that outlives it)."""
    if tree[0] == "arg":
        return tree
    if tree[0] == "const":
        v = tree[1]
        return ("const", type(v), repr(v)) if isinstance(v, _KEYED_CONSTS) or v is None else None
    args = []
    for a in tree[2]:
        k = _tree_key(a)
        if k is None:
            return None
        args.append(k)
    return ("op", tree[1], tuple(args), tree[3])


def _settle(root):
    """Run the pending reductions reachable from ``root``, inner ones first, each keeping its chain's
    value when something else reads that chain too."""
    users, pending, seen = {}, [], set()
    stack = [(root, False)]   # depth first, each node after what it reads
    while stack:
        n, done = stack.pop()
        if done:
            if n._expr[0] == "reduce":
                pending.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        kids = n._expr[2] if n._expr[0] == "op" else (n._expr[2],) if n._expr[0] == "reduce" else ()
        for k in kids:
            if isinstance(k, Staged):
                users[id(k)] = users.get(id(k), 0) + 1
                stack.append((k, False))
    for node in pending:
        if node._expr[0] != "reduce":
            continue
        _, op, x, kwargs = node._expr
        keep = x._expr[0] == "op" and users.get(id(x), 0) > 1
        node._expr = ("leaf", node._tracer.run_reduction(op, x, kwargs, keep))


def _fused_reduction(recorder, op, leaves, fn, kwargs, keep=False):
    """(the reduction of the chain ``fn(*leaves)`` as one kernel whose element term is the chain,
    the chain's values where ``keep``, else None), or None where the chain's trace has checks, runs
    eagerly, or is not a plain kernel."""
    from ..kernel.reduce import fused
    from .reduce import reduction_layout, reduction_plan, run_reduction
    storages = [storage_of(a) for a in leaves]
    host = all(isinstance(a, np.ndarray) for a in storages)
    if not (host or all(_on_device(a) for a in storages)) or _sanitize.current() is not None:
        return None   # (sanitizing: the chain runs as gp.fuse's own call, which carries the checks)
    try:
        trace = fn._trace_for(recorder.policy, list(leaves))
    except StagedFunction:
        return None
    if trace.eager is not None or trace.kernel is None or trace.kernel.checks:
        return None
    kargs = _kernel_args(trace, leaves)
    kernel = trace.kernel
    shapes = [np.shape(kargs[k]) for k in kernel.arrays]
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    plan = reduction_plan(op, kernel.out, len(shape), None, recorder.policy)
    keep = keep and kernel.out.numpy is not None and not isinstance(kernel.value, ir.Param)
    red = fused(kernel, plan, label=f"{op}_of_{kernel.label}", keep=keep)
    layout = reduction_layout(shape, kwargs.get("axis"), kwargs.get("keepdims", False), op)
    if not host:
        return _fused_reduction_cuda(red, plan, kargs, kernel, layout, shape)
    arrays = [layout.rows(np.broadcast_to(a, shape)) if not p.folded else a for a, p in zip(kargs, kernel.params)]
    kept = alloc(shape, kernel.out.numpy) if keep else None
    value = run_reduction(op, red, plan, arrays, layout, keep=None if kept is None else layout.rows(kept))
    if kept is not None:
        recorder.scratch.add(id(kept))
    return value, kept


def _on_device(a) -> bool:
    return hasattr(a, "__cuda_array_interface__")


def _fused_reduction_cuda(red, plan, kargs, kernel, layout, shape):
    """_fused_reduction's kernel on the CUDA engine (engines/cuda/reduce.run, the CPU's order of
    combination, so the same bits), or None where an operand is not a device array or its axes do
    not merge into the (rows, K) strides the kernel reads."""
    from ..engines import get_backend
    from ..engines.cuda import reduce as engine
    from .array import Array
    M, K = layout.M, layout.K
    operands = []
    for a, p in zip(kargs, kernel.params):
        if p.folded:
            operands.append(a)
            continue
        rows = _device_rows(a, shape, layout) if _on_device(a) else None
        if rows is None:
            return None
        operands.append(rows)
    if not M or not K:
        return None   # (the eager path raises or returns what an empty reduction gives)
    backend = get_backend("cuda")
    first = next(a for a, p in zip(kargs, kernel.params) if not p.folded)
    with backend.on_device(backend.device_index(first)) as device:
        result = backend.empty((M,), plan.result)
        kept = backend.empty(shape, red.kept.dtype) if red.kept is not None else None
        keep = None if kept is None else _device_rows(storage_of(kept), shape, layout)
        if kept is not None and keep is None:
            return None
        engine.run(red, operands, storage_of(result), K, float(K), device.id, keep=keep)
        shaped = storage_of(result).reshape(layout.out_shape)
    value = Array(shaped, plan.result) if isinstance(result, Array) or shaped.dtype != plan.result.numpy else shaped
    return value, kept


def _device_rows(a, shape, layout):
    """(a, row stride, K stride) in bytes: the device array ``a`` broadcast to ``shape`` read as the
    layout's (rows, K), without a copy; None where its kept axes, or its reduced axes, do not merge
    into one stride."""
    off = len(shape) - a.ndim
    strides = [0] * len(shape)
    for d in range(a.ndim):
        strides[off + d] = 0 if a.shape[d] == 1 else a.strides[d]

    def merged(dims):
        dims = [d for d in dims if shape[d] != 1]
        for d, e in zip(dims, dims[1:]):
            if strides[d] != strides[e] * shape[e]:
                return None
        return strides[dims[-1]] if dims else 0
    sm, sk = merged(layout.kept), merged(list(layout.axes))
    return None if sm is None or sk is None else (a, sm, sk)


def _kernel_args(trace, leaves):
    """The kernel's arguments for a call on ``leaves``, as gp.fuse's own run builds them."""
    kargs = []
    for s in trace.sources:
        if s.folded_unused:
            fold_operand(s.plan, s.i, s.operand, s.value(leaves))
            continue
        if s.arg is not None:
            kargs.append(storage_of(leaves[s.arg]))
        elif s.array is not None:
            kargs.append(s.array)
        else:
            value = s.value(leaves)
            if isinstance(value, (np.ndarray, np.generic)):
                # a 0-d array (a whole-array reduction's result) folded into the kernel by value: a
                # recording of the launches would replay this call's value (engines/cpu/program.py)
                _cpu_program.spoil()
            kargs.append(fold_operand(s.plan, s.i, s.operand, value))
    return kargs


def _rows_map(recorder, fn, leaves):
    """The final chain over rows of its last axis (engines/cpu/kernels.run_map: broadcast operands
    read once per row or column), or None where gp.fuse's own call must run it (checks, an eager
    trace, device or 0-d operands)."""
    from ..engines.cpu.kernels import run_map
    if any(type(storage_of(a)) is not np.ndarray for a in leaves) or _sanitize.current() is not None:
        return None
    try:
        trace = fn._trace_for(recorder.policy, list(leaves))
    except StagedFunction:
        return None
    kernel = trace.kernel
    if trace.eager is not None or kernel is None or kernel.checks or kernel.out.numpy is None:
        return None
    kargs = _kernel_args(trace, leaves)
    shapes = [np.shape(kargs[k]) for k in kernel.arrays]
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    if len(shape) < 1 or 0 in shape or any(type(a) is not np.ndarray for a in (kargs[k] for k in kernel.arrays)):
        return None
    M, K = int(np.prod(shape[:-1])), shape[-1]
    # a kept chain's array of the result's shape and dtype, which nothing reads after this stage,
    # becomes the result: written in place, one large buffer fewer to fault in
    inplace = None
    for i, (a, p) in enumerate(zip(kargs, kernel.params)):
        if not p.folded and id(a) in recorder.scratch and a.shape == shape and a.dtype == kernel.out.numpy \
                and a.flags.c_contiguous:
            inplace = i
            break
    result = kargs[inplace] if inplace is not None else alloc(shape, kernel.out.numpy)
    target = result.reshape(M, K)
    arrays = [a if p.folded else np.broadcast_to(a, shape).reshape(M, K) for a, p in zip(kargs, kernel.params)]
    if inplace is not None:
        arrays[inplace] = target   # (run_map checks that the operand is the output itself)
    run_map(kernel, arrays, target, inplace)
    return result


def check_one_result(fn, result):
    """``result``, or the FuseError of a function returning several (as the one-kernel trace refuses
    them): the stages and gp.fuse's eager run of small calls (fuse.py) answer alike."""
    if isinstance(result, (tuple, list, dict)):
        raise FuseError(f"gp.fuse: {getattr(fn, '__name__', 'fn')} must return one array, not a "
                        f"{type(result).__name__}: fuse each output separately")
    return result


def run_staged(fused, policy, args, out):
    """``fused.fn(*args)`` as stages (the module docstring), under ``policy``, into ``out``."""
    recorder = _Recorder(policy, fused)
    staged = [Staged(recorder, ("leaf", a)) if not isinstance(a, _PY_SCALARS) else a for a in args]
    with use_policy(policy):
        result = check_one_result(fused.fn, fused.fn(*staged))
        if isinstance(result, Staged):
            _settle(result)
    if isinstance(result, Staged) and result._expr[0] != "leaf":
        leaves, fn = recorder.stage(result)
        recorder.kernels += 1
        if out is None and not any(isinstance(a, Array) for a in args):
            done = _rows_map(recorder, fn, leaves)
            if done is not None:
                return done
        return fn(*leaves, out=out)
    value = result._expr[1] if isinstance(result, Staged) else result
    if out is None:
        return value
    np.copyto(storage_of(out), storage_of(value), casting="same_kind")
    return out
