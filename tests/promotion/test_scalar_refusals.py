"""A port that passes here must not fail there (issue 27): where a framework's function refuses a
Python scalar that its operator takes (torch.maximum(t, 2.0): "TypeError: maximum(): argument
'other' (position 2) must be Tensor, not float"; paddle.add(x, 1) where x + 1 runs), the policy
refuses the same call in the same form, everywhere a call is decided: gp.result_type / gp.explain
(form=), the op functions and their compiled fast path, gp.Array's operators, and gp.fuse's trace.

The tables below are the spec, written from the frameworks (torch: the probe of
tools/probe_scalar_refusals.py on torch 2.13.0+cpu; paddle: tests/observed/paddle-default's
"must be Tensor" records), not read from the policies.
"""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core.errors import PromotionError
from gpupromote.promotion.policies import get_policy
from gpupromote.promotion.refusals import ScalarRefusals

_SCALARS = {"bool": True, "int": 2, "float": 2.0, "complex": 2 + 1j}

# torch 2.13 functions: op -> the positions (first, second) where every Python scalar kind is refused.
# Every other binary op's function takes a Python scalar in either place.
TORCH_FUNCTIONS = {
    "maximum": "first second", "minimum": "first second", "fmax": "first second", "fmin": "first second",
    "arctan2": "first second", "hypot": "first second", "logaddexp": "first second", "nextafter": "first second",
    "logical_and": "first second", "logical_or": "first second", "logical_xor": "first second",
    "copysign": "first", "fmod": "first", "equal": "first", "not_equal": "first", "less": "first",
    "less_equal": "first", "greater": "first", "greater_equal": "first",
    "add": "", "subtract": "", "multiply": "", "true_divide": "", "floor_divide": "", "remainder": "",
    "power": "", "bitwise_and": "", "bitwise_or": "", "bitwise_xor": "", "left_shift": "", "right_shift": "",
}
# paddle 3.3.1 (records): (form, op) -> {position: refused Python scalar kinds}
PADDLE = {
    ("function", "add"): {"first": "bool int float complex", "second": "bool int float complex"},
    ("function", "true_divide"): {"first": "bool int float complex", "second": "bool int float complex"},
    ("function", "maximum"): {"first": "bool int float complex", "second": "bool int float complex"},
    ("function", "bitwise_and"): {"first": "bool int float complex", "second": "bool int float complex"},
    ("function", "equal"): {"first": "bool int float complex", "second": ""},
    ("function", "floor_divide"): {"first": "bool int float complex", "second": ""},
    ("function", "remainder"): {"first": "bool int float complex", "second": "complex"},
    ("operator", "bitwise_and"): {"first": "", "second": "bool int float complex"},
    ("operator", "add"): {"first": "", "second": ""},
    ("operator", "equal"): {"first": "", "second": ""},
}
_POSITION = {"first": 0, "second": 1}


def _refused(policy, op, a, b, form):
    try:
        gp.result_type(a, b, op=op, policy=policy, form=form)
    except PromotionError as exc:
        return "must be a tensor" in str(exc)
    except (TypeError, ValueError, ArithmeticError):
        return False   # refused, but by a dtype rule (complex maximum, ...): not this refusal
    return False


def _cases(table):
    for (form, op), positions in table.items():
        for position in ("first", "second"):
            for kind in _SCALARS:
                refused = kind in positions.get(position, "").split()
                yield pytest.param(form, op, position, kind, refused,
                                   id=f"{form}-{op}-{kind}-{position}-{'refused' if refused else 'taken'}")


@pytest.mark.parametrize("form, op, position, kind, refused",
                         list(_cases({("function", op): {p: " ".join(_SCALARS) for p in spec.split()}
                                 for op, spec in TORCH_FUNCTIONS.items()})))
@pytest.mark.parametrize("policy", ["torch", "torch-f64"])
def test_torch_functions_refuse_what_torch_refuses(policy, form, op, position, kind, refused):
    tensor = gp.spec("int32" if op in ("left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor")
                     else "float32")
    args = (_SCALARS[kind], tensor) if position == "first" else (tensor, _SCALARS[kind])
    assert _refused(policy, op, *args, form) is refused


@pytest.mark.parametrize("form, op, position, kind, refused", list(_cases(PADDLE)))
def test_paddle_refuses_what_its_records_show(form, op, position, kind, refused):
    tensor = gp.spec("int32" if op == "bitwise_and" else "float32")
    args = (_SCALARS[kind], tensor) if position == "first" else (tensor, _SCALARS[kind])
    assert _refused("paddle", op, *args, form) is refused


@pytest.mark.parametrize("policy", ["numpy", "jax", "tf-all", "array-api"])
def test_frameworks_without_such_refusals_take_the_scalar_in_every_form(policy):
    for form in ("function", "operator"):
        assert gp.result_type(gp.spec("float32"), 2.0, op="maximum", policy=policy, form=form) == gp.dtype("float32")


def test_a_zero_d_array_or_numpy_scalar_is_never_refused():
    x = gp.spec("float32")
    for zero_d in (gp.spec("float32", ndim=0), np.float32(2.0), np.asarray(2.0)):
        assert gp.result_type(x, zero_d, op="maximum", policy="torch").kind == "f"
        assert gp.result_type(zero_d, x, op="add", policy="paddle", form="function").kind == "f"


