"""In-place ops (x += y on gp.Array, out= one of the inputs) under each framework's own rule:
TensorFlow RFC 431's assign_add (the variable keeps its dtype, in every mode), the Array API
(x1 += x2 must not change x1's dtype), PyTorch (the result must pass canCast to self's dtype),
NumPy ('same_kind'), Paddle (x is cast to the promoted dtype first: x takes the result's dtype),
JAX (arrays are immutable: x += y makes a new x). gp.explain names the rule that refused."""
from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import describe
from gpupromote.promotion.resolve import check_store, resolve
from tests.support.grid import parse

_VARIABLES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bfloat16",
              "float16", "float32", "float64", "complex64", "complex128"]
# the argument columns: a tensor of each dtype, then a Python bool, int, float and complex
_ARGUMENTS = {**{gp.dtype(d).code: gp.spec(d) for d in _VARIABLES}, "b*": True, "i*": 1, "f*": 1.5, "c*": 1j}


def _stores_in_place(policy, op, var: gp.DType, arg) -> bool:
    """Whether ``var_array <op>= arg`` is allowed under ``policy`` (resolution, then the in-place rule)."""
    try:
        plan = resolve(policy, op, [describe(gp.spec(var)), describe(arg)])
        check_store(plan, var, inplace=True)
        return True
    except (TypeError, ValueError, OverflowError):
        return False


# --- TensorFlow RFC 431: assign_add after the proposed changes ------------------------------------
#
# RFC 431 (seed 002): "the Variable's dtype cannot change. As a result, any dtype promotion that
# results in a dtype different from the Variable's dtype is disabled", in the NONE, SAFE and ALL
# modes. Rows: the Variable's dtype; columns: the argument, a tensor of each dtype or a Python
# scalar (b* bool, i* int, f* float, c* complex); a cell is the Variable's dtype where assign_add
# is allowed, -- where it is refused. As TensorFlow's kernels have it, a bool Variable takes no
# assign_add (AddV2 has no bool kernel), and a Python bool meets a uint8/16/32 or int8/16 Variable
# only through a converter TensorFlow lacks (convert_to_tensor(True, uint8) raises).

TF_NONE_ASSIGN_ADD = """
        b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8 c16  b*  i*  f*  c*
    b1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
    u1  --  u1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  u1  --  --
    u2  --  --  u2  --  --  --  --  --  --  --  --  --  --  --  --  --  u2  --  --
    u4  --  --  --  u4  --  --  --  --  --  --  --  --  --  --  --  --  u4  --  --
    u8  --  --  --  --  u8  --  --  --  --  --  --  --  --  --  --  u8  u8  --  --
    i1  --  --  --  --  --  i1  --  --  --  --  --  --  --  --  --  --  i1  --  --
    i2  --  --  --  --  --  --  i2  --  --  --  --  --  --  --  --  --  i2  --  --
    i4  --  --  --  --  --  --  --  i4  --  --  --  --  --  --  --  i4  i4  --  --
    i8  --  --  --  --  --  --  --  --  i8  --  --  --  --  --  --  i8  i8  --  --
    bf  --  --  --  --  --  --  --  --  --  bf  --  --  --  --  --  --  bf  bf  --
    f2  --  --  --  --  --  --  --  --  --  --  f2  --  --  --  --  f2  f2  f2  --
    f4  --  --  --  --  --  --  --  --  --  --  --  f4  --  --  --  f4  f4  f4  --
    f8  --  --  --  --  --  --  --  --  --  --  --  --  f8  --  --  f8  f8  f8  --
    c8  --  --  --  --  --  --  --  --  --  --  --  --  --  c8  --  --  c8  c8  c8
   c16  --  --  --  --  --  --  --  --  --  --  --  --  --  -- c16 c16 c16 c16 c16
"""

