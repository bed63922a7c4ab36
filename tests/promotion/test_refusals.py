"""A refusal explains itself and says what works (issue 25).

* gp.explain takes no path of its own: for every op (one, two and three operands), every policy,
  arrays, 0-d arrays and Python scalars of every kind - extreme values included (1e300 + 0j beside
  complex64, 2**63, NaN) - explain ends where gp.result_type ends, with the same dtype or the
  same exception and message;
* a refusal's fix hint makes sense: where it names an explicit cast, the policy takes the operands
  so cast (TensorFlow's add of two bools does not suggest ``x.astype('bool')`` on a bool operand), and
  where no cast helps, none is named;
* ``holds`` (which dtype holds every value of another, the hints' notion of a safe cast) agrees
  with NumPy's safe casting where NumPy has both dtypes;
* a PromotionError pickles (a Dask worker sends it back) with its hint.
"""
from __future__ import annotations

import math
import pickle
import re

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import dtypes as D
from gpupromote.core.errors import PromotionError, holds
from gpupromote.core.ops import OPS
from gpupromote.dispatch.api import Spec

_VALUES = [True, -1, 300, 2**63, 2.5, 1e300, math.nan, 1e300 + 0j, 1e-300j]
_ARRAYS = ["bool", "uint8", "int16", "uint64", "float16", "bfloat16", "float32", "complex64"]


def _explained(operands, op, policy):
    last = gp.explain(*operands, op=op, policy=policy).splitlines()[-1]
    if last.startswith("  => "):
        return last[len("  => "):].removesuffix(" (weakly typed)")
    return last[len("  - => "):]


def _answer(operands, op, policy):
    try:
        return gp.result_type(*operands, op=op, policy=policy).name
    except Exception as exc:  # noqa: BLE001 - the exception is the answer compared
        return f"{type(exc).__name__}: {exc}"


def _operand_sets(op):
    arity = OPS[op].arity
    for a in _ARRAYS:
        x, x0 = gp.spec(a), gp.spec(a, ndim=0)
        if arity == 1:
            yield (x,)
            yield (x0,)
            continue
        for other in [*_VALUES, gp.spec("int64", ndim=0), gp.spec("float64"), np.float32(1e30)]:
            pairs = ((x, other), (other, x), (x0, other))
            for pair in pairs:
                if arity == 2:
                    yield pair
                elif op == "where":
                    yield (True,) + pair
                    yield (gp.spec("bool"),) + pair
                else:   # clip(x, lo, hi)
                    yield pair + (other,)


@pytest.mark.parametrize("policy", gp.policies())
def test_explain_ends_where_result_type_ends_for_every_op(policy):
    diffs, checked = [], 0
    for op in OPS:
        if op.startswith("_"):
            continue
        for operands in _operand_sets(op):
            checked += 1
            want, got = _answer(operands, op, policy), _explained(operands, op, policy)
            if got != want:
                diffs.append(f"  {op}{operands}: result_type {want!r}, explain {got!r}")
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:30])


def test_tensorflow_add_of_two_bools_names_a_cast_that_works():
    for policy in ("tf-all", "tf-safe", "tf-none"):
        with pytest.raises(PromotionError) as info:
            gp.result_type(gp.spec("bool"), gp.spec("bool"), op="add", policy=policy)
        text = str(info.value)
        assert "astype('bool')" not in text and "on the bool operand" not in text, text
        (target,) = re.findall(r"x\.astype\('(\w+)'\)", text)
        assert gp.result_type(gp.spec(target), gp.spec(target), op="add", policy=policy)


_SINGLE = re.compile(r"x\.astype\('(\w+)'\) on the (\w+) operand")
_BOTH = re.compile(r"(?:both operands|the operands).*?x\.astype\('(\w+)'\)")
_WIDER = re.compile(r"Cast the array to a wider dtype, e\.g\. x\.astype\('(\w+)'\)")
_SCALAR = re.compile(r"Make the Python scalar an array of dtype (\w+) first")
_ANY = re.compile(r"x\.astype\('(\w+)'\)")   # the rules' own hints ("Cast to float32 first, e.g. ..."): every array


