"""gp.compare: each step's dtype under every policy, how the values differ, the first divergence,
refusals, the source line of each step, the table and the picture; NumPy, torch and JAX inputs.

The functions compile few kernels (int32 * float, sqrt and sum in float64 and float32, a float16
chain); the differences themselves are checked on hand-made arrays (no kernel)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.tools.compare import Difference, difference

X_INT32 = np.arange(1, 9, dtype=np.int32)
H_FLOAT16 = (np.arange(64, dtype=np.float16) / np.float16(7)).astype(np.float16)


def scaled_root_sum(x):
    y = x * 2.5
    z = gp.sqrt(y)
    return gp.sum(z)


def tenth_of_shifted(x):
    y = x + 1.0
    z = y * 0.1        # PyTorch's CPU multiply keeps the Python float in float32 for a half tensor
    return gp.sum(z)


def clipped_half(x):
    y = gp.clip(x * 2.0, 0.0, 10.0)
    return gp.astype(y, "float16") - 1


def lines_of(fn, count):
    """The line numbers of ``fn``'s first ``count`` body lines."""
    first = fn.__code__.co_firstlineno + 1
    return list(range(first, first + count))


# ---------------------------------------------------------------------------------------------
# the first divergence

def test_int_times_float_diverges_in_dtype_at_the_first_step():
    report = gp.compare(scaled_root_sum, X_INT32, policies=("numpy", "torch", "jax"))
    assert report.first_divergence is report.steps[0]
    assert [s.op for s in report.steps] == ["multiply", "sqrt", "sum"]
    assert [s.dtypes for s in report.steps] == [{"numpy": "float64", "torch": "float32", "jax": "float32"}] * 3
    first = report.steps[0]
    assert not first.differences["torch"].differs   # 2.5 * small ints: exact in float32 too
    root = report.steps[1].differences["torch"]
    assert root.count == 8 and root.ulp_dtype == "float32" and root.max_ulp == 0   # float32's sqrt: correctly rounded
    assert 0 < root.max_abs < 1e-6
    np.testing.assert_array_equal(report.steps[1].values["torch"], np.sqrt(X_INT32.astype(np.float32) * np.float32(2.5)))
    assert report.results["numpy"].dtype == np.float64 and report.results["jax"].dtype == np.float32
    # the steps are gp.fuse's: the fused function computes the same result, bit for bit
    fused = gp.fuse(scaled_root_sum, policy="torch")(X_INT32)
    assert fused.dtype == np.float32 and fused.tobytes() == report.results["torch"].tobytes()


def test_the_table_reads_as_written():
    report = gp.compare(scaled_root_sum, X_INT32, policies=("numpy", "torch", "jax"))
    a, b, c = lines_of(scaled_root_sum, 3)
    assert str(report) == f"""\
gp.compare(scaled_root_sum) under numpy, torch, jax: first divergence at step 0 (multiply, line {a})
   step  op                numpy    torch    jax      torch vs numpy           jax vs numpy             line
>  0     multiply(x, 2.5)  float64  float32  float32  same values              same values              {a}  y = x * 2.5
*  1     sqrt(#0)          float64  float32  float32  1.14e-07 (0 ulp) in 8/8  1.14e-07 (0 ulp) in 8/8  {b}  z = gp.sqrt(y)
*  2     sum(#1)           float64  float32  float32  4.91e-07 (0 ulp)         4.91e-07 (0 ulp)         {c}  return gp.sum(z)
(>: the first divergence; *: a later step that differs)"""


def test_a_later_step_differs_in_values_only():
    report = gp.compare(tenth_of_shifted, H_FLOAT16, policies=("numpy", "torch", "jax"))
    assert [set(s.dtypes.values()) for s in report.steps] == [{"float16"}] * 3
    assert not report.steps[0].diverges
    assert report.first_divergence is report.steps[1]
    torch, jax = report.steps[1].differences["torch"], report.steps[1].differences["jax"]
    assert torch.differs and torch.max_ulp == 1 and torch.ulp_dtype == "float16" and torch.nan_mismatches == 0
    assert not jax.differs   # JAX computes float16 * weak float in float16, as NumPy does