# SAFE adds the promotions of SAFE mode that end in the Variable's dtype (int32 += int16, ...).
TF_SAFE_ASSIGN_ADD = """
        b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8 c16  b*  i*  f*  c*
    b1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
    u1  u1  u1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  u1  --  --
    u2  u2  u2  u2  --  --  --  --  --  --  --  --  --  --  --  --  --  u2  --  --
    u4  u4  u4  u4  u4  --  --  --  --  --  --  --  --  --  --  --  --  u4  --  --
    u8  u8  u8  u8  u8  u8  --  --  --  --  --  --  --  --  --  --  u8  u8  --  --
    i1  i1  --  --  --  --  i1  --  --  --  --  --  --  --  --  --  --  i1  --  --
    i2  i2  i2  --  --  --  i2  i2  --  --  --  --  --  --  --  --  --  i2  --  --
    i4  i4  i4  i4  --  --  i4  i4  i4  --  --  --  --  --  --  --  i4  i4  --  --
    i8  i8  i8  i8  i8  --  i8  i8  i8  i8  --  --  --  --  --  --  i8  i8  --  --
    bf  bf  bf  --  --  --  bf  --  --  --  bf  --  --  --  --  --  --  bf  bf  --
    f2  f2  f2  --  --  --  f2  --  --  --  --  f2  --  --  --  --  f2  f2  f2  --
    f4  f4  f4  f4  --  --  f4  f4  --  --  f4  f4  f4  --  --  --  f4  f4  f4  --
    f8  f8  f8  f8  f8  --  f8  f8  f8  --  f8  f8  f8  f8  --  --  f8  f8  f8  --
    c8  c8  c8  c8  --  --  c8  c8  --  --  c8  c8  c8  --  c8  --  --  c8  c8  c8
   c16 c16 c16 c16 c16  -- c16 c16 c16  -- c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""

# ALL adds the lossy promotions that still end in the Variable's dtype (bfloat16 += int64, ...).
TF_ALL_ASSIGN_ADD = """
        b1  u1  u2  u4  u8  i1  i2  i4  i8  bf  f2  f4  f8  c8 c16  b*  i*  f*  c*
    b1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --
    u1  u1  u1  --  --  --  --  --  --  --  --  --  --  --  --  --  --  u1  --  --
    u2  u2  u2  u2  --  --  --  --  --  --  --  --  --  --  --  --  --  u2  --  --
    u4  u4  u4  u4  u4  --  --  --  --  --  --  --  --  --  --  --  --  u4  --  --
    u8  u8  u8  u8  u8  u8  --  --  --  --  --  --  --  --  --  --  u8  u8  --  --
    i1  i1  --  --  --  --  i1  --  --  --  --  --  --  --  --  --  --  i1  --  --
    i2  i2  i2  --  --  --  i2  i2  --  --  --  --  --  --  --  --  --  i2  --  --
    i4  i4  i4  i4  --  --  i4  i4  i4  --  --  --  --  --  --  --  i4  i4  --  --
    i8  i8  i8  i8  i8  --  i8  i8  i8  i8  --  --  --  --  --  --  i8  i8  --  --
    bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  --  --  --  --  bf  bf  --
    f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  f2  --  --  --  --  f2  f2  f2  --
    f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  --  f4  f4  f4  --
    f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  --
    c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  --  c8  --  --  c8  c8  c8
   c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""


@pytest.mark.parametrize("policy, table", [("tf-none", TF_NONE_ASSIGN_ADD), ("tf-safe", TF_SAFE_ASSIGN_ADD),
                                           ("tf-all", TF_ALL_ASSIGN_ADD)], ids=["NONE", "SAFE", "ALL"])
def test_tf_assign_add_golden_table(policy, table):
    diffs = []
    for (row, col), want in parse(table).items():
        var = gp.dtype(row)
        got = var.code if _stores_in_place(policy, "add", var, _ARGUMENTS[col]) else "--"
        if got != want:
            diffs.append(f"  {row} += {col}: expected {want}, got {got}")
    assert not diffs, f"policy {policy!r}: {len(diffs)} cells differ\n" + "\n".join(diffs)


@pytest.mark.parametrize("policy", ["tf-none", "tf-safe", "tf-all"])
def test_tf_refuses_the_rfc_examples_in_every_mode(policy):
    # int32 += int64 and float16 += float32 promote (in SAFE and ALL) to another dtype: refused
    for var, arg in [("int32", "int64"), ("float16", "float32")]:
        x = gp.asarray(np.ones(3, gp.dtype(var).numpy))
        with gp.use_policy(policy), pytest.raises(TypeError, match="keeps its target's dtype|refuses"):
            x += np.ones(3, gp.dtype(arg).numpy)
        assert x.dtype == var and np.asarray(x).tolist() == [1, 1, 1]   # untouched


