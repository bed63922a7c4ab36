"""gp.fuse's tracer and traces: Tracer records each step a fused function makes (its plan, as
the eager call resolves it) and builds the kernel IR of the chain; _Trace runs that kernel for the
arguments of a call (and the eager fallback's pieces: unused steps' shape checks, data checks in
step order). dispatch/fuse.py keys and caches the traces."""
from __future__ import annotations


import numpy as np

from ..core import dtypes as D
from ..kernel import ir, lossy
from .api import describe, use_policy
from ..engines import get_backend
from .checks import checks_of, report_check
from . import sanitize as _sanitize
from .eager import check_cpu_dtypes, run_into_out, wrap_result
from ..core.errors import FuseError
from ..core.kinds import Form
from .folding import fold_operand
from .operands import broadcast_shapes, shape_error, storage_of
from ..core.ops import op_named
from ..promotion.policies import get_policy
from ..promotion.resolve import Operand, resolve
from .traced import Traced, TracedScalar, operand_like
from .fuse_stages import StagedFunction

__all__ = ["Tracer", "PY_SCALARS", "is_host", "rank_of", "show_operand"]

PY_SCALARS = (bool, int, float, complex)


def show_operand(o):
    if o.category == "scalar":
        return repr(o.value)
    return f"{o.dtype.name}[]" if o.category == "zero-dim" else f"{o.dtype.name}[n]"


def is_host(x) -> bool:
    if type(x) in PY_SCALARS or isinstance(x, (np.ndarray, np.generic)):
        return True
    return describe(x).host


def rank_of(x, o) -> int:
    """An array operand's number of dimensions (a gp.spec's ``ndim``, a NumPy scalar's 0)."""
    ndim = getattr(x, "ndim", None)
    return int(ndim) if ndim is not None else (0 if o.category == "zero-dim" else 1)


# ---------------------------------------------------------------------------------------------
# Tracing

class _Step:
    """One op of the chain: its plan, the operands it was resolved with (and where each came
    from, for explain), and for each operand that is a Python scalar computed from the
    arguments, how to get its value at a call; ``form``: the function (gp.<op>) or an operator, which
    decides whether a Python scalar is refused."""
    __slots__ = ("plan", "operands", "scalars", "labels", "node", "form")

    def __init__(self, plan, operands, scalars, labels=(), form=Form.FUNCTION):
        self.plan, self.operands, self.scalars, self.labels = plan, tuple(operands), scalars, tuple(labels)
        self.form = form
        self.node = None   # the IR value the step computes (set once it is built)


class _Source:
    """Where kernel parameter k's value comes from at a call: an argument's array, a captured
    array, or a folded value (``value(args)``) converted by folding.fold_operand for step
    ``plan``'s operand ``i``."""
    __slots__ = ("arg", "array", "value", "plan", "i", "operand", "folded_unused")

    def __init__(self, arg=None, array=None, value=None, plan=None, i=None, operand=None, folded_unused=False):
        self.arg, self.array, self.value, self.plan, self.i, self.operand = arg, array, value, plan, i, operand
        self.folded_unused = folded_unused   # a folded scalar only an unused step reads: no kernel parameter


