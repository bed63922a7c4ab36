"""gp.compare: one function run under several policies, step by step, and where they part.

    report = gp.compare(loss, x, policies=("numpy", "torch", "jax"))
    print(report)                    # one row per step: each policy's dtype, the values' difference
    report.first_divergence          # the first step whose dtype or values differ (None if none)
    report.plot("loss.svg")          # the same as a picture (PNG or SVG; the plot extra)

``fn`` runs once per policy on symbolic operands as gp.fuse traces it (dispatch/traced.Traced: the
Python operators and every gp.<op> record one step each), but each step is evaluated at once, by
the eager call under that policy, and its value kept: the values gp.fuse computes too, since a
fused chain equals the eager one bit for bit. The steps are matched across policies by their
order. Torch and JAX arguments (any DLPack producer; CuPy arrays as they are) are read through
the foreign-array views of dispatch/foreign.py, so a step's value lives where the argument does;
it is copied to the host only to be compared.
"""
from __future__ import annotations

import inspect
import linecache
import os
import sys

import ml_dtypes
import numpy as np

from ..core import dtypes as D
from ..core.errors import FuseError
from ..core.kinds import Form
from ..dispatch import eager, foreign
from ..dispatch.api import describe, use_policy
from ..dispatch.array import Array
from ..dispatch.fuse import Fused
from ..dispatch.reduce import reduce
from ..dispatch.traced import Traced, operand_like
from ..promotion.policies import get_policy

