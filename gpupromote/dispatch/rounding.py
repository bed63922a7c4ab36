"""gp.round(x, decimals): rounding to a number of decimal places, as NumPy computes it.

NumPy has no kernel for it: np.round(x, d) multiplies by 10**d, rounds half to even (rint) and
divides by 10**d (for d < 0: divides, rints, multiplies), each a ufunc call under the usual
promotion, the Python float 10**d weakly typed (a float16 array stays float16). Integers are
returned as they are for d >= 0 and computed in float64 for d < 0, then cast back. So gp.round
composes the same ops, each resolved and run as any gp call: the bits are NumPy's, on either engine
and inside gp.fuse (three steps of the traced chain). NumPy writes each step into ``out`` or an array
of x's dtype, which rounds a wider step's result back (bfloat16: float32 arithmetic, each step
rounded to bfloat16); gp.round casts those steps back too. ``_power_of_ten`` is NumPy's own (a table to
10**8, then multiplications by ten, each rounded), so 10**d is the same double for every d.

Under the torch policies gp.round(x, decimals) is torch.round(x, decimals=d)'s composition (ATen's
round_decimals_kernel): in x's opmath type (float32 for float16 and bfloat16, else x's own), with
f = 10**|d| rounded to that type, rint(x * f) / f for d > 0 and rint(x / f) * f for d < 0, the
result rounded to x's dtype; integers, bool and complex are refused, as torch refuses them, and out=
must have x's dtype. Measured against torch 2.13 on the CPU: 200,000 values for each of decimals -6..8
and float32, float64, float16, bfloat16, no bit differs (float16 and bfloat16 differ from np.round in
up to all of them, NumPy computing in the narrow type).

Note: the other policies refuse decimals != 0 with the explicit form to write instead, rather than
answer with NumPy's bits under another framework's name: jnp.round multiplies by 10**d for d < 0
where NumPy divides, rounds float16 through float32, and XLA (CPU, jax 0.10) turns its division by
10**d into a multiplication by the float32 reciprocal (200,000 float32 values, decimals 1, 2, 3:
24,608, 41,708 and 94,350 differ from np.round; 0 from rint(x * 10**d) * (1 / 10**d)), a compiler's
choice gpupromote does not copy.
"""
from __future__ import annotations

import contextlib
import operator

from ..core import dtypes as D
from ..core.errors import PromotionError
from . import sanitize as _sanitize
from .api import describe, get_policy_name, result_type

__all__ = ["round_decimals", "with_decimals"]

_P10 = (1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8)


def _power_of_ten(n: int) -> float:
    """10**n as NumPy's round takes it (numpy/_core/src/multiarray/calculation.c)."""
    if n < 9:
        return _P10[n]
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
    return ret


def with_decimals(unary, functions):
    """gp.round: ``unary`` (the round op's function: half to even), or with ``decimals`` != 0
    np.round's rounding to that many places by the public op functions ``functions()``."""
    def fn(x, /, decimals=0, *, policy=None, out=None, dtype=None, casting=None, where=True, sanitize=None):
        if decimals == 0:
            return unary(x, policy=policy, out=out, dtype=dtype, casting=casting, where=where, sanitize=sanitize)
        if dtype is not None or casting is not None or where is not True:
            raise TypeError("gp.round: decimals= with dtype=, casting= or where=: convert x first (gp.astype)")
        with _sanitize.for_call(sanitize) if sanitize is not None else contextlib.nullcontext():
            return round_decimals(functions(), x, decimals, policy, out)
    what = unary.__doc__.split(": ", 1)[1].splitlines()[0]   # the op's own summary, after its signature
    fn.__doc__ = (f"round(x, decimals=0, *, policy=None, out=None, ...): {what} With decimals != 0: np.round's "
                  f"rounding to that many places under the numpy policy, torch.round's under the torch policy "
                  f"(dispatch/rounding.py).")
    return fn