def _applied(operands, hint, op):
    """The operands cast as ``hint`` says, or None when it names no cast."""
    m = _SINGLE.search(hint)
    cond = 1 if op == "where" else 0
    if m:
        target, source = m.groups()
        return [gp.spec(target) if i >= cond and getattr(o, "dtype", None) is D.dtype(source) else o
                for i, o in enumerate(operands)]
    m = _BOTH.search(hint) or _WIDER.search(hint) or _ANY.search(hint)
    if m:
        return [gp.spec(m.group(1)) if i >= cond and isinstance(o, Spec) else o for i, o in enumerate(operands)]
    m = _SCALAR.search(hint)
    if m:
        return [gp.spec(m.group(1)) if type(o) in (bool, int, float, complex) else o for o in operands]
    return None


# Known: PyTorch refusing subtract(bool array, Python bool) names two fixes (cast the array, int(b)),
# and no one cast satisfies it.
_KNOWN = re.compile(r"^  subtract\(gp\.spec\('bool', ndim=1\), True\): 'Cast the array explicitly")


@pytest.mark.parametrize("policy", gp.policies())
def test_every_cast_a_refusal_names_is_one_the_policy_takes(policy):
    bad, named, checked = [], 0, 0
    binary = [name for name, o in OPS.items() if o.arity == 2 and not name.startswith("_")]
    for op in [*binary, "where"]:
        for a in D.ALL:
            for b in [*D.ALL, True, -1, 300, 1e300, 1j]:
                operands = [gp.spec(a.name), gp.spec(b.name) if isinstance(b, D.DType) else b]
                if op == "where":
                    operands = [gp.spec("bool"), *operands]
                try:
                    gp.result_type(*operands, op=op, policy=policy)
                    continue
                except PromotionError as exc:
                    checked += 1
                    hint = exc.hint or ""
                except (TypeError, ValueError, ArithmeticError):
                    continue
                cast = _applied(operands, hint, op)
                if cast is None:
                    assert not re.search(r"astype|array of dtype", hint), f"an unchecked hint: {hint}"
                    continue
                named += 1
                try:
                    gp.result_type(*cast, op=op, policy=policy)
                except (TypeError, ValueError, ArithmeticError) as exc:
                    bad.append(f"  {op}{tuple(operands)}: '{hint}' -> {type(exc).__name__}: {str(exc)[:120]}")
    bad = [b for b in bad if not _KNOWN.search(b)]
    assert not bad, f"{len(bad)} of {named} hints name a cast {policy} refuses too\n" + "\n".join(bad[:20])
    assert checked == 0 or named > 0


def test_holds_agrees_with_numpy_safe_casting():
    plain = [d for d in D.ALL if d.numpy is not None and d.numpy.type.__module__ == "numpy"]
    for t in plain:
        for s in plain:
            if s.name in ("int64", "uint64") and t.name in ("float64", "complex128"):
                assert not holds(t, s) and np.can_cast(s.numpy, t.numpy, "safe")   # NumPy calls it safe; 2**53 + 1 is not exact
                continue
            assert holds(t, s) == np.can_cast(s.numpy, t.numpy, "safe"), (t.name, s.name)
    assert holds(D.dtype("float32"), D.dtype("bfloat16")) and not holds(D.dtype("float16"), D.dtype("bfloat16"))
    assert holds(D.dtype("float16"), D.dtype("float8_e4m3fn")) and holds(D.dtype("bfloat16"), D.dtype("float8_e5m2"))
    assert holds(D.dtype("complex64"), D.dtype("complex32")) and not holds(D.dtype("float64"), D.dtype("complex32"))


def test_a_promotion_error_pickles_with_its_hint():
    with pytest.raises(PromotionError) as info:
        gp.result_type(gp.spec("int8"), gp.spec("uint8"), policy="jax-strict")
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is PromotionError and str(again) == str(info.value) and again.hint == info.value.hint