__all__ = ["compare", "Comparison", "ComparedStep", "Difference"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_PY_SCALARS = (bool, int, float, complex)
_NOT_RUN = "-"


def compare(fn, *args, policies=("numpy", "torch")) -> "Comparison":
    """Run ``fn(*args)`` under each of ``policies`` step by step and compare the steps.

    ``fn`` is a function gp.fuse takes (elementwise ops, unary functions, clip, astype, reductions
    such as gp.sum), or a gp.fuse'd function; ``args`` NumPy, CuPy, torch or JAX arrays and Python
    scalars. Each step's values under every policy after the first are compared with the first
    policy's (the reference): the largest absolute difference, the largest difference in ulps
    (counted in the units of the less precise of the two dtypes, both values rounded to it) and
    the elements where one is NaN and the other not; see ``Difference``. A step a policy refuses
    (the resolver raises, or the call's value checks do) is kept as that refusal, and the steps
    computed from it are not run under that policy; a step every policy fails alike (operands that
    do not broadcast) raises. Returns a ``Comparison``."""
    policies = tuple(policies)
    if len(policies) < 2:
        raise ValueError(f"gp.compare needs two policies or more to compare, not {policies!r}")
    for name in policies:
        get_policy(name)   # an unknown name raises here, with the list of known ones
    if isinstance(fn, Fused):
        fn = fn.fn
    args = [foreign.adopt(a) if foreign.is_foreign(a) else a for a in args]
    runs = {name: _run(fn, args, name) for name in policies}
    _raise_common_failure(runs)
    return Comparison(fn, policies, runs)


# ---------------------------------------------------------------------------------------------
# One policy's run: the steps recorded and evaluated

class _Probe(Traced):
    """A traced array that also holds its value under the policy (None past a refusal)."""

    __slots__ = ("_value",)

    def __init__(self, recorder, value, dtype, ndim, label):
        super().__init__(recorder, dtype, ndim, label=label)
        self._value = value

    @property
    def shape(self):
        return None if self._value is None else tuple(np.shape(_storage(self._value)))


class _Record:
    """One step as one policy ran it: the op, its operands' labels, where fn called it, and its
    value and dtype, or the refusal (``error``) or the earlier refusal it depends on (``after``)."""
    __slots__ = ("op", "call", "where", "value", "dtype", "error", "after")

    def __init__(self, op, call, where):
        self.op, self.call, self.where = op, call, where
        self.value = self.dtype = self.error = self.after = None


class _Recorder:
    """What gp ops on a _Probe reach (eager.call and reduce.reduce look for ``_tracer``): each
    op runs at once under the policy and is recorded."""

    def __init__(self, policy, host):
        self.policy, self.host = policy, host
        self.records: list = []

    def argument(self, x, label):
        if type(x) in _PY_SCALARS:
            return x
        o = describe(x)
        canonical = get_policy(self.policy).rules.canonical
        dtype = D.dtype(canonical.get(o.dtype.name, o.dtype.name)) if canonical else o.dtype
        return _Probe(self, x, dtype, int(np.ndim(_storage(x))), label)

    def record(self, op, args, policy=None, out=None, form=Form.FUNCTION):
        if out is not None:
            raise FuseError("gp.compare: out= inside the compared function; drop it")
        # the form (gp.maximum(x, 2.0) or x + 2.0) decides whether a policy refuses a Python scalar
        return self._step(op, args, {}, policy, lambda values: eager.call(op, values, self.policy, form=form))

    def record_reduction(self, op, x, kwargs, policy=None):
        return self._step(op, (x,), kwargs, policy,
                          lambda values: reduce(op, values[0], policy=self.policy, **kwargs))

    def _step(self, op, args, kwargs, policy, run):
        if policy is not None and policy != self.policy:
            raise FuseError(f"gp.compare: a step asks for policy {policy!r} while the function runs under "
                            f"{self.policy!r}; drop policy= inside the function (gp.compare sets each policy)")
        record = _Record(op, _call_text(op, args, kwargs), _caller())
        self.records.append(record)
        k = len(self.records) - 1
        values = []
        for a in args:
            if isinstance(a, Traced) and not isinstance(a, _Probe):
                raise FuseError("gp.compare: an operand traced by gp.fuse inside the compared function")
            if isinstance(a, _Probe):
                if a._value is None:
                    record.after = a._label
                a = a._value
            elif not operand_like(a) and not (op == "astype" and len(values) == 1):
                raise FuseError(f"gp.compare: cannot use {a!r} ({type(a).__name__}) as an operand of {op}")
            values.append(a)
        ndim = max((a._ndim for a in args if isinstance(a, Traced)), default=0)
        if record.after is None:
            try:
                with use_policy(self.policy):
                    value = run(values)
            except FuseError:
                raise
            except Exception as exc:  # noqa: BLE001 - the policy's refusal, shown in the report
                record.error = exc
            else:
                record.value, record.dtype = value, _dtype_of(value)
                return _Probe(self, value, record.dtype, int(np.ndim(_storage(value))), f"#{k}")
        return _Probe(self, None, None, ndim, f"#{k}")


def _run(fn, args, policy):
    recorder = _Recorder(policy, all(_is_host(a) for a in args))
    names = _parameter_names(fn, len(args))
    probes = [recorder.argument(a, name) for a, name in zip(args, names)]
    try:
        result = fn(*probes)
    except FuseError:
        raise
    except Exception:
        # after a refusal, the function's own code may fail on a value it never got (dtype None)
        if not any(r.error is not None for r in recorder.records):
            raise
        result = None
    return recorder.records, _unwrapped(result)


def _raise_common_failure(runs):
    """A step that every policy fails with the same exception and message (operands that do not
    broadcast, say) is the function's own error, no difference between policies: raised."""
    for k in range(min(len(records) for records, _ in runs.values())):
        errors = [records[k].error for records, _ in runs.values()]
        if all(e is not None for e in errors) and len({(type(e), str(e)) for e in errors}) == 1:
            raise errors[0]


def _is_host(x) -> bool:
    return type(x) in _PY_SCALARS or isinstance(x, (np.ndarray, np.generic)) or describe(x).host


def _parameter_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        params = []
    names = []
    for j in range(n):
        p = params[min(j, len(params) - 1)] if params else None
        if p is None or (p.kind == p.VAR_POSITIONAL and j >= len(params) - 1):
            names.append(f"{p.name}[{j - len(params) + 1}]" if p is not None else f"arg{j}")
        else:
            names.append(p.name)
    return names


def _unwrapped(result):
    if isinstance(result, _Probe):
        return result._value
    if isinstance(result, (tuple, list)):
        return type(result)(_unwrapped(r) for r in result)
    return result


def _caller():
    """(file, line, text) of the first frame outside gpupromote (and NumPy's own Python code):
    where the compared function called this op."""
    frame = sys._getframe(2)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_PACKAGE) or path.startswith(_NUMPY)):
            break
        frame = frame.f_back
    if frame is None:
        return ("?", 0, "")
    file, line = frame.f_code.co_filename, frame.f_lineno
    return (file, line, linecache.getline(file, line, frame.f_globals).strip())


