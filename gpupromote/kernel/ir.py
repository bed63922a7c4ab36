"""The kernel description both code generators read: a small typed DAG per kernel.

    Param(i, dtype, folded)   kernel input i: an array read element by element in its own dtype,
                              or a folded scalar passed by value, already in ``dtype`` (the
                              compute dtype, bool for a condition)
    Const(value, dtype)       a literal (the checks compare with 0, -1, INT_MIN)
    Cast(x, dtype)            x converted as NumPy / ml_dtypes ``astype`` converts
    Apply(op, args, ...)      an op of core/ops.py on args already of its compute dtype; ``expr`` is the
                              expression ops.Op.expression chose for that compute dtype
    Kernel(params, value)     what is stored (value.dtype is the output dtype), plus ``checks``:
                              conditions a kernel reports through a flags array (integer division
                              by zero, INT_MIN // -1, a negative integer power) where the host
                              cannot test them before the launch (inside a fused chain)

Every DType is a value type. A narrow float (float16, bfloat16, float8) is carried in a float32
register holding a value exactly representable in it, complex32 in complex64: Cast(x, float16)
rounds (and widens back), and reading a float16 array or a float16 intermediate is the same thing.
That is what makes a fused chain round every intermediate as the eager calls round their results.

A binary op is the one-node case (``from_plan``); gp.fuse builds the many-node case from a chain
of plans (dispatch/fuse.py), each node resolved as the eager call resolves it. Nodes are interned: equal
nodes are the same object, so a DAG with shared subexpressions is compared and hashed in linear
time and each subexpression is computed once.

Backends import this module, dtypes and ops only: they never see a policy.
"""
from __future__ import annotations

import hashlib

from ..core import caches
from ..core import dtypes as D
from ..core.ops import op_named

__all__ = ["Param", "Const", "Cast", "Apply", "Check", "Kernel", "direct_store", "param", "const", "cast", "apply",
           "read", "op_node", "from_plan", "stored_as", "cast_kernel", "exact_in", "rounds_inputs_through", "carrier", "lower"]


class _Node:
    __slots__ = ("dtype", "__weakref__")

    def __setattr__(self, name, value):
        raise AttributeError("IR nodes are immutable (interned): build a new one")


_interned: dict = {}


def _intern(cls, key, fields):
    node = _interned.get(key)
    if node is None:
        node = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(node, name, value)
        _interned[key] = node
    return node


class Param(_Node):
    __slots__ = ("index", "folded")

    def __repr__(self):
        return f"p{self.index}:{self.dtype.code}{' folded' if self.folded else ''}"


class Const(_Node):
    __slots__ = ("value",)

    def __repr__(self):
        return f"{self.value!r}:{self.dtype.code}"


class Cast(_Node):
    __slots__ = ("arg",)

    def __repr__(self):
        return f"cast({self.arg!r}, {self.dtype.code})"


class Apply(_Node):
    __slots__ = ("op", "args", "compute", "expr")

    def __repr__(self):
        return f"{self.op}[{self.compute.code}]({', '.join(map(repr, self.args))})"


def param(index: int, dtype, folded: bool = False) -> Param:
    dtype = D.dtype(dtype)
    return _intern(Param, ("param", index, dtype.name, bool(folded)),
                   {"index": index, "dtype": dtype, "folded": bool(folded)})


def const(value, dtype) -> Const:
    dtype = D.dtype(dtype)
    if dtype.kind in "ui":
        value = int(value)
    elif dtype.kind == "b":
        value = bool(value)
    # why: repr, so that -0.0 and 0.0 (equal as keys) stay two constants, and NaN finds itself
    return _intern(Const, ("const", dtype.name, repr(value)), {"value": value, "dtype": dtype})


def cast(x: _Node, dtype) -> _Node:
    """``x`` as ``dtype`` (``x`` itself when it already is)."""
    dtype = D.dtype(dtype)
    if x.dtype is dtype:
        return x
    return _intern(Cast, ("cast", id(x), dtype.name), {"arg": x, "dtype": dtype})


