"""The promotion API beyond one op on two operands: gp.DType against NumPy's dtypes,
promote_types as the policy's own table, n-ary result_type (checked against np.result_type,
jnp.result_type and torch's n-ary promotion), weakly typed specs, explain ending where
result_type ends, and the Array API's refusal of negative shift counts in arrays."""
from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import api
from gpupromote.core import caches
from gpupromote.core.dtypes import ALL
from gpupromote.promotion.policies import get_policy

# --- gp.DType and NumPy ----------------------------------------------------------------------------

NUMPY_DTYPES = [d for d in ALL if d.numpy is not None]


@pytest.mark.parametrize("d", NUMPY_DTYPES, ids=str)
def test_dtype_equals_and_converts_to_its_numpy_dtype(d):
    assert np.dtype(d) == d.numpy and d == d.numpy and d.numpy == d
    assert d == d.numpy.type and d.numpy.type == d          # np.float32, ml_dtypes.bfloat16
    assert d == d.name and hash(d) == hash(d.name)           # names still work, and hash with them
    assert np.zeros(2, dtype=d).dtype == d.numpy
    others = [o for o in NUMPY_DTYPES if o is not d]
    assert all(d != o.numpy and d != o.numpy.type for o in others)


def test_dtype_interop_in_expressions():
    a, b = np.arange(3, dtype=np.int32), np.ones(3, np.float16)
    assert gp.add(a, b).dtype == gp.result_type(a, b)
    assert gp.result_type(a, 5.5, policy="torch") == np.float32
    assert gp.result_type(a, 5.5, policy="torch") == np.dtype("float32")
    assert np.zeros(3, dtype=gp.result_type(a, b)).dtype == np.float64
    assert gp.bfloat16 == ml_dtypes.bfloat16 and gp.float32 != np.float64 and gp.int64 != np.int32
    assert {gp.float32: 1}["float32"] == 1


def test_complex32_says_numpy_has_no_such_dtype():
    for make in (lambda: np.dtype(gp.complex32), lambda: np.zeros(3, dtype=gp.complex32)):
        with pytest.raises(TypeError, match="complex32 has no NumPy dtype"):
            make()
    assert gp.complex32 != np.complex64 and gp.complex32 != np.dtype("complex64") and gp.complex32 == "complex32"


# --- promote_types: the policy's own table -----------------------------------------------------------

@pytest.mark.parametrize("policy", ["array-api", "tf-all", "tf-safe", "tf-none", "numpy", "torch", "jax", "paddle"])
def test_promote_types_is_not_add(policy):
    # add refuses bool + bool under the Array API (numeric only) and TF (AddV2 has no bool kernel);
    # their promotion tables (array-api-strict's result_type, flexible_dtypes.result_type) say bool
    assert gp.promote_types("bool", "bool", policy=policy) is gp.bool_