class Tracer:
    def __init__(self, policy, host, sanitize=False):
        self.policy, self.host, self.sanitize = policy, host, sanitize
        self.params, self.sources, self.steps, self.checks = [], [], [], []
        self.eager = None   # why the chain runs eagerly instead (a case the kernel cannot reproduce)
        self.shape_checks = []   # the unused steps that read operands the kernel does not read
        self.full = None         # (params, sources, checks) before unused steps were dropped
        self.step_reads = []     # per step: the array parameters (indices into full) it reads

    # arguments and constants ------------------------------------------------------------------

    def argument(self, j, x):
        if type(x) in PY_SCALARS:
            return TracedScalar(self, x, lambda args, j=j: args[j], label=f"argument {j}")
        return self._array(x, arg=j)

    def _array(self, x, arg=None):
        o = describe(x)
        if o.category == "scalar":
            raise FuseError(f"gp.fuse: {x!r} is not an array")
        canonical = get_policy(self.policy).rules.canonical
        dtype = D.dtype(canonical.get(o.dtype.name, o.dtype.name)) if canonical else o.dtype
        return Traced(self, dtype, rank_of(x, o), arg=(arg, x, o),
                      label="a captured array" if arg is None else f"argument {arg}")

    def _array_node(self, t: Traced):
        """The IR value of an argument or captured array read element by element (its parameter
        is made on first such use: a 0-d array that every step folds never becomes one)."""
        if t._node is None:
            arg, x, o = t._arg
            k = len(self.params)
            p = ir.param(k, o.dtype)
            self.params.append(p)
            self.sources.append(_Source(arg=arg, array=None if arg is not None else self._captured(x)))
            t._node = ir.cast(p, t._dtype)   # JAX x32: a 64-bit array is canonicalized as it is read
            if self.sanitize:   # (an integer that wraps there; the floats are left: docs/functions.md)
                self._lossy(lossy.conversion_checks(p, t._dtype), len(self.steps), k)
        return t._node

    def _captured(self, x):
        """A captured array as the kernel reads it: on the device of a device chain (copied once)."""
        stored = storage_of(x)
        if not self.host and is_host(x):
            stored = get_backend("cuda").asarray(np.asarray(stored))
        return stored

    def _folded(self, plan, i, operand, value):
        k = len(self.params)
        p = ir.param(k, ir.operand_target(plan, i), folded=True)
        self.params.append(p)
        self.sources.append(_Source(value=value, plan=plan, i=i, operand=operand))
        return p

    # steps ------------------------------------------------------------------------------------

    def record(self, op, args, policy=None, out=None, form=Form.FUNCTION):
        if out is not None:
            raise FuseError("gp.fuse: out= inside a fused function; pass out= to the fused function's call")
        policy = policy or self.policy
        if policy != self.policy:
            raise FuseError(f"gp.fuse: a step asks for policy {policy!r} inside a chain fused under "
                             f"{self.policy!r}; fuse under one policy")
        op = op_named(op).name
        items, operands, scalars = [], [], {}
        target = []
        if op == "astype":   # the dtype is no operand: it is what resolve makes the result
            args, target = args[:1], [Operand(D.dtype(args[1]), "array")]
        for i, a in enumerate(args):
            if isinstance(a, Traced):
                if a._tracer is not self:
                    raise FuseError("gp.fuse: an operand from another trace (a traced value escaped its call)")
            elif isinstance(a, TracedScalar):
                scalars[i] = a._compute
            elif isinstance(a, PY_SCALARS) and not isinstance(a, np.generic):
                pass
            elif operand_like(a):
                a = self._array(a)   # an array captured from an enclosing scope: baked into the trace
            else:
                raise FuseError(f"gp.fuse: cannot use {a!r} ({type(a).__name__}) as an operand of {op}")
            items.append(a)
            operands.append(a.operand if isinstance(a, Traced) else
                            Operand(None, "scalar", a._rep if isinstance(a, TracedScalar) else a))
        plan = resolve(self.policy, op, operands + target, form=form)   # refused as the eager call refuses
        if self.host:
            check_cpu_dtypes(plan)
        step = len(self.steps)
        labels = [a._label if isinstance(a, (Traced, TracedScalar)) else "a constant" for a in items]
        self.steps.append(_Step(plan, operands, scalars, labels, form))
        via = ir.rounds_inputs_through(plan)
        values = []
        for i, (a, folded, o) in enumerate(zip(items, plan.folded, operands)):
            target = ir.operand_target(plan, i)
            computed = isinstance(a, Traced) and a._arg is None
            if folded and computed:
                if plan.exact_exponent and i == len(items) - 1 and a._dtype.itemsize > plan.compute.itemsize:
                    self.eager = "an exact integer exponent computed in the chain is wider than the base"
                if self.sanitize:
                    kept = ir.cast(a._node, plan.inputs[i])
                    self._lossy(lossy.conversion_checks(a._node, plan.inputs[i]) +
                                lossy.conversion_checks(kept, target), step, i)
                values.append(ir.cast(ir.cast(a._node, plan.inputs[i]), target))
            elif folded:
                value = (scalars[i] if i in scalars else
                         (lambda args, j=a._arg[0]: args[j]) if isinstance(a, Traced) and a._arg[0] is not None else
                         (lambda args, v=(a._arg[1] if isinstance(a, Traced) else a): v))
                values.append(self._folded(plan, i, o, value))
            else:
                cond = plan.op == "where" and i == 0
                if self.sanitize and plan.op != "astype":   # (astype: the caller's own conversion, lossy.sanitized)
                    self._lossy([c[:2] for c in lossy.read_checks(self._array_node(a), target, None if cond else via)],
                                step, i)
                values.append(ir.read(self._array_node(a), target, None if cond else via))
        node = self.steps[step].node = ir.op_node(plan, values)
        self._add_checks(plan, values, step)
        if self.sanitize:
            self._lossy([(c, "int_wrap") for c in lossy.wrap_checks(plan.op, plan.compute, values, node,
                                                                      plan.int_division, plan.values)], step, None)
        ndim = max((a._ndim for a in items if isinstance(a, Traced)), default=0)
        return Traced(self, plan.result, ndim, node=node, label=f"step {step}")

    def record_reduction(self, op, x, kwargs, policy=None):
        """A reduction ends the one-kernel chain: fn runs as stages (dispatch/fuse_stages.py), on
        host and device arrays alike."""
        raise StagedFunction(op)

    def _lossy(self, found, step, i):
        """The sanitizer's checks (kernel/lossy.py) of step ``step``'s operand ``i`` (None: its op)."""
        for cond, what in found:
            self.checks.append(ir.Check(cond, what, step, () if i is None else (i,)))

    def _add_checks(self, plan, values, step):
        c = plan.compute
        for what in checks_of(plan):
            if what == "zero_division":
                cond = _compare("equal", values[1], ir.const(0, c))
            elif what == "int_min_by_minus_one":
                cond = _both(_compare("equal", values[0], ir.const(-(1 << (c.bits - 1)), c)),
                             _compare("equal", values[1], ir.const(-1, c)))
            else:
                cond = _compare("less", values[1], ir.const(0, c))
            self.checks.append(ir.Check(cond, what, step))

    def trace(self, fn, args):
        symbolic = [self.argument(j, a) for j, a in enumerate(args)]
        with use_policy(self.policy):
            result = fn(*symbolic)
        if isinstance(result, (tuple, list)):
            raise FuseError(f"gp.fuse: {getattr(fn, '__name__', 'fn')} must return one array, not a "
                            f"{type(result).__name__}: fuse each output separately")
        if not isinstance(result, Traced) or result._arg is not None:
            # a constant, a Python scalar or an argument as it came: nothing for a kernel to compute
            self.eager = "the result is not computed from the arguments by gp ops"
            return _Trace(self, None, None)
        return self.finish(result._node, result._dtype, _label(fn))

    def finish(self, value, dtype, label, partial=False):
        """The _Trace of the kernel that computes ``value``: parameters only the unused steps read
        are dropped (they would broadcast the result) and the rest renumbered; the unused steps'
        shapes are checked at each call instead (``shape_checks``). A data check of an unused step
        that reads such a parameter runs the chain eagerly. ``partial``: the kernel of some checks,
        run for them alone (every check kept, whatever it reads)."""
        used = _params_of([value])
        checked = _params_of([c.cond for c in self.checks])
        if not partial:
            self.full = (list(self.params), list(self.sources), list(self.checks))
            self.step_reads = _array_reads(self.steps)
            if not checked <= used:
                self.eager = "a data check of a step whose value is not used reads operands the result does not read"
            reached = _reachable([value])
            self.shape_checks = [k for k, step in enumerate(self.steps)
                                 if id(step.node) not in reached and not set(self.step_reads[k]) <= used]
        keep = sorted(used | checked)
        if len(keep) != len(self.params):
            value, checks = _renumbered(self.params, keep, value, self.checks)
            kept = set(keep)
            # the folded scalars of unused steps stay in the call's order, converted but not passed
            self.sources = [s if k in kept else _Source(value=s.value, plan=s.plan, i=s.i, operand=s.operand,
                                                          folded_unused=True)
                            for k, s in enumerate(self.sources) if k in kept or (self.params[k].folded and not partial)]
            self.params = [ir.param(j, self.params[k].dtype, self.params[k].folded) for j, k in enumerate(keep)]
            self.checks = checks
        kernel = ir.Kernel(self.params, value, self.checks, label=label)
        return _Trace(self, kernel, dtype)

    def raise_in_order(self, args):
        """What eager raises first, on ``args``, of the steps traced so far (their trace stopped at
        a step that raised): a step whose operands do not broadcast, or before it, a data check."""
        _raise_first(self.policy, self.host, self.steps, (self.params, self.sources, self.checks),
                     _array_reads(self.steps), args)