def test_a_refusal_under_one_policy_is_the_divergence_and_stops_its_later_steps():
    report = gp.compare(scaled_root_sum, X_INT32, policies=("numpy", "array-api"))
    step = report.first_divergence
    assert step.index == 0 and step.cell("array-api") == "refused"
    assert isinstance(step.refusals["array-api"], gp.PromotionError)
    assert "refuses multiply(int32[n], 2.5" in str(step.refusals["array-api"])
    assert [s.cell("array-api") for s in report.steps] == ["refused", "-", "-"]
    assert [s.dtypes["numpy"] for s in report.steps] == ["float64"] * 3
    assert report.steps[1].not_run == {"array-api": "#0"} and report.results["array-api"] is None
    text = str(report)
    assert "step 0 refused under array-api: PromotionError: policy 'array-api' refuses" in text


def test_the_reference_policy_refusing_a_python_int_out_of_range():
    # NumPy 2 raises OverflowError for uint8 + 300; PyTorch wraps the value into uint8
    report = gp.compare(lambda x: x + 300, np.arange(4, dtype=np.uint8), policies=("numpy", "torch"))
    step = report.first_divergence
    assert step.index == 0 and isinstance(step.refusals["numpy"], OverflowError)
    assert step.dtypes == {"numpy": None, "torch": "uint8"} and step.differences == {}
    np.testing.assert_array_equal(step.values["torch"], (np.arange(4) + 300) % 256)


def test_no_divergence():
    x = np.linspace(-3, 8, 16, dtype=np.float32)
    report = gp.compare(clipped_half, x, policies=("numpy", "torch", "jax"))
    assert report.first_divergence is None
    assert [s.op for s in report.steps] == ["multiply", "clip", "astype", "subtract"]
    assert report.steps[-1].dtypes == {"numpy": "float16", "torch": "float16", "jax": "float16"}
    assert str(report).splitlines()[0] == "gp.compare(clipped_half) under numpy, torch, jax: no divergence in 4 steps"


# ---------------------------------------------------------------------------------------------
# where each step comes from

def test_each_step_names_its_source_line():
    report = gp.compare(clipped_half, np.ones(3, np.float32), policies=("numpy", "torch"))
    first, second = lines_of(clipped_half, 2)
    assert [s.line for s in report.steps] == [first, first, second, second]
    assert report.steps[0].text == "y = gp.clip(x * 2.0, 0.0, 10.0)"
    assert report.steps[3].text == 'return gp.astype(y, "float16") - 1'
    assert report.steps[0].file == __file__
    assert [s.call for s in report.steps] == ["multiply(x, 2.0)", "clip(#0, 0.0, 10.0)", "astype(#1, float16)",
                                              "subtract(#2, 1)"]


def test_a_fused_function_is_compared_as_its_function():
    fused = gp.fuse(scaled_root_sum)
    report = gp.compare(fused, X_INT32, policies=("numpy", "torch"))
    assert report.steps[0].line == lines_of(scaled_root_sum, 1)[0]


# ---------------------------------------------------------------------------------------------
# torch and JAX arguments: read through DLPack views, compared as NumPy's

@pytest.mark.parametrize("library", ["torch", "jax"])
def test_foreign_arguments_give_the_numpy_report(library):
    lib = pytest.importorskip(library)
    x = (lib.tensor(X_INT32) if library == "torch" else
         __import__("jax.numpy", fromlist=["asarray"]).asarray(X_INT32))
    del lib
    report = gp.compare(scaled_root_sum, x, policies=("numpy", "torch", "jax"))
    expected = gp.compare(scaled_root_sum, X_INT32, policies=("numpy", "torch", "jax"))
    assert str(report) == str(expected)
    for mine, theirs in zip(report.steps, expected.steps):
        for policy in ("numpy", "torch", "jax"):
            np.testing.assert_array_equal(mine.values[policy], theirs.values[policy])
    assert isinstance(report.results["torch"], gp.Array)   # gp's view of the result (a float64 JAX array may not exist)


# ---------------------------------------------------------------------------------------------
# the picture

