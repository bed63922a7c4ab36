"""The sanitizer's checks (gp.sanitize), as IR: conditions a kernel sets a flag for where a value
may not have survived what the promotion did to it. Both engines run them as they run every
ir.Check; the host learns which flag fired and only then computes what was lost (how many
elements, the first one) from the inputs (dispatch/sanitize.py). The kernel's test is a cheap
range compare per converted value that may fire where nothing was lost (int64 2**60 is exact in
float64, above 2**53); the host's count is exact and reports nothing then.

    inexact_int    (a) an integer converted to a float whose precision cannot hold it
    uint64_high    (b) a uint64 at or above 2**63 read as a signed or floating type
    int_range      an integer converted to a narrower integer type it does not fit (it wraps)
    int_wrap       (e) an integer op whose exact result the compute type does not hold
    float_overflow, float_underflow
                   (c) a float array narrowed to a float it overflows or flushes to zero in (JAX x32's
                   float64 -> float32; a 0-d float64 device array read as float16 under PyTorch)

A folded Python scalar is one value, checked on the host when it is folded (dispatch/sanitize.py:
(c) floats that overflow or flush when narrowed, (d) a clip bound that wraps).
"""
from __future__ import annotations

from ..core import caches
from ..core import dtypes as D
from ..core.ops import op_named
from . import ir

__all__ = ["LOSSY", "WRAPPING_OPS", "PRECISION", "int_range", "conversion_checks", "wrap_checks", "read_checks", "sanitized"]

LOSSY = ("inexact_int", "uint64_high", "int_range", "int_wrap", "float_overflow", "float_underflow")

# real floats by range: converting to one lower in this order can overflow (its largest finite value
# is smaller) and flush to zero (its smallest subnormal is larger)
_FLOAT_RANGE = {"float8_e4m3fn": 0, "float8_e5m2": 1, "float16": 2, "bfloat16": 3, "float32": 4, "float64": 5}

# the bits of significand (the implicit one included) of each float: every integer of magnitude up
# to 2**p is exact in it, 2**p + 1 is not
PRECISION = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8, "float8_e4m3fn": 4, "float8_e5m2": 3,
             "complex128": 53, "complex64": 24, "complex32": 11}

# integer ops whose result can wrap around (an exact result outside the compute type)
WRAPPING_OPS = ("add", "subtract", "multiply", "square", "negative", "absolute", "floor_divide")


def int_range(d: D.DType):
    if d.kind == "i":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def _node(op, args, dtype, value_dtype=None):
    o = op_named(op)
    return ir.apply(op, args, dtype, value_dtype or dtype, o.expression(dtype, dtype))


def _cmp(op, a, b):
    return _node(op, (a, b), a.dtype, D.bool_)


def _any(conds):
    conds = [c for c in conds if c is not None]
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = _node("logical_or", (out, c), D.bool_)
    return out


def _outside(x, lo, hi):
    """x < lo or x > hi, for the ends ``x``'s dtype can pass (None when it never does)."""
    xlo, xhi = int_range(x.dtype)
    return _any([_cmp("greater", x, ir.const(hi, x.dtype)) if xhi > hi else None,
                 _cmp("less", x, ir.const(lo, x.dtype)) if xlo < lo else None])


def conversion_checks(x, dst: D.DType) -> list:
    """(cond, what) for converting the integer node ``x`` to ``dst`` (nothing for a source that is no
    integer: float narrowing of arrays happens in no eager read)."""
    src, dst = x.dtype, D.dtype(dst)
    if src.name in _FLOAT_RANGE and dst.name in _FLOAT_RANGE and _FLOAT_RANGE[dst.name] < _FLOAT_RANGE[src.name]:
        return _narrowing_checks(x, dst)
    if src.kind not in "ui" or dst.kind == "b" or src is dst:
        return []
    found = []
    if src.name == "uint64" and dst.kind in "ifc":
        found.append((_cmp("greater_equal", x, ir.const(1 << 63, src)), "uint64_high"))
    if dst.kind in "fc":
        exact = 1 << PRECISION[dst.name]
        cond = _outside(x, -exact, exact)
        if cond is not None:
            found.append((cond, "inexact_int"))
    elif not (src.name == "uint64" and dst.name == "int64"):   # (that one is uint64_high alone)
        cond = _outside(x, *int_range(dst))
        if cond is not None:
            found.append((cond, "int_range"))
    return found


_WIDER = {8: 16, 16: 32, 32: 64}


def _narrowing_checks(x, dst: D.DType) -> list:
    """A finite float that becomes infinite, and a nonzero one that becomes zero, in ``dst`` (exact
    tests: the converted value is computed anyway; NaN is neither)."""
    y = ir.cast(ir.cast(x, dst), ir.carrier(dst))
    xc = ir.cast(x, ir.carrier(x.dtype))
    finite = _node("isfinite", (xc,), xc.dtype, D.bool_)
    infinite = _node("isinf", (y,), y.dtype, D.bool_)
    nonzero, zero = ir.cast(xc, D.bool_), _node("logical_not", (ir.cast(y, D.bool_),), D.bool_)
    return [(_node("logical_and", (finite, infinite), D.bool_), "float_overflow"),
            (_node("logical_and", (nonzero, zero), D.bool_), "float_underflow")]