def _array_reads(steps) -> list:
    """Per step, the sorted indices of the array (not folded) parameters its value reads."""
    memo: dict = {}
    for step in steps:
        stack = [(step.node, False)] if step.node is not None else []
        while stack:
            n, expanded = stack.pop()
            if id(n) in memo:
                continue
            if isinstance(n, ir.Param):
                memo[id(n)] = frozenset() if n.folded else frozenset((n.index,))
            elif isinstance(n, ir.Const):
                memo[id(n)] = frozenset()
            else:
                kids = (n.arg,) if isinstance(n, ir.Cast) else n.args
                if expanded:
                    memo[id(n)] = frozenset().union(*(memo[id(c)] for c in kids))
                else:
                    stack.append((n, True))
                    stack.extend((c, False) for c in kids if id(c) not in memo)
    return [sorted(memo.get(id(step.node), ())) for step in steps]


def _shapes(args, sources, indices):
    return [np.shape(storage_of(args[sources[k].arg])) if sources[k].arg is not None else sources[k].array.shape
            for k in indices]


def _broadcasts(shapes) -> bool:
    try:
        broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def _raise_first(policy, host, steps, full, step_reads, args):
    """Raise what the eager chain raises first on ``args`` (when the fused one cannot run it as
    one kernel): the first step whose operands do not broadcast, unless a data check of a step
    before it fires first (those run as a kernel of their own checks). Returns when neither."""
    params, sources, checks = full
    first = next((k for k, reads in enumerate(step_reads) if not _broadcasts(_shapes(args, sources, reads))), None)
    earlier = [c for c in checks if first is None or c.step < first]
    if earlier:
        tracer = Tracer(policy, host)
        tracer.params, tracer.sources, tracer.steps, tracer.checks = list(params), list(sources), steps, earlier
        trace = tracer.finish(earlier[0].cond, D.bool_, "checks", partial=True)
        if not trace.empty(args):
            trace.run(args, None)
    if first is not None:
        shapes = _shapes(args, sources, step_reads[first])
        raise shape_error(steps[first].plan.op, shapes)


