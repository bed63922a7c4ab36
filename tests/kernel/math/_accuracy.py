"""Measuring the library against the references (used by the tests and by measure.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _reference as R
from ._harness import numba_call


def numpy_reference(name, *args):
    """NumPy's float64 value of the function (math.erf for erf): the fast reference."""
    args = [np.asarray(a, dtype=np.float64) for a in args]
    with np.errstate(all="ignore"):
        if name == "erf":
            return np.vectorize(math.erf, otypes=[np.float64])(args[0])
        return R.NUMPY[name](*args)


@dataclass
class Result:
    max_ulp: float = 0.0
    worst: tuple = ()
    not_correctly_rounded: int = 0
    checked_exactly: int = 0
    inputs: int = 0


def _pick(diff_idx, steps, n_total, rng, most, random_extra):
    order = np.argsort(-steps[diff_idx], kind="stable")
    chosen = diff_idx[order[:most]]
    extra = rng.choice(n_total, min(random_extra, n_total), replace=False)
    return np.unique(np.concatenate([chosen, extra]))


def measure_f64(name, args, ours, most=1000, random_extra=200):
    """ulp error of float64 results: mpmath where they differ from NumPy's (the largest
    differences first) and on a random subsample."""
    ref = numpy_reference(name, *args)
    steps = R.steps_apart(ours, ref)
    diff = np.nonzero(steps > 0)[0]
    rng = np.random.default_rng(7)
    res = Result(inputs=len(ours))
    for i in _pick(diff, steps, len(ours), rng, most, random_extra):
        ex = R.exact(name, *(a[i] for a in args))
        e = R.ulp_error(ours[i], ex, "f64")
        res.checked_exactly += 1
        cr = R.round_exact(ex, "f64")
        if not (cr == float(ours[i]) or (math.isnan(cr) and math.isnan(ours[i]))):
            res.not_correctly_rounded += 1
        if e > res.max_ulp:
            res.max_ulp, res.worst = e, tuple(float(a[i]) for a in args)
    return res


def _near_f32_boundary(y64):
    """Where rounding the float64 reference to float32 could go either way (within 2^-48)."""
    with np.errstate(all="ignore"):
        up = (y64 * (1 + 2.0**-48)).astype(np.float32)
        dn = (y64 * (1 - 2.0**-48)).astype(np.float32)
    return (up != dn) & np.isfinite(y64)


def measure_f32(name, args, ours):
    """float32 results against the correctly rounded value: NumPy's float64 value rounded,
    mpmath where that rounding is in doubt or where the library differs."""
    ref64 = numpy_reference(name, *args)
    with np.errstate(all="ignore"):
        ref32 = ref64.astype(np.float32)
    same = (ours.view(np.uint32) == ref32.view(np.uint32)) | (np.isnan(ours) & np.isnan(ref32))
    doubt = np.nonzero(~same | _near_f32_boundary(ref64))[0]
    res = Result(inputs=len(ours))
    for i in doubt:
        ex = R.exact(name, *(float(a[i]) for a in args))
        cr = R.round_exact(ex, "f32")
        res.checked_exactly += 1
        ok = (np.float32(cr) == ours[i]) or (math.isnan(cr) and math.isnan(ours[i]))
        if not ok:
            res.not_correctly_rounded += 1
            e = R.ulp_error(ours[i], ex, "f32")
            if e > res.max_ulp:
                res.max_ulp, res.worst = e, tuple(float(a[i]) for a in args)
    if res.max_ulp == 0.0:
        res.max_ulp = 0.5   # correctly rounded everywhere: at most half an ulp
    return res


def narrow_check(name, fmt, xs, ys=None):
    """(inputs, wrong): the library's narrow results (wide value, one rounding by the library's
    gpm_round_<fmt>) against the correctly rounded exact value."""
    args = (xs,) if ys is None else (xs, ys)
    wide = numba_call(f"gpm_{name}_wide", *args)
    got = numba_call(f"gpm_round_{fmt}", wide)
    ref64 = numpy_reference(name, *args)
    refb = R.round_to_narrow_bits(ref64, fmt)
    # the reference's own rounding is in doubt near a narrow boundary: mpmath decides there
    with np.errstate(all="ignore"):
        up = R.round_to_narrow_bits(ref64 * (1 + 2.0**-45), fmt)
        dn = R.round_to_narrow_bits(ref64 * (1 - 2.0**-45), fmt)
    # NaN results: any NaN pattern will do (the references' NaN signs differ)
    nan_got = np.isnan(R.all_values(fmt)[1][got.astype(np.int64)])
    agree = (got == refb) | (nan_got & np.isnan(ref64))
    doubt = np.nonzero(~agree | ((up != dn) & np.isfinite(ref64)))[0]
    wrong = []
    for i in doubt:
        ex = R.exact(name, *(float(a[i]) for a in args))
        cr = R.round_exact(ex, fmt)
        crb = R.round_to_narrow_bits(np.array([cr]), fmt)[0]
        ok = bool(nan_got[i]) if math.isnan(cr) else crb == got[i]
        if not ok:
            wrong.append((tuple(float(a[i]) for a in args), int(got[i]), int(crb)))
    return len(xs), wrong


def narrow_entry_bits(name, fmt, x):
    """The bits a float16 / bfloat16 entry point (``gpm_<name>_<fmt>``) must give on the inputs
    ``x`` (float64): the double path's, rounded once by gpm_round_<fmt>, except on a float16 NaN
    input, where the entries give the NaN itself, quieted (narrow32.gpm_quiet_f16: NumPy's
    float16 loops carry it through the float32 function) and the double path its canonical NaN
    with the input's sign."""
    right = numba_call(f"gpm_round_{fmt}", numba_call(f"gpm_{name}_wide", x))
    if fmt != "f16":
        return right
    with np.errstate(invalid="ignore"):
        quiet = x.astype(np.float16).view(np.uint16) | np.uint16(0x0200)   # NumPy keeps the payload
    return np.where(np.isnan(x), quiet, right).astype(right.dtype)
