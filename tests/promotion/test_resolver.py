"""The resolver's contract, as example strings a user would type, and its properties."""
import asyncio
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gpupromote as gp
from gpupromote.promotion.policies import get_policy


def spec(name, ndim=1):
    return gp.spec(name, ndim=ndim)


# (policy, op, operands, expected result dtype) - the examples and the oracle README's
# surprising behaviours, each a one-liner.
EXAMPLES = [
    ("torch", "add", (spec("int32"), 5.5), "float32"),
    ("torch", "add", (spec("int32"), spec("int64", 0)), "int32"),
    ("torch-f64", "add", (spec("int32"), 5.5), "float64"),
    ("torch", "true_divide", (spec("int64"), spec("int64")), "float32"),
    ("jax", "true_divide", (spec("int64"), spec("int64")), "float32"),
    ("jax-x64", "true_divide", (spec("int32"), spec("int32")), "float32"),
    ("jax-x64", "true_divide", (spec("int64"), spec("int64")), "float64"),
    ("numpy", "true_divide", (spec("int32"), spec("int32")), "float64"),
    ("numpy", "add", (spec("bfloat16"), 1.0001), "float32"),
    ("torch", "add", (spec("bfloat16"), 1.0001), "bfloat16"),
    ("numpy", "add", (spec("float16"), spec("int64")), "float64"),
    ("torch", "add", (spec("float16"), spec("int64")), "float16"),
    ("jax", "add", (spec("float16"), spec("int64")), "float16"),
    ("numpy", "add", (spec("uint64"), spec("int64")), "float64"),
    ("jax-x64", "add", (spec("uint64"), spec("int64")), "float64"),
    ("jax", "add", (spec("uint64"), spec("int64")), "int32"),
    ("numpy", "add", (spec("float8_e4m3fn"), spec("float8_e5m2")), "float32"),
    ("numpy", "add", (spec("int8"), spec("float8_e4m3fn")), "float8_e4m3fn"),
    ("numpy", "add", (spec("int16"), spec("float8_e4m3fn")), "float32"),
    ("jax", "add", (spec("float8_e4m3fn"), spec("int32")), "float8_e4m3fn"),
    ("numpy", "add", (spec("bool"), 1), "int64"),
    ("torch", "add", (spec("bool"), 1), "int64"),
    ("jax", "add", (spec("bool"), 1), "int32"),
    ("numpy", "less", (spec("uint8"), -1), "bool"),
    ("array-api", "add", (spec("int8"), spec("int16", 0)), "int16"),
    ("ascend", "add", (spec("bfloat16"), spec("float16")), "float64"),
    ("numpy", "where", (spec("int8"), spec("uint8"), spec("float16")), "float16"),  # (cond, x, y)
    ("numpy", "arctan2", (spec("int8"), spec("uint8")), "float16"),
    ("numpy", "floor_divide", (spec("bool"), spec("bool")), "int8"),
    ("jax-x64", "power", (spec("bool"), 300), "int32"),             # lax.integer_pow: the base's dtype
    ("jax-x64-strict", "power", (spec("int8"), spec("uint8", 0)), "int8"),
    ("torch", "add", (spec("int8"), 2**63), "int8"),                # a uint64 wrapped number, lower category
    ("torch", "add", (spec("uint8"), 2**40), "uint8"),              # wraps
    ("torch", "logaddexp", (spec("complex64"), spec("bool")), "complex64"),
]


@pytest.mark.parametrize("policy, op, operands, expected", EXAMPLES,
                         ids=[f"{p}:{op}({','.join(map(str, ops))})" for p, op, ops, _ in EXAMPLES])
def test_example(policy, op, operands, expected):
    assert gp.result_type(*operands, op=op, policy=policy) == expected


# (policy, op, operands, exception) - refusals and out-of-range Python ints.
REFUSALS = [
    ("numpy", "add", (np.ones(3, np.int8), 300), OverflowError),
    ("numpy", "add", (spec("uint8"), -1), OverflowError),
    ("array-api", "add", (spec("uint8"), -1), OverflowError),
    ("jax", "add", (spec("int32"), 2**40), OverflowError),
    ("paddle", "add", (spec("int64"), spec("float32")), gp.PromotionError),
    ("torch", "add", (spec("uint16"), spec("int32")), gp.PromotionError),
    ("torch", "add", (spec("float8_e4m3fn"), spec("float16")), gp.PromotionError),
    ("jax", "add", (spec("float8_e4m3fn"), spec("float16")), gp.PromotionError),
    ("jax-strict", "add", (spec("int8"), spec("int16")), gp.PromotionError),
    ("array-api", "add", (spec("int8"), spec("float32")), gp.PromotionError),
    ("array-api", "true_divide", (spec("int8"), spec("int8")), gp.PromotionError),
    ("numpy", "bitwise_and", (spec("float32"), spec("int32")), gp.PromotionError),
    ("torch", "floor_divide", (spec("complex64"), 2), gp.PromotionError),
    ("ascend", "add", (spec("uint16"), spec("bool")), gp.PromotionError),
    ("torch", "add", (spec("bool"), 2**63), gp.PromotionError),     # bool with uint64
    ("torch", "floor_divide", (spec("int32"), 2**40), ZeroDivisionError),  # 2**40 wraps to 0
    ("torch", "power", (spec("int8"), -1), ValueError),
    ("torch", "logaddexp", (spec("int32"), spec("int32")), gp.PromotionError),  # no integer kernel
    ("torch", "subtract", (spec("uint8"), True), gp.PromotionError),
    ("torch", "where", (spec("uint8"), 1e300), OverflowError),      # c10 checks 1e300 -> float32
    ("jax", "logaddexp", (spec("bool"), 2**63), OverflowError),     # before any dtype rule
    ("numpy", "logical_and", (spec("bfloat16"), 2**63), OverflowError),
    ("numpy", "add", (spec("bfloat16"), 2**63), TypeError),         # ml_dtypes: "expected number, got int"
    ("paddle", "power", (spec("int32"), -1), ValueError),           # Paddle's integer pow never returns
    ("paddle", "power", (spec("int32"), 2**40), OverflowError),     # likewise
]