def test_tf_assign_add_that_keeps_the_dtype_runs_and_wraps_like_the_variable():
    x = gp.asarray(np.array([100, 127, -128], np.int8))
    with gp.use_policy("tf-all"):
        x += 300          # a Python int within int32 converts to int8 wrapping (300 -> 44), as TF does
        x += np.ones(3, np.int8)
    assert x.dtype == gp.int8 and np.asarray(x).tolist() == [-111, -84, -83]


# --- The Array API -------------------------------------------------------------------------------

@pytest.mark.parametrize("x1, x2, ok", [
    ("int32", "int64", False),     # would make x1 int64
    ("int64", "int32", True),
    ("float32", "float64", False),
    ("float64", "float32", True),
    ("uint8", "int8", False),      # int16
    ("complex64", "float32", True),
    ("float32", "complex64", False),
], ids=lambda v: str(v))
def test_array_api_in_place_must_not_change_x1s_dtype(x1, x2, ok):
    a = gp.asarray(np.ones(2, np.dtype(x1)))
    with gp.use_policy("array-api"):
        if ok:
            a += np.ones(2, np.dtype(x2))
            assert a.dtype == x1 and np.asarray(a).tolist() == [2, 2]
        else:
            with pytest.raises(TypeError, match=f"result dtype .* cannot be stored into the in-place target dtype {x1}"):
                a += np.ones(2, np.dtype(x2))


def test_array_api_out_into_an_input_is_in_place_too():
    a, b = np.ones(2, np.int32), np.ones(2, np.int64)
    with pytest.raises(TypeError, match="in-place target dtype int32"):
        gp.add(a, b, out=a, policy="array-api")
    gp.add(b, a, out=b, policy="array-api")
    assert b.tolist() == [2, 2]


# --- PyTorch: its test_type_promotion.py in-place tests, translated --------------------------------

def test_torch_inplace():
    # test_inplace: int_tensor.add_(1.5) is refused ("can't be cast to"); int32.add_(int64) stays int32
    int_tensor = gp.asarray(np.ones((4, 4, 4), np.int32))
    with gp.use_policy("torch"):
        with pytest.raises(TypeError, match="canCast"):
            int_tensor += 1.5
        int_tensor += np.ones((4, 4, 4), np.int64)
        int_tensor += 1
        assert np.array_equal(np.asarray(int_tensor), np.full((4, 4, 4), 3)) and int_tensor.dtype == gp.int32
        # bool is a category of its own: uint8 cannot be cast to bool
        bool_tensor = gp.asarray(np.array([1, 1, 1], bool))
        uint8_tensor = gp.asarray(np.array([1, 1, 1], np.uint8))
        with pytest.raises(TypeError, match="canCast"):
            bool_tensor += uint8_tensor
        # demotion from signed to unsigned is allowed, unlike NumPy
        uint8_tensor *= gp.asarray(np.array([1, 1, 1], np.int16))
        assert uint8_tensor.dtype == gp.uint8


def test_torch_alternate_result():
    f = np.array([1, 1, 1, 1], np.float32)
    with pytest.raises(TypeError, match="canCast"):
        gp.add(f, f, out=np.zeros(4, np.int64), policy="torch")
    d = np.zeros(4, np.float64)
    gp.add(f, f, out=d, policy="torch")
    assert d.dtype == np.float64 and d.tolist() == [2, 2, 2, 2]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bool", "uint8", "int8", "int16", "int32", "int64"])
def test_torch_true_divide_inplace(dtype):
    dividend = gp.asarray((np.arange(1, 6) * 7).astype(dtype))
    divisor = (np.arange(1, 6)).astype(dtype)
    with gp.use_policy("torch"):
        if gp.dtype(dtype).kind != "f":
            with pytest.raises(TypeError, match="canCast"):
                dividend /= divisor
            with pytest.raises(TypeError, match="canCast"):
                dividend /= 2
        else:
            expected = np.asarray(dividend) / divisor
            dividend /= divisor
            np.testing.assert_array_equal(np.asarray(dividend), expected.astype(dtype))