def wrap_checks(op: str, compute: D.DType, args, result, division="numpy", values="numpy") -> list:
    """Conditions that fire where integer ``op`` on ``args`` (read as ``compute``) gave ``result``
    (the op's node cast to the plan's result) other than the exact value. Each is a few native
    compares that vectorize: the usual sign tests for add and subtract, the product computed in
    twice the width below 64 bits, and at 64 bits the product in float64 near the type's end (a
    wider test than the overflow itself: the host's count is the exact one)."""
    if op not in WRAPPING_OPS or compute.kind not in "ui" or result.dtype.kind not in "ui":
        return []
    signed = compute.kind == "i"
    if op in ("absolute", "floor_divide") and not signed:
        return []
    a = args[0]
    b = args[1] if len(args) > 1 else a
    if result.dtype is not compute:   # (no plan stores an integer op in another integer type today)
        if compute.bits == 64:
            return []
        wide = D.int64 if signed else D.uint64
        exact = ir.apply(op, [ir.cast(x, wide) for x in args], wide, wide,
                         op_named(op).expression(wide, wide, division, values))
        return [_cmp("not_equal", exact, ir.cast(result, wide))]
    r = result
    zero, lowest = ir.const(0, compute), ir.const(int_range(compute)[0], compute)

    def xor(u, v):
        return _node("bitwise_xor", (u, v), compute)

    def both(u, v):
        return _node("logical_and", (u, v), D.bool_)
    if op == "add":
        cond = _cmp("less", _node("bitwise_and", (xor(a, r), xor(b, r)), compute), zero) if signed else \
            _cmp("less", r, a)
    elif op == "subtract":
        cond = _cmp("less", _node("bitwise_and", (xor(a, b), xor(a, r)), compute), zero) if signed else \
            _cmp("less", a, b)
    elif op in ("multiply", "square") and compute.bits < 64:
        wide = D.dtype(f"{'int' if signed else 'uint'}{_WIDER[compute.bits]}")
        exact = _node("multiply", (ir.cast(a, wide), ir.cast(b, wide)), wide)
        cond = _cmp("not_equal", exact, ir.cast(r, wide))
    elif op in ("multiply", "square"):
        product = _node("multiply", (ir.cast(a, D.float64), ir.cast(b, D.float64)), D.float64)
        # (the bound as an integer constant converted, exactly: the generators write integer literals)
        bound = ir.cast(ir.const(1 << (62 if signed else 63), compute), D.float64)
        cond = _cmp("greater_equal", _node("absolute", (product,), D.float64), bound) if signed else \
            _cmp("greater_equal", product, bound)
    elif op == "negative":
        cond = _cmp("equal", a, lowest) if signed else _cmp("not_equal", a, zero)
    elif op == "absolute":
        cond = _cmp("equal", a, lowest)
    else:   # floor_divide: INT_MIN // -1
        cond = both(_cmp("equal", a, lowest), _cmp("equal", b, ir.const(-1, compute)))
    return [cond]


def read_checks(x, target: D.DType, via) -> list:
    """(cond, what, dst) for reading ``x`` as ``target`` the way ir.read reads it (rounded through the
    narrow float ``via`` first where that rounds)."""
    first = via if via is not None and x.dtype is not via and not ir.exact_in(x.dtype, via) else target
    return [(cond, what, first) for cond, what in conversion_checks(x, first)]


_sanitized: dict = {}
caches.register(_sanitized.clear)


def sanitized(plan) -> ir.Kernel:
    """The kernel of one eager call (ir.from_plan) with the sanitizer's checks: each array
    operand's conversion (info: operand index, source and target dtype) and the op's wrap-around."""
    key = ir.from_plan(plan)
    k = _sanitized.get(key)
    if k is not None:
        return k
    base = key
    # Note: an explicit astype is the user's own conversion (NumPy's astype wraps and rounds by
    # design): it is not reported, as np.errstate does not report it either.
    if plan.op == "astype":
        _sanitized[key] = base
        return base
    via = ir.rounds_inputs_through(plan)
    checks, args = [], []
    for i, p in enumerate(base.params):
        target = ir.operand_target(plan, i)
        if p.folded:   # converted on the host, where the value is one number (dispatch/sanitize.py)
            args.append(p)
            continue
        v = None if plan.op == "where" and i == 0 else via
        for cond, what, dst in read_checks(p, target, v):
            checks.append(ir.Check(cond, what, 0, (i, p.dtype.name, dst.name)))
        args.append(ir.read(p, target, v))
    for cond in wrap_checks(plan.op, plan.compute, args, base.value, plan.int_division,
                            getattr(plan, "values", "numpy")):
        checks.append(ir.Check(cond, "int_wrap", 0))
    k = _sanitized[key] = ir.Kernel(base.params, base.value, checks, label=base.label) if checks else base
    return k
