"""gp.astype equals NumPy's astype (ml_dtypes' for its types) on x86-64, bit for bit, NaN and
out-of-range floats to integers included (C leaves those undefined: the generated code spells
x86's answer out, engines/cpu/casts.py).

NumPy is asked on a strided view: its contiguous float64 / float32 -> uint32 loop gives another
answer for NaN and out-of-range values in its vectorized body than in its tail (engines/cpu/casts.py
says so); the strided loop gives the tail's, which gpupromote gives everywhere.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import dtypes as D
from tests.support.engine_cases import NAMES, _pairs_and_kinds, cast_values

PAIRS = [(a, b) for a, b, _ in _pairs_and_kinds("astype", "quick")]


def _numpy_astype(x, dst):
    strided = np.repeat(x, 2)[::2]   # NumPy's scalar loop (see the module docstring)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")   # ComplexWarning: the imaginary part is dropped, as documented
        return strided.astype(D.dtype(dst).numpy)


def _bits(a):
    """The bytes of each element, as unsigned integers (a complex number as two)."""
    a = np.ascontiguousarray(a)
    size = a.dtype.itemsize // (2 if a.dtype.kind == "c" else 1)
    return a.view(np.dtype(f"u{size}"))


@pytest.mark.parametrize("src, dst", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_astype_is_numpys(src, dst):
    x = cast_values(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = gp.astype(x, dst)
    want = _numpy_astype(x, dst)
    assert got.dtype == want.dtype
    g, w = _bits(got), _bits(want)
    nan = np.zeros(g.shape, bool)
    if D.dtype(dst).kind in "fc":   # any NaN matches any NaN
        with np.errstate(invalid="ignore"):
            parts = lambda v: v.view(v.real.dtype) if v.dtype.kind == "c" else v   # noqa: E731
            nan = np.isnan(parts(got).astype(np.float64)) & np.isnan(parts(want).astype(np.float64))
    bad = np.flatnonzero((g != w) & ~nan)
    assert not bad.size, (f"astype {src} -> {dst}: {bad.size} of {len(x)} differ, e.g. "
                          + ", ".join(f"{x[i]!r} -> {got[i]!r} (NumPy {want[i]!r})" for i in bad[:5]))


@pytest.mark.parametrize("policy", gp.policies())
def test_the_target_is_the_result_under_every_policy(policy):
    canonical = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}
    x32 = policy in ("jax", "jax-strict")
    for dst in ("int8", "float64", "bool", "bfloat16"):
        try:
            got = gp.result_type(np.zeros(3, np.float32), dst, op="astype", policy=policy)
        except gp.PromotionError as exc:
            assert dst in str(exc) and policy in str(exc) and "has no dtype" in str(exc)
            continue
        assert got.name == (canonical.get(dst, dst) if x32 else dst)


def test_astype_of_every_dtype_to_itself_is_a_copy():
    for name in NAMES:
        x = cast_values(name, 64)
        got = gp.astype(x, name)
        assert got is not x and np.array_equal(_bits(got), _bits(x))


def test_astype_refuses_a_python_scalar_and_an_unknown_dtype():
    with pytest.raises(gp.PromotionError, match=r"astype of a Python float .*gp.asarray\(x\).astype\('int8'\)"):
        gp.astype(3.5, "int8")
    with pytest.raises(TypeError, match="float128|dtype"):
        gp.astype(np.zeros(3), "float128")


def test_method_and_fused_forms_equal_the_function():
    x = cast_values("float32", 200)
    fused = gp.fuse(lambda a: (a * 3.0).astype("int16") + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = gp.add(gp.astype(gp.multiply(x, 3.0), "int16"), 1)
        assert np.array_equal(fused(x), eager)
        assert np.array_equal(np.asarray(gp.asarray(x).astype("uint8")), gp.astype(x, "uint8"))