def _call_text(op, args, kwargs) -> str:
    shown = []
    for a in args:
        if isinstance(a, Traced):
            shown.append(a._label)
        elif type(a) in _PY_SCALARS:
            shown.append(repr(a))
        elif isinstance(a, (str, D.DType, np.dtype, type)):
            shown.append(str(D.dtype(a).name))
        else:
            shown.append("array")
    shown += [f"{k}={v!r}" for k, v in kwargs.items() if v is not None and v is not False]
    return f"{op}({', '.join(shown)})"


def _storage(value):
    return value.storage if isinstance(value, Array) else value


def _dtype_of(value) -> D.DType:
    if isinstance(value, Array):
        return value.dtype
    return D.dtype(np.asarray(value).dtype if isinstance(value, (np.generic, *_PY_SCALARS)) else value.dtype)


def _host(value, dtype: D.DType) -> np.ndarray:
    """A step's value as a NumPy array of its dtype (copied from a device)."""
    storage = _storage(value)
    if hasattr(storage, "get") and not isinstance(storage, np.ndarray):
        storage = storage.get()   # CuPy: to the host
    host = np.asarray(storage)
    if dtype.numpy is not None and host.dtype != dtype.numpy:
        host = host.view(dtype.numpy)   # bfloat16 / float8 kept as their bit patterns
    return host


# ---------------------------------------------------------------------------------------------
# Differences

class Difference:
    """How one policy's value of a step differs from the reference policy's.

    ``count`` elements of ``size`` differ (a NaN equals a NaN; a NaN against a number is counted,
    and ``nan_mismatches`` says how many such elements there are); ``max_abs`` is the largest
    absolute difference and ``max_ulp`` the largest difference in ulps, both over the differing
    elements where neither is NaN (None if none). Ulps are measured in the units of the less
    precise of the two dtypes (``ulp_dtype``: the float with fewer mantissa bits; the float when
    the other is an integer or bool; 1 between two integer dtypes): both values are rounded to
    that dtype and the ulps are the representable values between them, so a float64 result and a
    float32 one that is its correct rounding are 0 ulps apart. Complex values count the real and
    imaginary parts apart, the larger difference of the two. ``shapes`` is set (and nothing else)
    when the two values do not broadcast together."""

    __slots__ = ("count", "size", "max_abs", "max_ulp", "ulp_dtype", "nan_mismatches", "shapes")

    def __init__(self, count=0, size=0, max_abs=None, max_ulp=None, ulp_dtype=None, nan_mismatches=0, shapes=None):
        self.count, self.size, self.max_abs, self.max_ulp = count, size, max_abs, max_ulp
        self.ulp_dtype, self.nan_mismatches, self.shapes = ulp_dtype, nan_mismatches, shapes

    @property
    def differs(self) -> bool:
        return self.count > 0 or self.shapes is not None

    def __repr__(self):
        return f"Difference({self})"

    def __str__(self):
        if self.shapes is not None:
            return f"shapes {self.shapes[0]} vs {self.shapes[1]}"
        if not self.count:
            return "same values"
        parts = []
        if self.max_abs is not None:
            parts.append(f"{self.max_ulp}" if self.ulp_dtype is None else f"{self.max_abs:.3g} ({self.max_ulp} ulp)")
        if self.nan_mismatches:
            parts.append(f"{self.nan_mismatches} NaN")
        return ", ".join(parts) + (f" in {self.count}/{self.size}" if self.size > 1 else "")


def difference(a: np.ndarray, da: D.DType, b: np.ndarray, db: D.DType) -> Difference:
    """How ``b`` (of dtype ``db``) differs from ``a`` (of dtype ``da``): see Difference."""
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        return Difference(shapes=(np.shape(a), np.shape(b)))
    if da.kind in "biu" and db.kind in "biu":
        differ = np.asarray(a != b)
        count = int(differ.sum())
        if not count:
            return Difference(size=a.size)
        apart = _int_apart(a[differ], b[differ])
        return Difference(count, a.size, float(apart), apart, None)
    wide = np.complex128 if "c" in (da.kind, db.kind) else np.float64
    with np.errstate(over="ignore", invalid="ignore"):   # beyond the ulp dtype, a value rounds to inf
        return _float_difference(a.astype(wide), da, b.astype(wide), db, wide is np.complex128)