@pytest.mark.oracle
def test_promote_types_matches_numpy():
    diffs = []
    for a, b in itertools.product(NUMPY_DTYPES, repeat=2):
        want = _outcome(np.promote_types, a.numpy, b.numpy)
        got = _outcome(gp.promote_types, a, b, policy="numpy")
        if got != want:
            diffs.append(f"  {a}, {b}: numpy {want}, gp {got}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.oracle
def test_promote_types_matches_torch():
    torch = pytest.importorskip("torch")
    names = [d.name for d in ALL]
    diffs = []
    for a, b in itertools.product(names, repeat=2):
        want = _outcome(torch.promote_types, getattr(torch, a), getattr(torch, b))
        got = _outcome(gp.promote_types, a, b, policy="torch")
        if got != want:
            diffs.append(f"  {a}, {b}: torch {want}, gp {got}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.oracle
@pytest.mark.parametrize("policy", ["jax", "jax-x64", "jax-strict", "jax-x64-strict"])
def test_promote_types_matches_jax(policy):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    diffs = []
    with jax.enable_x64("x64" in policy), jax.numpy_dtype_promotion("strict" if "strict" in policy else "standard"):
        for a, b in itertools.product(_JAX_DTYPES, repeat=2):
            want = _outcome(jnp.promote_types, a.numpy, b.numpy)
            got = _outcome(gp.promote_types, a, b, policy=policy)
            if got != want:
                diffs.append(f"  {a}, {b}: jax {want}, gp {got}")
    assert not diffs, "\n".join(diffs)


def _outcome(fn, *args, **kwargs):
    """A dtype name (NumPy, JAX, torch or gp dtype), or "refused" for the frameworks' promotion errors."""
    try:
        dtype = fn(*args, **kwargs)
    except (TypeError, ValueError, RuntimeError):   # jax's TypePromotionError is a ValueError
        return "refused"
    if isinstance(dtype, gp.DType):
        return dtype.name
    return str(dtype).replace("torch.", "") if type(dtype).__module__.startswith("torch") else np.dtype(dtype).name


# --- n-ary result_type ------------------------------------------------------------------------------

# Python scalars whose value does not change NumPy's answer (a Python int's can: np.result_type
# takes 300 with int8 while the ops overflow); gp.result_type(op=None) is checked with these.
_SCALARS = [True, 1, 1.5, 1j]


def _numpy_name(operands):
    try:
        return np.result_type(*[o.numpy if isinstance(o, gp.DType) else o for o in operands]).name
    except TypeError:
        return "refused"


def _gp_name(operands, policy, op=None):
    try:
        return gp.result_type(*operands, op=op, policy=policy).name
    except TypeError:
        return "refused"


@pytest.mark.oracle
def test_nary_result_type_matches_numpy():
    # NumPy's own dtypes and Python scalars: every ordered triple and every multiset of four
    items = [d for d in NUMPY_DTYPES if d.numpy.type.__module__ == "numpy"] + _SCALARS
    combos = itertools.chain(itertools.product(items, repeat=3), itertools.combinations_with_replacement(items, 4))
    checked, diffs = _compare_with_numpy(combos)
    assert checked > 10000
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:40])


@pytest.mark.oracle
def test_pairs_with_ml_dtypes_match_numpy():
    # Note: with three or more operands among which bfloat16 or float8, NumPy asks each DType class
    # which others it knows (PyArray_PromoteDTypeSequence), and ml_dtypes' answers make
    # np.result_type depend on the order (docs/deviations.md); pairs are exact
    checked, diffs = _compare_with_numpy(itertools.product(NUMPY_DTYPES + _SCALARS, repeat=2))
    assert checked > 400
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:40])


def _compare_with_numpy(combos):
    checked, diffs = 0, []
    for operands in combos:
        if all(not isinstance(o, gp.DType) for o in operands):
            continue   # NumPy needs at least one dtype for a dtype answer to compare
        checked += 1
        want, got = _numpy_name(operands), _gp_name(operands, "numpy")
        if got != want:
            diffs.append(f"  result_type{tuple(str(o) for o in operands)}: numpy {want}, gp {got}")
    return checked, diffs


def test_numpy_is_not_a_lattice_in_any_order():
    # a left fold of promote_types gives float32; NumPy (and gp) float16 in every order
    for order in itertools.permutations([gp.int8, gp.uint8, gp.float16]):
        assert gp.result_type(*order, op=None, policy="numpy") is gp.float16
        assert gp.result_type(*order, policy="numpy") is gp.float16   # add, three operands
    assert gp.promote_types(gp.promote_types("int8", "uint8"), "float16") is gp.float32


def test_numpy_result_type_does_not_check_python_int_values():
    assert gp.result_type(gp.int8, 300, op=None, policy="numpy") is gp.int8 == np.result_type(np.int8, 300)
    with pytest.raises(OverflowError):
        gp.result_type(gp.int8, 300, op="add", policy="numpy")   # np.add refuses it


