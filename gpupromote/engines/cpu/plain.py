"""Where the CPU engine's float16 conversions may skip their NaN-payload work: the plain hardware
conversions (vcvtph2ps / vcvtps2ph alone) in place of the exact ones (engines/cpu/narrow.py), for
the operands and results of steps whose bits cannot tell them apart.

numpy keeps a signalling NaN's payload where vcvtph2ps sets its quiet bit, and narrows a NaN's
payload bits where vcvtps2ph also sets that bit: the exact conversions do that work on every
element (for 16 elements about nine vector operations to narrow, five to widen). Apart from the generator
(source.py) because it is one decision, which the elementwise and the reduction generators share.
"""
from __future__ import annotations

import re

from ...core import dtypes as D
from ...kernel import ir
from ...kernel.unary import BINARY, UNARY

__all__ = ["PLAIN", "MATH_CALL", "plain_params", "plain_conversions", "round_trips", "all_plain"]

# gp_F(in0[, in1]) or gp_F_<narrow code>(...): a call of an owned math helper (core/ops.py)
MATH_CALL = re.compile(r"(gp_\w+?)(?:_(f2|bf|e4|e5))?\((in0(?:, in1)?)\)")

# narrow dtype code -> (widen, round a float32) without the NaN-payload work: for the operands and
# results of narrow math helpers and of IEEE arithmetic (plain_conversions)
PLAIN = {"f2": ("f16_to_f32_plain", "f32_to_f16_plain")}
# Steps that are one IEEE operation in float32 (fadd, fsub, fmul, fdiv): their NaN result is a
# quieted operand NaN chosen by position, never a signalling one, and the same whether the operand
# came in signalling or already quieted, so their operands may be widened, and their results
# rounded, without the NaN-payload work (plain_conversions)
_QUIETING = frozenset({"in0 + in1", "in0 - in1", "in0 * in1", "in0 / in1", "in0 * in0"})


def _narrow_math(node, code: str) -> bool:
    """Whether ``node`` is a call of a math helper's narrow form for dtype ``code`` (gp_exp_f2)."""
    if not isinstance(node, ir.Apply):
        return False
    m = MATH_CALL.fullmatch(node.expr)
    return m is not None and m.group(2) == code and (m.group(1) in UNARY or m.group(1) in BINARY)


def _quieting(node, code: str) -> bool:
    """Whether ``node``'s value is never a signalling NaN and its result does not depend on an
    operand NaN being one: a narrow math helper's call for ``code``, or IEEE arithmetic in float32;
    or a flush to zero (XLA's FTZ, the jax policies) of such a value."""
    if _flushes(node):
        return _quieting(node.args[0], code)
    return _narrow_math(node, code) or (isinstance(node, ir.Apply) and node.expr in _QUIETING
                                        and node.dtype is D.float32)


def _flushes(node) -> bool:
    """Whether ``node`` is a flush of subnormals to zero: a NaN passes it as it came, so it is
    looked through, as a cast to float32 is (its users decide)."""
    return isinstance(node, ir.Apply) and node.expr == "gp_ftz(in0)" and node.dtype is D.float32


def plain_params(kernel, held) -> set:
    """The float16 parameters of ``kernel`` every use of which is a quieting step's operand
    (_quieting), directly or through a cast to float32, never one of the values in ``held`` (the
    stored value, a check; a reduction's map adds its kept value, and leaves out its value where
    the combine is IEEE arithmetic): those that may be widened plainly (plain_conversions)."""
    users: dict = {}
    for node in kernel.steps():
        for a in ((node.arg,) if isinstance(node, ir.Cast) else node.args if isinstance(node, ir.Apply) else ()):
            users.setdefault(a, []).append(node)

    def only_quieting(node, code) -> bool:
        if node in held:
            return False
        for u in users.get(node, []):
            widened = (isinstance(u, ir.Cast) and u.dtype is D.float32) or _flushes(u)
            if not (_quieting(u, code) or (widened and only_quieting(u, code))):
                return False
        return True
    return {p for p in kernel.params if not p.folded and p.dtype.code in PLAIN and only_quieting(p, p.dtype.code)}


def plain_conversions(kernel, direct) -> tuple[set, bool, set]:
    """(the narrow parameters read through the plain widening, whether the result is stored through
    the plain rounding, the steps whose float16 round trip (an intermediate rounded and widened
    again) is plain). numpy keeps a signalling NaN's payload where vcvtph2ps sets its quiet bit, and
    narrows a NaN's payload bits where vcvtps2ph also sets that bit: the exact conversions do that
    work on every element. It changes nothing where a float16 value only feeds narrow math helpers
    (gp_exp_f2 ...: the same result for any NaN operand) or IEEE arithmetic (_QUIETING: it quiets
    the NaN itself), nor where the value rounded is such a step's result (exact in float16, or a
    quiet NaN, which both roundings narrow alike). The same bits; the loop of gp.exp on float16
    1.34 -> 1.00 ns an element, log 1.46 -> 1.13; a fused float16 a*b+c*d-e of 10**7 15.1 -> 4.1 ms."""
    params = plain_params(kernel, {kernel.value, *(c.cond for c in kernel.checks)})
    src = direct if direct is not None else kernel.value
    every = all_plain(kernel, params)
    return params, kernel.out.code in PLAIN and _plain_rounding(src, kernel.out.code, every), round_trips(kernel, every)


def all_plain(kernel, params) -> bool:
    """Whether every array operand of ``kernel`` is among ``params`` (plain_params)."""
    arrays = [p for p in kernel.params if not p.folded]
    return bool(arrays) and all(p in params for p in arrays)


def round_trips(kernel, every: bool) -> dict:
    """The casts to float16 of a quieting step's float32 result (an intermediate the eager calls
    stored as float16, widened again for the next step), each mapped to how it goes: "plain" (round
    and widen plainly) or "same" (nothing: a narrow math helper's result is a float16 value already,
    or the format's quiet NaN, which the round trip gives back as it is); ``every``: all_plain's
    answer for the kernel."""
    trips = {}
    for n in kernel.steps():
        if isinstance(n, ir.Cast) and n.dtype.code in PLAIN and n.arg.dtype is D.float32:
            if _narrow_math(n.arg, n.dtype.code):
                # why: the round trip gives the value back as it is, and its conversions are code:
                # with the exact ones a reduction's map outgrew LLVM's inlining threshold (a staged
                # float16 sum of where(isnan(x), 0, exp(x)): 24 ns an element; reduce.py now forces
                # the inlining too)
                trips[n] = "same"
            elif _plain_rounding(n.arg, n.dtype.code, every):
                trips[n] = "plain"
    return trips


def _plain_rounding(node, code: str, every: bool) -> bool:
    """Whether ``node``'s value may be rounded to float16 plainly: a quieting step's result (through
    flushes). Note: a math helper's only where every array is read plainly (``every``): with an
    integer operand (int8 -> float16 exp) LLVM's code generator folded the float32 result's rounding
    and the plain one into one double -> half rounding, a library call Numba does not link (an
    abort). An arithmetic step's result is an fadd ... in float32, nothing to fold."""
    while _flushes(node):
        node = node.args[0]
    return _quieting(node, code) and (every or not _narrow_math(node, code))