_TORCH_MATH = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
               "complex64", "complex128"]


@pytest.mark.oracle
@pytest.mark.parametrize("op, method", [("add", "add_"), ("subtract", "sub_"), ("multiply", "mul_"),
                                        ("true_divide", "div_")])
def test_torch_in_place_agrees_with_torch(op, method):
    # test_type_promotion's sparse tests: "if inplace and not torch.can_cast(common_dtype, dtype1):
    # raises"; checked here on the real torch for every pair of math dtypes, dense
    torch = pytest.importorskip("torch")
    diffs = []
    for a, b in itertools.product(_TORCH_MATH, repeat=2):
        x, y = torch.ones(3, dtype=getattr(torch, a)), torch.ones(3, dtype=getattr(torch, b))
        try:
            getattr(x, method)(y)
            torch_ok = True
        except RuntimeError:
            torch_ok = False
        ours = _stores_in_place("torch", op, gp.dtype(a), gp.spec(b))
        if ours != torch_ok:
            diffs.append(f"  {a}.{method}({b}): torch {'runs' if torch_ok else 'raises'}, gp "
                         f"{'runs' if ours else 'raises'}")
    assert not diffs, "\n".join(diffs)


# --- NumPy: same_kind ----------------------------------------------------------------------------

@pytest.mark.oracle
def test_numpy_in_place_agrees_with_numpy():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64",
             "complex64", "complex128"]
    diffs = []
    for a, b in itertools.product(names, repeat=2):
        x, y = np.ones(3, a), np.ones(3, b)
        try:
            np.add(x, y, out=x)
            numpy_ok = True
        except TypeError:  # UFuncTypeError (same_kind), DTypePromotionError
            numpy_ok = False
        if _stores_in_place("numpy", "add", gp.dtype(a), gp.spec(b)) != numpy_ok:
            diffs.append(f"  np.add({a}, {b}, out=<{a}>): numpy {'runs' if numpy_ok else 'raises'}")
    assert not diffs, "\n".join(diffs)


# --- Paddle: test_tensor_type_promotion.py's *Inplace classes, translated --------------------------
#
# x.add_(y) first casts x to the promoted dtype (PromoteCastInplace), so x ends in the result's
# dtype, whichever of the two is x: each case runs l.op_(r) and r.op_(l) and expects the same dtype.

_PADDLE_FLOATS = [("float16", "float32", "float32"), ("float16", "float64", "float64"),
                  ("float32", "float64", "float64")]