_JAX_DTYPES = NUMPY_DTYPES


def _weak_jax(dtype):
    from jax._src.lax import lax as lax_internal
    import jax.numpy as jnp
    return lax_internal._convert_element_type(jnp.zeros(2, dtype.numpy), dtype.numpy, weak_type=True)


@pytest.mark.oracle
@pytest.mark.parametrize("policy", ["jax", "jax-x64", "jax-strict", "jax-x64-strict"])
def test_nary_result_type_matches_jax(policy):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    x64, strict = "x64" in policy, "strict" in policy
    with jax.enable_x64(x64), jax.numpy_dtype_promotion("strict" if strict else "standard"):
        # each operand: a strong dtype, a weakly typed array of a dtype, a Python scalar
        items = ([(d, d.numpy) for d in _JAX_DTYPES]
                 + [(gp.spec(d, weak=True), _weak_jax(d)) for d in _JAX_DTYPES if d.name in ("int8", "uint8",
                    "int32", "float16", "bfloat16", "float32", "complex64", "bool")
                    or (x64 and d.name in ("uint64", "float64"))]   # with x64 off no array is 64-bit
                 + [(s, s) for s in _SCALARS])
        checked, diffs = 0, []
        for combo in itertools.chain(itertools.product(items, repeat=2), itertools.product(items[::2], repeat=3)):
            ours, theirs = zip(*combo)
            try:
                want = jnp.result_type(*theirs).name
            except (TypeError, ValueError):   # TypePromotionError
                want = "refused"
            got = _gp_name(ours, policy)
            checked += 1
            if got != want:
                diffs.append(f"  {tuple(str(o) for o in ours)}: jax {want}, gp {got}")
    assert checked > 3000
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:40])


@pytest.mark.parametrize("policy", ["numpy", "jax", "jax-x64", "jax-strict", "array-api"])
def test_nary_result_type_is_permutation_invariant(policy):
    pol_dtypes = [d for d in NUMPY_DTYPES if d.name in get_policy(policy).dtypes][::2] + [1, 1.5]
    diffs = []
    for combo in itertools.combinations(pol_dtypes, 3):
        if all(not isinstance(o, gp.DType) for o in combo):
            continue
        answers = {_gp_name(order, policy) for order in itertools.permutations(combo)}
        if len(answers) != 1:
            diffs.append(f"  {tuple(str(o) for o in combo)}: {sorted(answers)}")
    assert not diffs, "\n".join(diffs)


_TORCH_CAT_DTYPES = ["bool", "uint8", "uint16", "int8", "int16", "int32", "int64", "float8_e4m3fn", "float16",
                     "bfloat16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.oracle
def test_torch_nary_follows_torch_left_to_right():
    # torch.cat promotes its tensors with at::native::result_type, a left fold: not permutation-invariant
    torch = pytest.importorskip("torch")
    checked, diffs = 0, []
    for combo in itertools.product(_TORCH_CAT_DTYPES, repeat=3):
        try:
            want = str(torch.cat([torch.ones(2, dtype=getattr(torch, d)) for d in combo]).dtype).replace("torch.", "")
        except RuntimeError:
            want = "refused"
        got = _gp_name([gp.spec(d) for d in combo], "torch")
        checked += 1
        if got != want:
            diffs.append(f"  cat{combo}: torch {want}, gp {got}")
    assert checked == len(_TORCH_CAT_DTYPES) ** 3
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:40])
    order_matters = [gp.spec("uint16"), gp.spec("int8"), gp.spec("float32")]
    assert _gp_name(order_matters, "torch") == "refused"
    assert _gp_name(order_matters[::2] + order_matters[1:2], "torch") == "float32"