def _reachable(roots) -> set:
    """The ids of the IR nodes ``roots`` compute from (themselves included)."""
    seen, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, ir.Cast):
            stack.append(n.arg)
        elif isinstance(n, ir.Apply):
            stack.extend(n.args)
    return seen


def _params_of(roots) -> set:
    """The indices of the parameters ``roots`` read."""
    seen, stack, found = set(), list(roots), set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, ir.Param):
            found.add(n.index)
        elif isinstance(n, ir.Cast):
            stack.append(n.arg)
        elif isinstance(n, ir.Apply):
            stack.extend(n.args)
    return found


def _renumbered(params, keep, value, checks):
    """``value`` and ``checks`` rebuilt over parameters ``keep`` (old indices), numbered 0, 1, ...
    in that order."""
    new = {params[k]: ir.param(j, params[k].dtype, params[k].folded) for j, k in enumerate(keep)}
    old = ir.Kernel(params, value, checks)
    for node in old.steps():   # every argument before the nodes that read it
        if isinstance(node, ir.Const):
            new[node] = node
        elif isinstance(node, ir.Cast):
            new[node] = ir.cast(new[node.arg], node.dtype)
        else:
            new[node] = ir.apply(node.op, [new[a] for a in node.args], node.compute, node.dtype, node.expr)
    return new[value], [ir.Check(new[c.cond], c.what, c.step, c.info) for c in checks]


def _compare(op, a, b):
    o = op_named(op)
    return ir.apply(op, (a, b), a.dtype, D.bool_, o.expression(a.dtype))


def _both(a, b):
    o = op_named("logical_and")
    return ir.apply("logical_and", (a, b), D.bool_, D.bool_, o.expression(D.bool_))


def _label(fn) -> str:
    return "fused_" + getattr(fn, "__name__", "fn").strip("<>")


# ---------------------------------------------------------------------------------------------
# A trace, run