_PADDLE_COMPLEX = [(c, other, c if not (c == "complex64" and other == "float64") else "complex128")
                   for c in ("complex64", "complex128")
                   for other in ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")]
_PADDLE_COMPLEX += [("complex64", "complex128", "complex128")]
_PADDLE_LOGIC_COMPLEX = [(c, other) for c in ("complex64", "complex128")
                         for other in ("bool", "int8", "int16", "int32", "int64", "float16", "float32", "float64")]
_PADDLE_LOGIC_COMPLEX += [("complex64", "complex128")]

PADDLE_INPLACE_CASES = (
    [(m, a, b, want) for m in ("add_", "subtract_", "multiply_", "divide_") for a, b, want in _PADDLE_FLOATS + _PADDLE_COMPLEX]
    + [(m, a, b, want) for m in ("floor_divide_", "mod_") for a, b, want in _PADDLE_FLOATS]
    + [(m, a, b, "bool") for m in ("equal_", "not_equal_", "less_than_", "less_equal_", "greater_than_",
                                   "greater_equal_") for a, b, _ in _PADDLE_FLOATS]
    + [(m, a, b, "bool") for m in ("logical_and_", "logical_or_", "logical_xor_")
       for a, b in [(a, b) for a, b, _ in _PADDLE_FLOATS] + _PADDLE_LOGIC_COMPLEX]
)
_PADDLE_OPS = {"add_": "add", "subtract_": "subtract", "multiply_": "multiply", "divide_": "true_divide",
               "floor_divide_": "floor_divide", "mod_": "remainder", "equal_": "equal", "not_equal_": "not_equal",
               "less_than_": "less", "less_equal_": "less_equal", "greater_than_": "greater",
               "greater_equal_": "greater_equal", "logical_and_": "logical_and", "logical_or_": "logical_or",
               "logical_xor_": "logical_xor"}


@pytest.mark.parametrize("method, ldtype, rdtype, expected", PADDLE_INPLACE_CASES,
                         ids=[f"{m}-{a}-{b}" for m, a, b, _ in PADDLE_INPLACE_CASES])
def test_paddle_inplace_takes_the_result_dtype(method, ldtype, rdtype, expected):
    op = _PADDLE_OPS[method]
    for x, y in ((ldtype, rdtype), (rdtype, ldtype)):
        plan = resolve("paddle", op, [describe(gp.spec(x)), describe(gp.spec(y))])
        check_store(plan, gp.dtype(expected), inplace=True)   # the retyped x holds the result
        assert plan.result == expected, f"{x}.{method}({y}): {plan.result.name}, Paddle {expected}"


_IN_PLACE = {"+=": (operator.iadd, np.add), "-=": (operator.isub, np.subtract), "*=": (operator.imul, np.multiply),
             "/=": (operator.itruediv, np.true_divide)}


@pytest.mark.parametrize("symbol, x, y, expected", [
    ("+=", "float16", "float32", "float32"), ("+=", "float32", "float16", "float32"),
    ("-=", "float32", "float64", "float64"), ("*=", "complex64", "float64", "complex128"),
    ("/=", "float16", "float64", "float64"), ("*=", "complex128", "int32", "complex128"),
])
def test_paddle_in_place_operators_retype_the_gp_array(symbol, x, y, expected):
    a = gp.asarray(np.array([2, 4], x))
    in_place, reference = _IN_PLACE[symbol]
    with gp.use_policy("paddle"):
        a = in_place(a, np.array([1, 2], y))
    want = reference(np.array([2, 4], expected), np.array([1, 2], expected))
    assert a.dtype == expected and np.asarray(a).tolist() == want.tolist()


def test_paddle_in_place_keeps_the_object_and_refuses_a_fixed_out():
    a = gp.asarray(np.array([1, 2], np.float16))
    same = a
    with gp.use_policy("paddle"):
        a += np.ones(2, np.float32)
    assert a is same and a.dtype == gp.float32
    x = np.ones(2, np.float16)
    with pytest.raises(TypeError, match="PromoteCastInplace.*gp.Array"):
        gp.add(x, np.ones(2, np.float32), out=x, policy="paddle")


# --- JAX: immutable arrays -----------------------------------------------------------------------

def test_jax_in_place_operator_rebinds():
    a = gp.asarray(np.array([1, 2], np.int8))
    before = a
    with gp.use_policy("jax"):
        a += 1.5
    assert a is not before and a.dtype == gp.float32 and np.asarray(a).tolist() == [2.5, 3.5]
    assert before.dtype == gp.int8 and np.asarray(before).tolist() == [1, 2]


# --- explain names the in-place rule ---------------------------------------------------------------

@pytest.mark.parametrize("policy, x, y, rule", [
    ("tf-all", "int32", "int64", "keeps its target's dtype"),
    ("array-api", "int32", "int64", "keeps its target's dtype"),
    ("torch", "int32", "float32", "canCast"),
    ("numpy", "int32", "float32", "'same_kind'"),
    ("paddle", "float16", "float32", "PromoteCastInplace"),
])
def test_explain_says_which_in_place_rule_refused(policy, x, y, rule):
    a, b = np.ones(2, x), np.ones(2, y)
    text = gp.explain(a, b, op="add", policy=policy, out=a)
    last_rule, outcome = text.splitlines()[-2:]
    assert "in place" in last_rule and rule in last_rule and "refused" in last_rule
    assert outcome.startswith("  - => TypeError") and rule in outcome
    # the same call fails the same way
    with pytest.raises(TypeError) as info:
        gp.add(a, b, out=a, policy=policy)
    assert str(info.value) in outcome


def test_explain_with_a_separate_out_uses_the_out_rule():
    a, b = np.ones(2, np.int32), np.ones(2, np.int64)
    text = gp.explain(a, b, op="add", policy="tf-all", out=np.zeros(2, np.int32))
    assert "(out)" in text and text.splitlines()[-1] == "  => int64"