@pytest.mark.oracle
def test_torch_nary_with_zero_dim_tensors_matches_addcmul():
    # addcmul promotes its three tensors together, 0-d ones by their category
    torch = pytest.importorskip("torch")
    floats = ["float32", "float64"]
    ints = ["int32", "int64"]
    diffs = []
    for a, b, c in itertools.product(floats + ints, repeat=3):
        for zero_dim in itertools.product((False, True), repeat=2):
            t = [torch.ones(2, dtype=getattr(torch, a))] + [torch.ones((), dtype=getattr(torch, d)) if z else
                                                            torch.ones(2, dtype=getattr(torch, d))
                                                            for d, z in zip((b, c), zero_dim)]
            want = str(torch.addcmul(*t).dtype).replace("torch.", "")
            got = _gp_name([gp.spec(a)] + [gp.spec(d, ndim=0 if z else 1) for d, z in zip((b, c), zero_dim)], "torch")
            if got != want:
                diffs.append(f"  addcmul({a}[n], {b}{'[]' if zero_dim[0] else '[n]'}, {c}{'[]' if zero_dim[1] else '[n]'})"
                             f": torch {want}, gp {got}")
    assert not diffs, "\n".join(diffs)


# TensorFlow's flexible_dtypes.result_type folds left through _BINARY_DTYPE_RES_FULL; cases read
# off that table (TF 2.21): u8 with i8 is i16 (ALL), i16 with a weak f32 is a weak f64 (ALL);
# a weak i32 with a weak i64 is a weak i64 (SAFE).
@pytest.mark.parametrize("policy, operands, want", [
    ("tf-all", ("uint8", "int8", 1.5), "float64"),
    ("tf-all", (1.5, "uint8", "int8"), "float64"),
    ("tf-safe", ("uint8", "int8", 1.5), "refused"),
    ("tf-safe", ("int8", "int16", "int32"), "int32"),
    ("tf-none", ("int8", "int16", "int32"), "refused"),
    ("tf-all", (1, ("int64", "weak")), "int64"),
    ("tf-all", (("int64", "weak"), "int8", 1.5), "float64"),
    ("tf-all", (("float64", "weak"), "bfloat16"), "bfloat16"),
])
def test_tf_nary_folds_the_flexible_dtypes_table(policy, operands, want):
    ours = [gp.spec(o[0], weak=True) if isinstance(o, tuple) else gp.spec(o) if isinstance(o, str) else o
            for o in operands]
    assert _gp_name(ours, policy) == want


@pytest.mark.parametrize("policy", ["paddle", "ascend"])
def test_nary_refused_where_the_framework_has_none(policy):
    with pytest.raises(TypeError, match="two operands at a time only"):
        gp.result_type(gp.int8, gp.int16, gp.int32, policy=policy)
    assert gp.result_type(gp.int8, gp.int16, op=None, policy=policy) is gp.int16


def test_result_type_needs_an_operand():
    with pytest.raises(TypeError, match="at least one operand"):
        gp.result_type(op=None)
    assert gp.result_type(gp.int8, op=None) is gp.int8


# --- weak specs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["numpy", "torch", "paddle", "array-api", "ascend"])
def test_weak_spec_refused_where_the_framework_has_no_weak_arrays(policy):
    with pytest.raises(gp.PromotionError, match="has no weakly typed arrays.*weak=True"):
        gp.result_type(gp.spec("int32", weak=True), gp.spec("int8"), policy=policy)


def test_tf_weak_tensors_only_of_their_dtypes():
    with pytest.raises(gp.PromotionError, match="no weakly typed int8 arrays"):
        gp.result_type(gp.spec("int8", weak=True), gp.spec("int8"), policy="tf-all")
    assert gp.result_type(gp.spec("int64", weak=True), gp.spec("int8"), policy="tf-all") is gp.int8
    assert repr(gp.spec("int64", weak=True)) == "gp.spec('int64', ndim=1, weak=True)"