def _float_difference(wa, da, wb, db, complex_) -> Difference:
    nan_a, nan_b = np.isnan(wa), np.isnan(wb)
    nan_mismatch = nan_a != nan_b
    differ = (wa != wb) & ~(nan_a & nan_b)
    count = int(differ.sum())
    if not count:
        return Difference(size=wa.size)
    numeric = differ & ~nan_a & ~nan_b
    unit = _less_precise(da, db)
    max_abs = max_ulp = None
    if numeric.any():
        max_abs = float(np.abs(wa[numeric] - wb[numeric]).max())
        parts = (np.real, np.imag) if complex_ else (np.asarray,)
        max_ulp = max(_ulps(part(wa[numeric]), part(wb[numeric]), unit) for part in parts)
    return Difference(count, wa.size, max_abs, max_ulp, unit, int(nan_mismatch.sum()))


def _real_of(d: D.DType) -> D.DType | None:
    if d.kind == "f":
        return d
    if d.kind == "c":
        return D.dtype({"complex32": "float16", "complex64": "float32", "complex128": "float64"}[d.name])
    return None


def _less_precise(da, db) -> D.DType:
    floats = [f for f in (_real_of(da), _real_of(db)) if f is not None]
    return min(floats, key=lambda f: ml_dtypes.finfo(f.numpy).nmant)


def _ulps(x: np.ndarray, y: np.ndarray, unit: D.DType) -> int:
    """The largest number of ``unit`` ulps between x and y (float64 arrays, no NaN), each rounded
    to ``unit``: the distance between their positions in the ordered bit patterns."""
    return _largest_apart(_ordered(x.astype(unit.numpy)), _ordered(y.astype(unit.numpy)))


def _int_apart(x: np.ndarray, y: np.ndarray) -> int:
    """The largest |x - y| of two integer (or bool) arrays, exactly."""
    if "uint64" in (x.dtype.name, y.dtype.name):   # beyond int64: Python's integers
        return max(abs(int(i) - int(j)) for i, j in zip(x.tolist(), y.tolist()))
    return _largest_apart(x.astype(np.int64), y.astype(np.int64))


def _largest_apart(ox: np.ndarray, oy: np.ndarray) -> int:
    """The largest |ox - oy| of two int64 arrays, exactly (as uint64: no overflow)."""
    same_sign = (ox >= 0) == (oy >= 0)
    with np.errstate(over="ignore"):
        apart = np.where(same_sign, np.abs(ox - oy).astype(np.uint64),
                         np.abs(ox).astype(np.uint64) + np.abs(oy).astype(np.uint64))
    return int(apart.max())


def _ordered(x: np.ndarray) -> np.ndarray:
    """Floats as int64 in the order of their values (-0.0 and 0.0 both 0; next values 1 apart)."""
    bits = x.view(f"i{x.itemsize}").astype(np.int64)
    magnitude = bits & ((1 << (8 * x.itemsize - 1)) - 1)
    return np.where(bits < 0, -magnitude, magnitude)


# ---------------------------------------------------------------------------------------------
# The report