_TORCH = ("torch", "torch-f64")   # (the default float dtype does not enter torch.round)
_OPMATH = {"float16": "float32", "bfloat16": "float32"}   # ATen's opmath_type of the narrow floats


def _torch_round(fns, x, d, dtype, out, kw, name):
    """torch.round(x, decimals=d) (the module docstring); ``dtype``: x's, a float (x is not complex)."""
    if dtype.kind != "f":
        raise PromotionError(name, "round", (describe(x),), f"decimals={d} of {dtype.name}: torch.round has no "
                             f"decimals= for integer or bool tensors", "Convert first: gp.round(gp.astype(x, 'float32'), "
                             f"{d})")
    if out is not None and D.dtype(out.dtype) is not dtype:
        raise TypeError(f"gp.round: decimals={d} of {dtype.name} into out= of {D.dtype(out.dtype).name}: torch.round "
                        f"writes only an out= of x's dtype; round, then gp.astype")
    op = _OPMATH.get(dtype.name, dtype.name)
    f = float(10 ** abs(d))   # the double nearest 10**|d| (std::pow's), rounded to op as the scalar is folded
    first, last = ("multiply", "true_divide") if d > 0 else ("true_divide", "multiply")
    wide = x if op == dtype.name else fns["astype"](x, op, **kw)
    r = fns[last](fns["rint"](fns[first](wide, f, **kw), **kw), f, **kw)
    return fns["astype"](r, dtype.name, out=out, **kw) if op != dtype.name or out is not None else r


def round_decimals(fns, x, decimals, policy, out):
    """np.round(x, decimals) under ``policy`` (the numpy policy; decimals != 0), torch.round(x,
    decimals=d) under the torch policy, with the public op functions ``fns`` (opfunctions.OP_FUNCTIONS)."""
    d = operator.index(decimals)
    name = policy or get_policy_name()
    dtype = result_type(x, op="round", policy=name)
    if name not in ("numpy",) + _TORCH:
        f = _power_of_ten(abs(d))
        raise PromotionError(name, "round", (describe(x),), f"decimals={d} is NumPy's composition, which this "
                             f"framework computes otherwise", f"Write it out, e.g. gp.rint(x * {f!r}) / {f!r}, or call "
                             f"gp.round under policy='numpy' for NumPy's bits")
    if dtype.kind == "c":
        raise PromotionError(name, "round", (describe(x),), f"decimals={d} of complex values is not supported",
                             "Round gp.real(x) and gp.imag(x) separately")
    kw = {"policy": policy}
    if name in _TORCH:
        return _torch_round(fns, x, d, dtype, out, kw, name)
    if dtype.kind in "biu":
        if d >= 0:
            return fns["round"](x, out=out, **kw)
        if out is not None:
            raise TypeError(f"gp.round: decimals={d} of {dtype.name} into out=: NumPy refuses it too (its division's "
                            f"float64 result cannot be cast into out= under casting='same_kind'); round, then copy")
        f = _power_of_ten(-d)
        wide = fns["true_divide"](fns["astype"](x, "float64", **kw), f, **kw)
        return fns["astype"](fns["multiply"](fns["rint"](wide, **kw), f, **kw), dtype.name, **kw)
    f = _power_of_ten(abs(d))
    first, last = ("multiply", "true_divide") if d >= 0 else ("true_divide", "multiply")
    # NumPy writes each step into out, or an array of x's dtype: a wider step's result (bfloat16 with a
    # Python float is float32 arithmetic) is rounded back to that dtype
    target = D.dtype(out.dtype) if out is not None else dtype

    def stored(r):
        return r if D.dtype(r.dtype) is target else fns["astype"](r, target.name, **kw)
    r = stored(fns[last](fns["rint"](stored(fns[first](x, f, **kw)), **kw), f, **kw))
    return r if out is None else fns["astype"](r, target.name, out=out, **kw)