def test_jax_weak_int8_array_meets_a_uint8_array_as_a_python_int_would():
    assert gp.result_type(gp.spec("int8", weak=True), gp.spec("uint8"), policy="jax") is gp.uint8
    assert gp.result_type(gp.spec("int8"), gp.spec("uint8"), policy="jax") is gp.int16
    # all weak: the kind of their strong join, then its default dtype
    assert gp.result_type(gp.spec("int8", weak=True), gp.spec("int8", weak=True), policy="jax") is gp.int32


# --- explain ends where result_type ends --------------------------------------------------------------

_VALUES = [True, 1, -1, 300, 2**40, 2**63, 1.5, 1e300, math.nan, 1 + 2j, 1e300 + 0j, 1e300j]
_ARRAYS = ["bool", "uint8", "int8", "int32", "float16", "bfloat16", "float32", "complex64"]


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


def test_explain_and_result_type_agree_on_the_issue_case():
    operands = (True, gp.spec("complex64"), 1e300 + 0j)
    assert _answer(operands, "where", "torch").startswith("OverflowError")
    assert _explained(operands, "where", "torch") == _answer(operands, "where", "torch")


@pytest.mark.parametrize("policy", gp.policies())
def test_explain_and_result_type_agree(policy):
    diffs, checked = [], 0
    for op in ("add", "true_divide", "floor_divide", "power", "less", "left_shift", "where", None):
        for a in _ARRAYS:
            for other in [*_VALUES, gp.spec("int64", ndim=0), gp.spec("float64")]:
                for operands in ((gp.spec(a), other), (other, gp.spec(a))):
                    if op == "where":
                        operands = (True,) + operands
                    checked += 1
                    want, got = _answer(operands, op, policy), _explained(operands, op, policy)
                    if got != want:
                        diffs.append(f"  {op}{operands}: result_type {want!r}, explain {got!r}")
    assert not diffs, f"{len(diffs)} of {checked} differ\n" + "\n".join(diffs[:30])


# --- the compiled result_type takes op=None ---------------------------------------------------------

def test_compiled_path_answers_op_none_as_python_does():
    if gp.result_type is api._py_result_type:
        pytest.skip("result_type runs in Python")
    caches.clear_all()
    diffs = []
    for policy in gp.policies():
        for a, b in itertools.product(["bool", "int8", "uint64", "float16", "bfloat16", "complex64"], repeat=2):
            for x, y in ((np.zeros(2, gp.dtype(a).numpy), gp.dtype(b)), (gp.spec(a), 1.5), (True, gp.spec(b, ndim=0))):
                want = _py_answer(x, y, policy)
                for _ in range(3):
                    got = _answer((x, y), None, policy)
                    if got != want:
                        diffs.append(f"  {policy} result_type({x!r}, {y!r}): C {got}, Python {want}")
    assert not diffs, "\n".join(diffs[:30])


def _py_answer(x, y, policy):
    try:
        return api._py_result_type(x, y, op=None, policy=policy).name
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


# --- the Array API refuses negative shift counts in arrays ---------------------------------------------

@pytest.mark.parametrize("op", ["left_shift", "right_shift"])
def test_array_api_refuses_a_negative_shift_count_in_an_array(op):
    x, counts = np.arange(4, dtype=np.int32), np.array([1, -1, 2, 0], np.int32)
    with pytest.raises(ValueError, match=rf"{op}\(x1, x2\) is only defined for x2 >= 0"):
        getattr(gp, op)(x, counts, policy="array-api")
    with pytest.raises(ValueError, match="only defined for"):
        getattr(gp, op)(x, -1, policy="array-api")          # a Python int, as before
    fused = gp.fuse(lambda a, b: getattr(gp, op)(a, b) + 1, policy="array-api")
    with pytest.raises(ValueError, match="only defined for x2 >= 0"):
        fused(x, counts)
    ok = np.abs(counts)
    assert getattr(gp, op)(x, ok, policy="array-api").tolist() == getattr(np, op)(x, ok).tolist()
    assert getattr(gp, op)(x, counts, policy="numpy").tolist() == getattr(np, op)(x, counts).tolist()