class ComparedStep:
    """One step of the compared function: ``index``, ``op`` (its name), ``call`` (the op with its
    operands: arguments by name, earlier steps as #k), ``file``, ``line`` and ``text`` (the line
    of the function that made it), and per policy: ``dtypes`` (the result dtype's name; None where
    refused or not run), ``values`` (NumPy arrays), ``refusals`` (the exception), ``not_run`` (the
    refused step it depends on), and ``differences`` (vs the first policy, where both ran)."""

    def __init__(self, index, policies, records):
        first = next(r for r in records.values() if r is not None)
        self.index, self.op, self.call = index, first.op, first.call
        self.file, self.line, self.text = first.where
        self.policies = policies
        self.dtypes = {p: (r.dtype.name if r is not None and r.dtype is not None else None) for p, r in records.items()}
        self.refusals = {p: r.error for p, r in records.items() if r is not None and r.error is not None}
        self.not_run = {p: (r.after if r is not None else "the function ended") for p, r in records.items()
                        if r is None or r.after is not None}
        self.ops = {p: r.op for p, r in records.items() if r is not None}
        self.values = {p: _host(r.value, r.dtype) for p, r in records.items() if r is not None and r.dtype is not None}
        ref = policies[0]
        self.differences = {}
        if ref in self.values:
            for p in policies[1:]:
                if p in self.values:
                    self.differences[p] = difference(self.values[ref], records[ref].dtype,
                                                     self.values[p], records[p].dtype)

    @property
    def diverges(self) -> bool:
        """Whether the policies part here: a dtype or a value differs, a policy refuses the step
        or does not run it, or they ran different ops."""
        return (len(set(self.dtypes.values())) > 1 or bool(self.refusals) or bool(self.not_run)
                or len(set(self.ops.values())) > 1 or any(d.differs for d in self.differences.values()))

    def cell(self, policy) -> str:
        """The step's dtype under ``policy`` as the table shows it."""
        if policy in self.refusals:
            return "refused"
        return self.dtypes[policy] or _NOT_RUN

    def __repr__(self):
        return f"<step {self.index}: {self.call} at line {self.line}: " + \
            ", ".join(f"{p} {self.cell(p)}" for p in self.policies) + ">"


class Comparison:
    """What gp.compare found: ``steps`` (ComparedStep, in order), ``first_divergence`` (the first
    step whose dtype or values differ, or that a policy refuses; None when none does), ``results``
    (per policy, what the function returned: NumPy, CuPy or gp.Array values). ``str()`` is the
    table; ``plot(path)`` the picture."""

    def __init__(self, fn, policies, runs):
        self.name = getattr(fn, "__name__", "fn")
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        self.file = code.co_filename if code is not None else None
        self.policies = policies
        self.results = {p: result for p, (_, result) in runs.items()}
        n = max(len(records) for records, _ in runs.values())
        self.steps = [ComparedStep(k, policies, {p: (records[k] if k < len(records) else None)
                                                 for p, (records, _) in runs.items()}) for k in range(n)]
        self.first_divergence = next((s for s in self.steps if s.diverges), None)

    def __repr__(self):
        return f"<Comparison of {self.name} under {', '.join(self.policies)}: {self._verdict()}>"

    def _verdict(self) -> str:
        s = self.first_divergence
        if s is None:
            return f"no divergence in {len(self.steps)} step{'s' * (len(self.steps) != 1)}"
        return f"first divergence at step {s.index} ({s.op}, line {s.line})"

    def where(self, step) -> str:
        """The line number of ``step``, with its file where that is not the function's own."""
        same = step.file == self.file
        return str(step.line) if same else f"{os.path.basename(step.file)}:{step.line}"

    def __str__(self):
        ref, others = self.policies[0], self.policies[1:]
        head = ["", "step", "op"] + list(self.policies) + [f"{p} vs {ref}" for p in others] + ["line"]
        rows = []
        for s in self.steps:
            diffs = [str(s.differences[p]) if p in s.differences else _NOT_RUN for p in others]
            mark = ">" if s is self.first_divergence else ("*" if s.diverges else "")
            rows.append([mark, str(s.index), s.call] + [s.cell(p) for p in self.policies] + diffs
                        + [f"{self.where(s)}  {s.text}"])
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        lines = [f"gp.compare({self.name}) under {', '.join(self.policies)}: {self._verdict()}"]
        for r in [head] + rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if any(s.diverges for s in self.steps):
            lines.append("(>: the first divergence; *: a later step that differs)")
        for s in self.steps:
            for p, exc in s.refusals.items():
                lines.append(f"step {s.index} refused under {p}: {type(exc).__name__}: {exc}")
        return "\n".join(lines)

    def plot(self, path=None):
        """The steps (rows) with each policy's result dtype (columns), coloured by kind as the
        promotion pictures are; PNG or SVG by ``path``'s suffix (the Figure when None). Needs
        matplotlib (the plot extra)."""
        from .plots import compare_figure
        return compare_figure(self, path)