def apply(op: str, args, compute, value_dtype, expr: str) -> Apply:
    args = tuple(args)
    compute, value_dtype = D.dtype(compute), D.dtype(value_dtype)
    return _intern(Apply, ("apply", op, tuple(id(a) for a in args), compute.name, value_dtype.name, expr),
                   {"op": op, "args": args, "compute": compute, "dtype": value_dtype, "expr": expr})


def carrier(dtype) -> D.DType:
    """The register type a value of ``dtype`` lives in: float32 for narrow floats, complex64 for
    complex32, the dtype itself otherwise."""
    dtype = D.dtype(dtype)
    if dtype.is_narrow_float:
        return D.float32
    return D.complex64 if dtype.code == "c4" else dtype


# ---------------------------------------------------------------------------------------------
# Building blocks shared by from_plan and dispatch/fuse.py: the one definition of how a plan reads its
# operands and applies its op.

def exact_in(src: D.DType, via: D.DType) -> bool:
    """Whether every value of ``src`` is exact in the narrow float ``via`` (no rounding step)."""
    if src.kind == "b":
        return True
    return src.name in ("int8", "uint8") and via.name in ("float16", "bfloat16")


def rounds_inputs_through(plan) -> D.DType | None:
    """The promoted dtype when the plan's array inputs are rounded through it (a narrow float),
    else None. The frameworks cast each input to the promoted dtype before computing in float32
    (NumPy's loop dtype, PyTorch's common dtype), which rounds: int8 100 is 96 in float8_e4m3fn,
    int16 257 is 256 in bfloat16."""
    promoted = getattr(plan, "promoted", None)
    return promoted if promoted is not None and promoted.is_narrow_float else None


def read(x: _Node, target: D.DType, via: D.DType | None = None) -> _Node:
    """``x`` (an array operand, or an intermediate of a fused chain) as the compute dtype
    ``target``, rounded through the narrow promoted float ``via`` first where that rounds."""
    if via is not None and x.dtype is not via and not exact_in(x.dtype, via):
        x = cast(x, via)
    return cast(x, target)


def _flush(x: _Node) -> _Node:
    op = op_named("_flush")
    return apply("_flush", (x,), x.dtype, x.dtype, op.expr)


def flushes_subnormals(plan) -> bool:
    """Subnormal inputs and results flushed to zero (a Plan flag, for JAX / XLA)."""
    return bool(getattr(plan, "flush_subnormals", False)) and plan.compute.kind in "fc"


def op_node(plan, args) -> _Node:
    """The value of ``plan``'s op on ``args`` (its operands already read as the compute dtype,
    bool for where's condition), cast to ``plan.result``: flushed where the plan says."""
    if plan.op == "astype":   # the conversion is the read itself (to the target, NumPy's astype): no op
        return cast(args[0], plan.result)
    op = op_named(plan.op)
    ftz = flushes_subnormals(plan)
    if ftz:
        args = [a if (op.name == "where" and i == 0) else _flush(a) for i, a in enumerate(args)]
    kind = op.value_kind(plan.compute)
    value_dtype = D.bool_ if kind == "b" else (D.dtype(_REAL_OF[plan.compute.name]) if kind != plan.compute.kind
                                              else plan.compute)
    # why: JAX's integer_pow (a Python int exponent, kept exact) is exponentiation proper; XLA's
    # y & 63 rule (core/ops.py's "xla" power) is jnp.power's loop over an exponent array
    division = "numpy" if getattr(plan, "exact_exponent", False) else plan.int_division
    value = apply(op.name, args, plan.compute, value_dtype, op.expression(plan.compute, plan.result, division,
                                                                        plan.values))
    if ftz and plan.result.kind in "fc":
        value = _flush(value)   # the computed value, before it is rounded to the result
    return cast(value, plan.result)