def test_the_default_form_is_the_operator_where_python_has_one():
    x = gp.spec("float32")
    assert gp.result_type(x, 1, op="add", policy="paddle") == gp.dtype("float32")          # x + 1
    with pytest.raises(PromotionError):
        gp.result_type(x, 1, op="add", policy="paddle", form="function")                     # paddle.add(x, 1)
    with pytest.raises(PromotionError):
        gp.result_type(x, 2.0, op="maximum", policy="torch")                                 # no operator: torch.maximum
    assert gp.result_type(x, 2.0, op="maximum", policy="torch", form="operator") == gp.dtype("float32")
    with pytest.raises(ValueError, match="form='method': use one of function, operator"):
        gp.result_type(x, 2.0, op="maximum", policy="torch", form="method")


# --- the message: policy, op, dtypes, the framework call that fails and the fix ---------------

def test_torch_message_names_the_call_and_the_fix():
    with pytest.raises(PromotionError) as info:
        gp.result_type(gp.spec("int32"), 2.0, op="maximum", policy="torch")
    assert str(info.value) == (
        "policy 'torch' refuses maximum(int32[n], 2.0 (python float)): torch.maximum(x, 2.0) raises in PyTorch: "
        "its second operand must be a tensor, not a Python float. Pass a tensor: torch.maximum(x, torch.tensor(2.0)); "
        "in gpupromote a 0-d array: gp.maximum(x, np.asarray(2.0, 'float32'))")


def test_torch_message_offers_the_operator_where_there_is_one():
    with pytest.raises(PromotionError) as info:
        gp.result_type(2, gp.spec("int64"), op="equal", policy="torch", form="function")
    assert str(info.value) == (
        "policy 'torch' refuses equal(2 (python int), int64[n]): torch.eq(2, y) raises in PyTorch: its first operand "
        "must be a tensor, not a Python int. Pass a tensor: torch.eq(torch.tensor(2), y); in gpupromote a 0-d array: "
        "gp.equal(np.asarray(2, 'int64'), y); or the operator, which takes it: 2 == y")


def test_paddle_operator_message_wraps_in_the_tensors_dtype_where_the_default_is_refused():
    # x & paddle.to_tensor(1) would meet an int64 tensor, which bitwise_and refuses beside int32
    with pytest.raises(PromotionError) as info:
        gp.result_type(gp.spec("int32"), 1, op="bitwise_and", policy="paddle")
    assert str(info.value) == (
        "policy 'paddle' refuses bitwise_and(int32[n], 1 (python int)): x & 1 raises in PaddlePaddle: its second "
        "operand must be a tensor, not a Python int. Pass a tensor: x & paddle.to_tensor(1, dtype=x.dtype); "
        "in gpupromote a 0-d array: x & np.asarray(1, 'int32')")


def test_the_fixes_a_message_names_are_taken():
    x = np.arange(3, dtype=np.int32)
    assert gp.maximum(x, np.asarray(2.0, "float32"), policy="torch").dtype == np.float32
    with gp.use_policy("paddle"):
        assert (gp.asarray(x) & np.asarray(1, "int32")).dtype == gp.dtype("int32")
    assert gp.result_type(2, gp.spec("int64"), op="equal", policy="torch") == gp.dtype("bool")   # 2 == y


def test_explain_says_what_the_form_refuses():
    text = gp.explain(gp.spec("float32"), 2.0, op="maximum", policy="torch")
    assert "  - function form (torch.maximum): no Python scalar where PyTorch wants a tensor (first: bool, int, " \
           "float, complex; second: bool, int, float, complex)" in text
    assert text.splitlines()[-1].startswith("  - => PromotionError: policy 'torch' refuses maximum(float32[n], 2.0")
    assert gp.explain(gp.spec("float32"), 2.0, op="maximum", policy="torch", form="operator").endswith("=> float32")


def test_a_table_that_misspells_a_form_op_position_or_kind_raises_at_import():
    for table in ({("method", "add"): ("f", {0: "b"})}, {("function", "plus"): ("f", {0: "b"})},
                  {("function", "add"): ("f", {2: "b"})}, {("function", "add"): ("f", {0: "x"})},
                  {("operator", "maximum"): ("f", {0: "b"})}):
        with pytest.raises(ValueError):
            ScalarRefusals(table=table, to_tensor="fw.tensor")


def test_ascend_shares_torchs_function_refusals():
    assert get_policy("ascend").scalar_refusals is get_policy("torch").scalar_refusals


# --- the records: every function refusal observed is scored, in its form, and agreed with -----

@pytest.mark.parametrize("stem", ["torch-f32", "torch-f64", "paddle-default"])
def test_every_observed_refusal_of_a_scalar_is_scored_and_agreed_with(stem):
    from gpupromote.tools import conformance
    path = conformance.repository_records() / f"{stem}.jsonl.gz"
    refusals = [r for r in conformance.records(path, stem, {"binary"}) if r["error"]
                and ("must be Tensor" in r["error"] or "invalid combination of arguments" in r["error"])]
    assert len(refusals) > 5000   # torch 9108, paddle 11168: scored, no longer left out
    misses = [text for ok, text in (conformance.agrees(gp, r, conformance.POLICY_OF[stem]) for r in refusals) if not ok]
    assert not misses, "\n".join(misses[:10])