@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_draws_the_steps(tmp_path, suffix):
    pytest.importorskip("matplotlib")
    report = gp.compare(scaled_root_sum, X_INT32, policies=("numpy", "array-api"))
    path = report.plot(tmp_path / f"steps.{suffix}")
    data = (tmp_path / f"steps.{suffix}").read_bytes()
    assert str(path).endswith(suffix)
    assert data.startswith(b"\x89PNG") if suffix == "png" else ET.fromstring(data).tag.endswith("svg")


# ---------------------------------------------------------------------------------------------
# differences, on hand-made values (no kernel)

F32, F64, F16, I8, I64, U64, C64, C128 = (gp.dtype(n) for n in
                                          ("float32", "float64", "float16", "int8", "int64", "uint64",
                                           "complex64", "complex128"))


def test_ulps_are_counted_in_the_less_precise_dtype():
    a = np.array([1.0, 1.0 + 2.0 ** -52, 3.0], np.float64)
    b = np.array([1.0, np.nextafter(np.float32(1), np.float32(2)), 3.0], np.float32)
    d = difference(a, F64, b, F32)
    # element 1: float64's 1 + 2^-52 rounds to float32's 1.0, one float32 ulp below b
    assert (d.count, d.size, d.max_ulp, d.ulp_dtype) == (1, 3, 1, "float32")
    assert d.max_abs == pytest.approx(2.0 ** -23 - 2.0 ** -52)
    assert str(d) == "1.19e-07 (1 ulp) in 1/3"


def test_nan_against_a_number_is_counted_and_nan_against_nan_is_not():
    a = np.array([np.nan, np.nan, 1.0, -0.0], np.float16)
    b = np.array([np.nan, 2.0, 1.0, 0.0], np.float16)
    d = difference(a, F16, b, F16)
    assert (d.count, d.nan_mismatches, d.max_abs, d.max_ulp) == (1, 1, None, None)
    assert str(d) == "1 NaN in 1/4"


def test_ulps_across_zero_and_between_integers():
    tiny = np.float32(np.finfo(np.float32).smallest_subnormal)
    assert difference(np.array([-tiny]), F32, np.array([tiny]), F32).max_ulp == 2
    d = difference(np.array([100, -128], np.int8), I8, np.array([100, 127]), I64)
    assert (d.count, d.max_abs, d.max_ulp, d.ulp_dtype) == (1, 255.0, 255, None)
    assert str(d) == "255 in 1/2"   # integers: the difference is the count of units
    big = difference(np.array([2 ** 64 - 1], np.uint64), U64, np.array([-1], np.int64), I64)
    assert big.max_ulp == 2 ** 64


def test_complex_parts_and_shapes():
    a = np.array([1 + 1j], np.complex128)
    b = np.array([1 + np.complex64(1j) * np.float32(1 + 2 ** -23)], np.complex64)
    assert difference(a, C128, b, C64).max_ulp == 1
    assert str(difference(np.ones(3), F64, np.ones(4), F64)) == "shapes (3,) vs (4,)"
    assert not Difference(size=3).differs


def test_an_error_of_the_function_itself_is_raised_not_reported():
    with pytest.raises(ValueError, match="could not be broadcast"):
        gp.compare(lambda x: x + np.ones(4, np.float32), np.ones(3, np.float32), policies=("numpy", "torch"))


def test_numpy_functions_methods_and_reduction_keywords_are_steps():
    def rows(x):
        return gp.sum(np.exp(x).astype("float16"), axis=0, keepdims=True)
    report = gp.compare(rows, np.zeros((2, 3), np.float32), policies=("numpy", "torch"))
    assert [s.call for s in report.steps] == ["exp(x)", "astype(#0, float16)", "sum(#1, axis=0, keepdims=True)"]
    assert report.first_divergence is None
    np.testing.assert_array_equal(report.results["torch"], np.full((1, 3), 2, np.float16))


def test_a_value_beyond_the_less_precise_dtype_rounds_to_its_infinity():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no overflow warning from the comparison's own casts
        d = difference(np.array([1e300, 2.0]), F64, np.array([np.inf, 2.0], np.float32), F32)
    assert (d.count, d.max_abs, d.max_ulp, d.nan_mismatches) == (1, np.inf, 0, 0)