_REAL_OF = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def operand_target(plan, i: int) -> D.DType:
    """The dtype operand ``i`` of ``plan`` enters its op as: bool for where's condition, else the
    compute dtype."""
    return D.bool_ if plan.op == "where" and i == 0 else plan.compute


# ---------------------------------------------------------------------------------------------
# Checks and kernels

class Check:
    """A condition on the elements that the host learns of after the launch, through flag
    ``position`` of the kernel's flags array: ``what`` is one of "zero_division",
    "int_min_by_minus_one", "negative_power", or one of the sanitizer's (kernel/lossy.py LOSSY);
    ``step`` names the op (its position in a chain); ``info``: what the host needs to say more
    (the sanitizer's: the operand and the conversion), part of the kernel's listing."""
    __slots__ = ("cond", "what", "step", "info")

    def __init__(self, cond: _Node, what: str, step: int, info: tuple = ()):
        if cond.dtype is not D.bool_:
            raise TypeError(f"a check is a bool node, not {cond.dtype.name}")
        self.cond, self.what, self.step, self.info = cond, what, step, tuple(info)


class Kernel:
    """One kernel: ``params`` (the inputs in launch order), ``value`` (what is stored; its dtype
    is the output's) and ``checks``. ``label`` is for names and messages only. Kernels compare and
    hash by ``text``, a canonical listing of the whole DAG: the cache key of the compiled code."""

    __slots__ = ("params", "value", "checks", "label", "text", "digest", "_hash", "_order")

    def __init__(self, params, value, checks=(), label="kernel"):
        self.params = tuple(params)
        self.value = value
        self.checks = tuple(checks)
        self.label = label
        for k, p in enumerate(self.params):
            if not isinstance(p, Param) or p.index != k:
                raise ValueError(f"kernel parameter {k} must be param({k}, ...), not {p!r}")
        self._order = _schedule([value, *(c.cond for c in self.checks)])
        self.text = self._listing()
        self.digest = hashlib.sha1(self.text.encode()).hexdigest()[:12]
        self._hash = hash(self.text)

    @property
    def out(self) -> D.DType:
        return self.value.dtype

    @property
    def arrays(self) -> list[int]:
        return [p.index for p in self.params if not p.folded]

    @property
    def scalars(self) -> list[int]:
        return [p.index for p in self.params if p.folded]

    def steps(self):
        """The non-parameter nodes in an order where every argument comes first, each once."""
        return [n for n in self._order if not isinstance(n, Param)]

    def dtypes(self):
        """Every dtype a value of the kernel takes (params, intermediates, output)."""
        return {n.dtype for n in self._order} | {p.dtype for p in self.params}

    def _listing(self) -> str:
        names = {p: f"p{p.index}" for p in self.params}
        lines = [f"p{p.index} = {'scalar' if p.folded else 'array'} {p.dtype.code}" for p in self.params]
        for k, n in enumerate(self.steps()):
            names[n] = name = f"v{k}"
            if isinstance(n, Const):
                lines.append(f"{name} = const {n.dtype.code} {n.value!r}")
            elif isinstance(n, Cast):
                lines.append(f"{name} = cast {names[n.arg]} -> {n.dtype.code}")
            else:
                args = ", ".join(names[a] for a in n.args)
                lines.append(f"{name} = {n.op}[{n.compute.code}] {n.expr} ({args}) -> {n.dtype.code}")
        lines.append(f"out {names[self.value]} -> {self.value.dtype.code}")
        lines += [f"check {c.what} step {c.step}{' ' + repr(c.info) if c.info else ''}: {names[c.cond]}"
                  for c in self.checks]
        return "\n".join(lines)

    def __eq__(self, other):
        return isinstance(other, Kernel) and other.text == self.text

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"<gp kernel {self.label} {self.digest}:\n{self.text}>"