class _Trace:
    def __init__(self, tracer: Tracer, kernel: ir.Kernel, result_dtype):
        self.policy, self.host, self.eager = tracer.policy, tracer.host, tracer.eager
        self.sanitize = tracer.sanitize
        self.kernel, self.sources, self.steps = kernel, tracer.sources, tracer.steps
        self.shape_checks, self.full, self.step_reads = tracer.shape_checks, tracer.full, tracer.step_reads
        self.scalar_steps = [s for s in self.steps if s.scalars]
        self.result_dtype = result_dtype
        self.wants_gp_array = False

    def holds_for(self, args) -> bool:
        """Whether each step fed by a Python scalar argument resolves, with this call's values, to
        the plan it was traced with (raises, as the eager call does, for a value the policy refuses)."""
        for step in self.scalar_steps:
            operands = list(step.operands)
            for i, compute in step.scalars.items():
                value = compute(args)
                if type(value) is not type(operands[i].value):
                    return False
                operands[i] = Operand(None, "scalar", value)
            if resolve(self.policy, step.plan.op, operands, form=step.form) != step.plan:
                return False
        return True

    def _raise_in_order(self, args):
        """Shapes that do not broadcast: raise as eager raises, at the first step that fails (or a
        data check of a step before it)."""
        _raise_first(self.policy, self.host, self.steps, self.full, self.step_reads, args)

    def _folded_check(self, source, args):
        """gp.sanitize's check of a folded scalar (dispatch/sanitize.py), its step's operands as the
        eager call describes them."""
        step = next((st for st in self.steps if st.plan is source.plan and source.i < len(st.operands)
                     and st.operands[source.i] is source.operand), None)
        operands = None
        if step is not None:
            operands = list(step.operands)
            value = source.value(args)
            if type(value) in PY_SCALARS:
                operands[source.i] = Operand(None, "scalar", value)
        return _sanitize.folded_check(source.plan, source.i, source.operand, operands)

    def empty(self, args) -> bool:
        shapes = [np.shape(storage_of(args[s.arg])) for s in self.sources if s.arg is not None]
        shapes += [s.array.shape for s in self.sources if s.array is not None]
        try:
            return 0 in broadcast_shapes(*shapes) if shapes else False
        except ValueError:
            return False  # the launch reports the broadcast error

    def run(self, args, out, rerun=None):
        """The chain on ``args`` into ``out``. ``rerun()``: the chain run eagerly, when a sanitizer
        check of the kernel fired (gp.sanitize): its eager calls say what was lost where."""
        backend = get_backend("cpu" if self.host else "cuda")
        kargs = []
        for s in self.sources:
            check = self._folded_check(s, args) if self.sanitize else None
            if s.folded_unused:   # a scalar of a step whose value is unused: converted as eager converts it
                fold_operand(s.plan, s.i, s.operand, s.value(args), check)   # (its warning or error), then dropped
                continue
            if s.arg is not None:
                x = storage_of(args[s.arg])
                if not self.host and is_host(args[s.arg]):
                    if np.ndim(x):
                        raise TypeError(f"{self.kernel.label}: argument {s.arg} is a host array of shape {np.shape(x)} "
                                        "beside device arrays; copy it to the device first (cupy.asarray(x))")
                    x = backend.asarray(x)   # a 0-d host array read on the device, as eager computes with it
                kargs.append(x)
            elif s.array is not None:
                kargs.append(s.array)
            else:
                kargs.append(fold_operand(s.plan, s.i, s.operand, s.value(args), check))
        for k in self.shape_checks:   # steps whose value is unused: eager broadcasts their operands too
            if not _broadcasts(_shapes(args, self.full[1], self.step_reads[k])):
                self._raise_in_order(args)
        arrays = [kargs[k] for k in self.kernel.arrays]
        shapes = [a.shape for a in arrays]
        try:
            shape = broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            self._raise_in_order(args)
            raise shape_error(self.kernel.label, shapes) from None
        last = self.steps[-1].plan
        checks = self.kernel.checks

        def launch(target):
            flags = backend.asarray(np.zeros(len(checks), np.uint8)) if checks else None
            backend.run_kernel(self.kernel, kargs, target, flags, last)
            if checks:
                fired = np.asarray(flags.get() if hasattr(flags, "get") else flags)
                lost = False
                for check, hit in zip(checks, fired):
                    if hit and check.what in lossy.LOSSY:
                        lost = True
                    elif hit:
                        report_check(self.steps[check.step].plan, check.what)
                if lost and rerun is not None:
                    # Note: which elements, and their values, are the eager calls' to say: the chain
                    # runs again eagerly (its result unused) only when a sanitizer flag fired
                    _sanitize.emit_collected(_sanitize.quiet_rerun(rerun))

        if out is None or checks:
            # Note: with checks, the chain runs into a result of its own first, so that an out=
            # array is left untouched when a check raises (the eager chain raises before its last op).
            result = backend.empty(shape, self.result_dtype)
            launch(result)
            if out is None:
                return wrap_result(result, self.result_dtype, args, backend)
            return run_into_out(last, backend, [result], shape, out, args,
                                 run=lambda target: backend.copyto(target, result))
        return run_into_out(last, backend, arrays, shape, out, args, run=launch,
                            run_cast=lambda target, dtype: backend.run_kernel(
                                ir.stored_as(self.kernel, dtype), kargs, target, None, last))