@pytest.mark.parametrize("policy, op, operands, exc", REFUSALS,
                         ids=[f"{p}:{op}({','.join(map(str, ops))})" for p, op, ops, _ in REFUSALS])
def test_refusal(policy, op, operands, exc):
    with pytest.raises(exc):
        gp.result_type(*operands, op=op, policy=policy)


def test_numpy_wraps_nothing_but_where_does():
    assert gp.result_type(spec("uint8"), -1, op="where", policy="numpy") == "uint8"
    with pytest.raises(OverflowError):
        gp.result_type(spec("uint8"), -1, op="add", policy="numpy")


def test_torch_where_checks_range_like_c10():
    assert gp.result_type(spec("uint8"), -1, op="where", policy="torch") == "uint8"
    with pytest.raises(OverflowError):
        gp.result_type(spec("int8"), 300, op="where", policy="torch")


def test_promotion_error_names_policy_op_dtypes_and_a_cast():
    with pytest.raises(gp.PromotionError) as info:
        gp.result_type(spec("int64"), spec("float32"), op="add", policy="paddle")
    msg = str(info.value)
    assert "'paddle'" in msg and "add(" in msg and "int64" in msg and "float32" in msg and "astype" in msg
    assert isinstance(info.value, TypeError)


def test_out_of_range_int_message_says_how_to_fix():
    with pytest.raises(OverflowError, match="300.*int8.*np.asarray"):
        gp.result_type(np.ones(3, np.int8), 300, policy="numpy")


def test_unknown_policy_and_op():
    with pytest.raises(ValueError, match="unknown policy 'pytorch'"):
        gp.result_type(spec("int8"), 1, policy="pytorch")
    with pytest.raises(ValueError, match="unknown op 'plus'"):
        gp.result_type(spec("int8"), 1, op="plus")


def test_promote_types_and_dtype_spellings():
    assert gp.promote_types("float16", "bfloat16", policy="jax") == "float32"
    assert gp.promote_types("f2", "bf", policy="jax") is gp.float32
    assert gp.dtype(np.dtype("int16")) is gp.int16 == "int16"
    assert (gp.bfloat16.code, gp.bfloat16.kind, gp.bfloat16.itemsize) == ("bf", "f", 2)


def test_explain_names_the_rules_that_fired():
    text = gp.explain(spec("uint8"), -1, op="less", policy="numpy")
    assert "NEP 50" in text and "compared exactly" in text and text.rstrip().endswith("=> bool")
    text = gp.explain(spec("int32"), spec("int64", 0), policy="torch")
    assert "categories" in text and "=> int32" in text


def test_policy_scopes_are_per_thread_and_per_task():
    seen = {}

    def worker(name):
        with gp.use_policy(name):
            seen[name] = gp.result_type(spec("int32"), 5.5)

    threads = [threading.Thread(target=worker, args=(p,)) for p in ("torch", "numpy", "jax")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"torch": "float32", "numpy": "float64", "jax": "float32"}

    async def task(name):
        with gp.use_policy(name):
            await asyncio.sleep(0)
            return gp.get_policy_name()

    async def both():
        return await asyncio.gather(task("paddle"), task("tf-all"))

    assert asyncio.run(both()) == ["paddle", "tf-all"]
    assert gp.get_policy_name() == "numpy"


# Properties, only where they hold: lattice policies are commutative and associative; NumPy's
# table is commutative but not associative (int8, uint8, float16).
_LATTICE_POLICIES = ["jax", "jax-x64", "jax-strict", "jax-x64-strict"]
_SYMMETRIC_POLICIES = _LATTICE_POLICIES + ["numpy", "torch", "torch-f64", "array-api", "paddle"]


def _maybe(policy, *names):
    try:
        return gp.result_type(*(spec(n) for n in names), policy=policy)
    except gp.PromotionError:
        return None


_dtype_names = st.sampled_from([d.name for d in gp.core.dtypes.ALL if d.name != "complex32"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_SYMMETRIC_POLICIES), _dtype_names, _dtype_names)
def test_commutative(policy, a, b):
    assert _maybe(policy, a, b) == _maybe(policy, b, a)


_LATTICE_NODES = sorted(get_policy("jax").promote.upper)  # dtypes and the weak nodes i*, f*, c*


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(_LATTICE_POLICIES), st.sampled_from(_LATTICE_NODES), st.sampled_from(_LATTICE_NODES),
       st.sampled_from(_LATTICE_NODES))
def test_associative_on_lattices(policy, a, b, c):
    # on the lattice itself, weak nodes included: (u8 v i1) is the weak f*, and f* v e4 is e4
    join = get_policy(policy).promote.join
    ab, bc = join(a, b), join(b, c)
    left = ab and join(ab, c)
    right = bc and join(a, bc)
    assert left == right


def test_numpy_is_not_a_lattice():
    left = gp.promote_types(gp.promote_types("int8", "uint8"), "float16")
    assert left == "float32"
    assert gp.result_type(spec("int8"), spec("uint8"), spec("float16"), op="where") == "float16"