def lower(kernel, param, cast, apply, const):
    """What both generators do with a kernel's DAG, in one place: name each parameter
    (``param(p)``), then each step in order as a local ``v<k>`` whose value is ``cast(arg name,
    src, dst)``, ``apply(node, [arg names])`` or, for constants, inlined ``const(node)``.
    Returns (names, lets, direct): every node's text; the (local name, node, value text) to
    declare, in order; and ``direct``, the value the output is rounded from in one step when the
    output is a narrow float cast of a value used nowhere else (no round, widen, round again),
    else None."""
    names = {p: param(p) for p in kernel.params}
    direct = direct_store(kernel)
    lets = []
    for k, node in enumerate(kernel.steps()):
        if direct is not None and node is kernel.value:
            continue
        if isinstance(node, Const):
            names[node] = const(node)
            continue
        if isinstance(node, Cast):
            value = cast(names[node.arg], node.arg.dtype, node.dtype)
        else:
            value = apply(node, [names[a] for a in node.args])
        names[node] = f"v{k}"
        lets.append((f"v{k}", node, value))
    return names, lets, direct


def direct_store(kernel):
    """lower's ``direct``: the value a narrow output is rounded from in one step, or None."""
    v = kernel.value
    if not (isinstance(v, Cast) and v.dtype.is_narrow_float):
        return None
    for n in kernel.steps():
        if (isinstance(n, Apply) and any(a is v for a in n.args)) or (isinstance(n, Cast) and n.arg is v):
            return None
    return None if any(c.cond is v for c in kernel.checks) else v.arg


def _schedule(roots):
    order, seen = [], set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in seen:
                continue
            if expanded or isinstance(node, (Param, Const)):
                seen.add(id(node))
                order.append(node)
                continue
            stack.append((node, True))
            children = (node.arg,) if isinstance(node, Cast) else node.args
            stack.extend((c, False) for c in reversed(children) if id(c) not in seen)
    return order


# ---------------------------------------------------------------------------------------------
# The one-node case

_from_plan: dict = {}
caches.register(_from_plan.clear)


def from_plan(plan) -> Kernel:
    """The kernel of one eager call: each array operand read in its own dtype (rounded through a
    narrow promoted float where the plan says), folded operands as by-value parameters already in
    the compute dtype, the op, the result. Cached per plan."""
    key = (plan.op, plan.inputs, plan.folded, plan.compute, plan.result, plan.promoted, plan.int_division,
           bool(getattr(plan, "flush_subnormals", False)), plan.values)
    k = _from_plan.get(key)
    if k is not None:
        return k
    via = rounds_inputs_through(plan)
    params, args = [], []
    for i, (d, folded) in enumerate(zip(plan.inputs, plan.folded)):
        target = operand_target(plan, i)
        if folded:
            p = param(i, target, folded=True)
            args.append(p)
        else:
            p = param(i, d)
            args.append(read(p, target, None if plan.op == "where" and i == 0 else via))
        params.append(p)
    k = _from_plan[key] = Kernel(params, op_node(plan, args), label=plan.op)
    return k


_stored_as: dict = {}
caches.register(_stored_as.clear)


def stored_as(kernel: Kernel, dtype) -> Kernel:
    """``kernel`` with its value cast to ``dtype`` as astype casts it, in the same pass: an out=
    array of another dtype than the result's (the frameworks compute in the result dtype, then
    cast into out; this is that, without the temporary). Cached per (kernel, dtype)."""
    dtype = D.dtype(dtype)
    k = _stored_as.get((kernel, dtype))
    if k is None:
        k = _stored_as[kernel, dtype] = Kernel(kernel.params, cast(kernel.value, dtype), kernel.checks,
                                               label=f"{kernel.label} into {dtype.name}")
    return k


def cast_kernel(src, dst) -> Kernel:
    """astype as a kernel: an array of ``src`` stored as ``dst``."""
    src, dst = D.dtype(src), D.dtype(dst)
    p = param(0, src)
    return Kernel([p], cast(p, dst), label="cast")
