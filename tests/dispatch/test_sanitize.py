"""gp.sanitize on the CPU engine: each class of lossy promotion reported with its fields, the same
values one step inside the edge reported by nothing, eager and fused, results the same bits with
the sanitizer on and off, and no false report on a slice of the differential fuzz
(tests/dispatch/test_fuzz.py: GP_SANITIZE_FUZZ_CASES cases, default 60; 2000 found 76 losses, all true).

Every case compiles one sanitized kernel (the unsanitized one is usually in the warm cache)."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import sanitize as sanitizer
from gpupromote.kernel import lossy

A = np.array
I64_MIN, I32_MIN = -2**63, -2**31


def sanitized(fn, action="warn"):
    """(result, [LossReport]) of ``fn()`` under gp.sanitize; other warnings ignored."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", gp.LossyPromotionWarning)
        with gp.sanitize(action):
            result = fn()
    return result, [w.message.report for w in caught if issubclass(w.category, gp.LossyPromotionWarning)]


def plain(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()


def bits(x):
    x = np.ascontiguousarray(np.asarray(x))
    return x.dtype.str, x.shape, x.view(np.uint8).tobytes()


# (id, policy, op, operands at the edge, the same one step inside it, the report expected at the edge:
#  what, operand, count, index, value)
CASES = [
    ("a-int64-2**53+1-to-float64", "numpy", "add",
     [A([7, -3, 2**53 + 1, -2**53 - 1], np.int64), A([1, 1, 1, 1], np.float32)],
     [A([7, -3, 2**53, -2**53], np.int64), A([1, 1, 1, 1], np.float32)],
     ("inexact_int", 0, 2, 2, 2**53 + 1)),
    ("a-int32-16777217-to-float32", "torch", "add",
     [A([5, 16777217], np.int32), A([0.5, 0.5], np.float32)], [A([5, 16777216], np.int32), A([0.5, 0.5], np.float32)],
     ("inexact_int", 0, 1, 1, 16777217)),
    ("a-int16-257-to-bfloat16", "torch", "add",
     [A([257, 1], np.int16), A([0, 0], ml_dtypes.bfloat16)], [A([256, 1], np.int16), A([0, 0], ml_dtypes.bfloat16)],
     ("inexact_int", 0, 1, 0, 257)),
    ("a-uint8-17-to-float8_e4m3fn", "numpy", "add",
     [A([3, 17, 200], np.uint8), A([0, 0, 0], ml_dtypes.float8_e4m3fn)],
     [A([3, 16, 192], np.uint8), A([0, 0, 0], ml_dtypes.float8_e4m3fn)],
     ("inexact_int", 0, 2, 1, 17)),
    # the largest uint64 below 2**63 that float64 holds exactly: nothing lost
    ("b-uint64-2**63-to-float64", "numpy", "add",
     [A([1, 2**63], np.uint64), A([0, 0], np.int64)], [A([1, 2**63 - 1024], np.uint64), A([0, 0], np.int64)],
     ("uint64_high", 0, 1, 1, 2**63)),
    ("c-1e5-overflows-float16", "jax", "add",
     [A([1, 2], np.float16), 1e5], [A([1, 2], np.float16), 6.5e4], ("float_overflow", 1, 1, None, 1e5)),
    ("c-1e-8-flushes-in-float16", "jax", "add",
     [A([1, 2], np.float16), 1e-8], [A([1, 2], np.float16), 6e-8], ("float_underflow", 1, 1, None, 1e-8)),
    ("d-clip-bound-300-wraps-in-int8", "jax", "clip",
     [A([1, 100], np.int8), 0, 300], [A([1, 100], np.int8), 0, 127], ("clip_bound", 2, 1, None, 300)),
    ("e-int8-127+1", "numpy", "add",
     [A([0, 127, 127], np.int8), A([1, 1, 1], np.int8)], [A([0, 126, 126], np.int8), A([1, 1, 1], np.int8)],
     ("int_wrap", None, 2, 1, (127, 1))),
    ("e-int8-minus-128-minus-1", "torch", "subtract",
     [A([-128, 5], np.int8), A([1, 1], np.int8)], [A([-127, 5], np.int8), A([1, 1], np.int8)],
     ("int_wrap", None, 1, 0, (-128, 1))),
    ("e-int16-256*128", "torch", "multiply",
     [A([3, 256], np.int16), A([2, 128], np.int16)], [A([3, 255], np.int16), A([2, 128], np.int16)],
     ("int_wrap", None, 1, 1, (256, 128))),
    ("e-int64-2**62*2", "numpy", "multiply",
     [A([2**62, 3], np.int64), A([2, 2], np.int64)], [A([2**62 - 1, 3], np.int64), A([2, 2], np.int64)],
     ("int_wrap", None, 1, 0, (2**62, 2))),
    ("e-int64-INT_MIN-minus-1", "numpy", "subtract",
     [A([9, I64_MIN], np.int64), A([1, 1], np.int64)], [A([9, I64_MIN + 1], np.int64), A([1, 1], np.int64)],
     ("int_wrap", None, 1, 1, (I64_MIN, 1))),
    ("e-uint64-max+1", "numpy", "add",
     [A([2**64 - 1], np.uint64), A([1], np.uint64)], [A([2**64 - 2], np.uint64), A([1], np.uint64)],
     ("int_wrap", None, 1, 0, (2**64 - 1, 1))),
    ("e-negative-int32-INT_MIN", "numpy", "negative",
     [A([I32_MIN, 4], np.int32)], [A([I32_MIN + 1, 4], np.int32)], ("int_wrap", None, 1, 0, (I32_MIN,))),
    ("e-abs-int64-INT_MIN", "torch", "absolute",
     [A([-1, I64_MIN], np.int64)], [A([-1, I64_MIN + 1], np.int64)], ("int_wrap", None, 1, 1, (I64_MIN,))),
]


def _call(policy, op, operands):
    return lambda: getattr(gp, op)(*operands, policy=policy)


def _check_report(report, policy, op, operands, expected):
    what, operand, count, index, value = expected
    assert (report.op, report.policy, report.what, report.operand, report.count, report.index) == \
        (op, policy, what, operand, count, index)
    assert report.value == value
    result = gp.result_type(*operands, op=op, policy=policy)
    assert report.result == result.name
    assert report.size == (1 if index is None else np.broadcast(*[o for o in operands if np.ndim(o)]).size)
    shown = gp.explain(*operands, op=op, policy=policy)
    assert report.rule != "?" and all(part in shown for part in report.rule.split("; "))
    assert len(report.operands) == len(operands)


@pytest.mark.parametrize("policy, op, edge, inside, expected",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_each_lossy_class_is_reported_at_the_edge_and_not_inside_it(policy, op, edge, inside, expected):
    got, reports = sanitized(_call(policy, op, edge))
    assert bits(got) == bits(plain(_call(policy, op, edge))), "the sanitizer changed the result"
    assert len(reports) == 1, reports
    _check_report(reports[0], policy, op, edge, expected)
    got, reports = sanitized(_call(policy, op, inside))
    assert bits(got) == bits(plain(_call(policy, op, inside)))
    assert reports == []


def test_action_raise_raises_an_arithmetic_error_with_the_report():
    with gp.sanitize("raise"), pytest.raises(gp.LossyPromotionError, match=r"add\(int8\[n\], int8\[n\]\).*wrapped"):
        gp.add(A([127], np.int8), A([1], np.int8), policy="numpy")
    assert issubclass(gp.LossyPromotionError, ArithmeticError)
    assert issubclass(gp.LossyPromotionWarning, UserWarning)


def test_the_per_call_keyword_and_the_environment_variable(monkeypatch):
    with pytest.warns(gp.LossyPromotionWarning, match="wrapped"):
        gp.add(A([127], np.int8), A([1], np.int8), policy="numpy", sanitize=True)
    with pytest.raises(gp.LossyPromotionError):
        gp.negative(A([-128], np.int8), policy="numpy", sanitize="raise")
    with gp.sanitize("raise"):
        gp.add(A([127], np.int8), A([1], np.int8), policy="numpy", sanitize=False)   # off for this call
    for text, action in [("1", "warn"), ("raise", "raise"), ("0", None), ("", None)]:
        monkeypatch.setenv("GPUPROMOTE_SANITIZE", text)
        assert sanitizer._from_environment() == action


def test_the_environment_variable_sanitizes_a_whole_process():
    code = ("import warnings, numpy as np, gpupromote as gp\n"
            "warnings.simplefilter('error', gp.LossyPromotionWarning)\n"
            "try:\n    gp.add(np.array([127], np.int8), np.array([1], np.int8), policy='numpy')\n"
            "except gp.LossyPromotionWarning as w:\n    print(w.report.what, w.report.index)\n")
    env = dict(os.environ, GPUPROMOTE_SANITIZE="1", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["int_wrap", "0"], out.stderr[-2000:]


def test_the_compiled_dispatcher_declines_while_sanitizing_and_serves_after():
    from gpupromote.dispatch.opfunctions import _fastpath
    if _fastpath is None:
        pytest.skip("no compiled dispatcher")
    a, b = A([127, 1], np.int8), A([1, 1], np.int8)
    plain(lambda: gp.add(a, b, policy="numpy"))
    before = _fastpath.op_stats()
    _, reports = sanitized(lambda: gp.add(a, b, policy="numpy"))
    during = _fastpath.op_stats()
    plain(lambda: gp.add(a, b, policy="numpy"))
    after = _fastpath.op_stats()
    assert len(reports) == 1 and during["declined"] == before["declined"] + 1
    assert after["served"] == during["served"] + 1


def test_in_place_the_count_reads_the_operands_before_the_store():
    x = A([127, 0, 5], np.int8)
    got, reports = sanitized(lambda: gp.add(x, 1, out=x, policy="numpy"))
    assert got is x and x.tolist() == [-128, 1, 6]
    assert [(r.count, r.index, r.value) for r in reports] == [(1, 0, (127, 1))]


def test_a_scalar_kept_as_a_truth_value_is_not_reported():
    _, reports = sanitized(lambda: gp.logical_and(A([0.5, 0.0]), -7, policy="numpy"))
    assert reports == []


def test_a_call_split_over_threads_reports_every_chunk_s_flags():
    x = np.zeros(2_000_000, np.int8)
    x[[1_500_000, -3]] = 127
    before = gp.get_num_threads()
    gp.set_num_threads(2)
    try:
        _, reports = sanitized(lambda: gp.add(x, np.ones_like(x), policy="numpy"))
    finally:
        gp.set_num_threads(before)
    assert [(r.count, r.index) for r in reports] == [(2, 1_500_000)]


def test_an_explicit_astype_is_not_reported():
    _, reports = sanitized(lambda: gp.astype(A([2**53 + 1, 300], np.int64), "float32"))
    assert reports == []


def test_jax_x32_canonicalization_of_64_bit_arrays_is_reported_eager_and_fused():
    edge, inside = A([1, 2**31], np.int64), A([1, 2**31 - 1], np.int64)
    plus_zero = gp.fuse(lambda x: x + 0, policy="jax")
    for fn in (lambda x: gp.add(x, 0, policy="jax"), plus_zero):
        got, reports = sanitized(lambda: fn(edge))
        assert bits(got) == bits(plain(lambda: fn(edge)))
        assert [(r.what, r.operand, r.source, r.target, r.index, r.value, r.became) for r in reports] == \
            [("int_range", 0, "int64", "int32", 1, 2**31, -2**31)]
        assert sanitized(lambda: fn(inside))[1] == []
    edge, inside = A([1.0, 1e300, 1e-300, np.nan], np.float64), A([1.0, 3e38, 1e-45, np.nan], np.float64)
    for fn in (lambda x: gp.add(x, 0.0, policy="jax"), gp.fuse(lambda x: x + 0.0, policy="jax")):
        got, reports = sanitized(lambda: fn(edge))
        assert bits(got) == bits(plain(lambda: fn(edge)))
        assert [(r.what, r.operand, r.index, r.value) for r in reports] == \
            [("float_overflow", 0, 1, 1e300), ("float_underflow", 0, 2, 1e-300)]
        assert sanitized(lambda: fn(inside))[1] == []


def test_a_0_d_uint64_at_2_63_folded_into_float64_is_reported_as_an_element_would_be():
    _, reports = sanitized(lambda: gp.add(A([1.5]), A(2**63, np.uint64), policy="numpy"))
    assert [(r.what, r.operand, r.index, r.value) for r in reports] == [("uint64_high", 1, None, 2**63)]
    assert sanitized(lambda: gp.add(A([1.5]), A(2**63 - 1024, np.uint64), policy="numpy"))[1] == []


def test_a_false_alarm_of_the_kernel_range_test_reports_nothing():
    # 2**60 passes the kernel's |x| > 2**53 test, but float64 holds it exactly: the host's count is 0
    _, reports = sanitized(lambda: gp.add(A([2**60], np.int64), A([0], np.float32), policy="numpy"))
    assert reports == []


# ---------------------------------------------------------------------------------------------
# gp.fuse: one kernel with the checks; a fired flag has the chain rerun eagerly for the report

def _chain(x, y, z):
    return (x + y) * z


FUSED = [
    ("a-int32-to-float32", "torch", [A([1, 16777217, 3], np.int32), A([0.5] * 3, np.float32), A([2] * 3, np.float32)],
     [A([1, 16777216, 3], np.int32), A([0.5] * 3, np.float32), A([2] * 3, np.float32)], ("inexact_int", "add")),
    ("e-int8-wraps-in-the-second-step", "torch", [A([10, 100], np.int8), A([1, 1], np.int8), A([1, 2], np.int8)],
     [A([10, 62], np.int8), A([1, 1], np.int8), A([1, 2], np.int8)], ("int_wrap", "multiply")),
    ("c-scalar-1e5-in-float16", "jax", [A([1, 2], np.float16), 1e5, A([1, 1], np.float16)],
     [A([1, 2], np.float16), 6.5e4, A([1, 1], np.float16)], ("float_overflow", "add")),
]


@pytest.mark.parametrize("policy, edge, inside, expected", [pytest.param(*c[1:], id=c[0]) for c in FUSED])
def test_fused_chains_report_as_the_eager_ops_do(policy, edge, inside, expected):
    fused = gp.fuse(_chain, policy=policy)
    got, reports = sanitized(lambda: fused(*edge))
    assert bits(got) == bits(plain(lambda: fused(*edge))), "the sanitizer changed the result"
    assert [(r.what, r.op) for r in reports] == [expected]
    _, eager_reports = sanitized(lambda: gp.fuse(_chain, policy=policy)._eager(policy, edge, None, None))
    assert [repr(r) for r in reports] == [repr(r) for r in eager_reports]
    checks = [c.what for c in fused._trace_for(policy, list(edge), sanitize=True).kernel.checks]
    assert set(checks) == (set() if expected[0] == "float_overflow" else {expected[0]})   # (a scalar: on the host)
    assert fused.kernel(*edge).checks == ()   # the trace without the sanitizer has none
    got, reports = sanitized(lambda: fused(*inside))
    assert bits(got) == bits(plain(lambda: fused(*inside))) and reports == []


def test_a_fused_function_with_a_reduction_inside_reports_from_its_stages():
    staged = gp.fuse(lambda x, y: gp.sum(x + y) + x * y, policy="numpy")
    args = [A([100, 127], np.int8), A([1, 1], np.int8)]
    got, reports = sanitized(lambda: staged(*args))
    assert bits(got) == bits(plain(lambda: staged(*args)))
    assert [(r.op, r.what, r.index) for r in reports] == [("add", "int_wrap", 1)]


def test_a_fused_chain_raises_after_its_kernel_ran():
    fused = gp.fuse(_chain, policy="torch")
    args = [A([100], np.int8), A([100], np.int8), A([1], np.int8)]
    with gp.sanitize("raise"), pytest.raises(gp.LossyPromotionError) as info:
        fused(*args)
    assert (info.value.report.op, info.value.report.index) == ("add", 0)
    with pytest.raises(gp.LossyPromotionError):
        fused(*args, sanitize="raise")   # the call's own keyword


# ---------------------------------------------------------------------------------------------
# The differential fuzz, sanitized: the same results, and every report a true loss

FUZZ_CASES = int(os.environ.get("GP_SANITIZE_FUZZ_CASES", "60"))


def _exact_in_float(v: int, dtype) -> bool:
    """Whether the integer ``v`` is a value of the float ``dtype`` (its significand and range)."""
    name = gp.dtype(dtype).name
    p = lossy.PRECISION[name]
    largest = float(ml_dtypes.finfo(gp.dtype(dtype).numpy if name[0] != "c" else np.float64).max)
    m = abs(v)
    shift = max(m.bit_length() - p, 0)
    return m <= largest and (m >> shift) << shift == m


def _int_fits(v: int, dtype) -> bool:
    info = np.iinfo(gp.dtype(dtype).numpy)
    return info.min <= v <= info.max


def true_loss(r) -> bool:
    """An independent account of a report's first element: was something lost?"""
    if r.what == "inexact_int":
        return not _exact_in_float(int(r.value), r.target)
    if r.what == "uint64_high":
        return int(r.value) >= 2**63
    if r.what in ("int_range", "clip_bound"):
        return not _int_fits(int(r.value), r.target)
    if r.what == "float_overflow":   # (float8_e4m3fn has no infinity: NaN)
        return math.isfinite(r.value) and not math.isfinite(r.became)
    if r.what == "float_underflow":
        return r.value != 0 and r.became == 0
    if r.what == "int_wrap":
        v = [int(x) for x in r.value]
        exact = {"add": lambda: v[0] + v[1], "subtract": lambda: v[0] - v[1], "multiply": lambda: v[0] * v[1],
                 "square": lambda: v[0] * v[0], "negative": lambda: -v[0], "absolute": lambda: abs(v[0]),
                 "floor_divide": lambda: v[0] // v[1] if v[1] else 0}[r.op]()
        return not _int_fits(exact, r.result)
    return False


def _small(case) -> bool:
    """Values nothing can lose: integers within +-8 (exact in every float, no sum or product of two
    wraps even int8), floats that are 0, +-inf, NaN or within float8's range, no unsigned subtract
    or negative (those wrap below zero)."""
    for a in case.args:
        x = np.asarray(a)
        if x.dtype.kind in "ui" and x.size and (int(x.min()) < -8 or int(x.max()) > 8):
            return False
        if x.dtype.kind == "u" and case.op in ("subtract", "negative"):
            return False
        if x.dtype.kind == "f" and x.ndim == 0:
            v = float(x)
            if math.isfinite(v) and v != 0 and not 2**-6 <= abs(v) <= 448:
                return False
        if x.dtype.kind == "c":
            return False
    return True


def test_a_sanitized_slice_of_the_fuzz_gives_the_same_results_and_only_true_losses():
    from tests.dispatch import test_fuzz as fuzz
    false, checked, clean = [], 0, 0
    for case, _ in zip(fuzz.cases(), range(FUZZ_CASES)):
        try:
            want = ("ok", bits(fuzz._run(gp, case)))
        except Exception as exc:  # noqa: BLE001 - the sanitized call must raise the same
            want = ("raise", type(exc))
        # (collected, not warned: the fuzz's own call ignores every warning)
        with gp.sanitize(), sanitizer.collecting() as kept:
            try:
                got = ("ok", bits(fuzz._run(gp, case)))
            except Exception as exc:  # noqa: BLE001
                got = ("raise", type(exc))
        reports = kept.reports
        assert got == want, f"{case}: sanitized {got[0]}, plain {want[0]}"
        for r in reports:
            checked += 1
            if not true_loss(r):
                false.append(f"{case}\n    {r}")
        if _small(case):
            clean += 1
            assert reports == [], f"{case}: reported on values nothing loses: {reports}"
    assert not false, "reports of nothing lost:\n" + "\n".join(false[:10])
    assert clean > 0 and checked > 0
