"""float16 read and stored around narrow math helpers and IEEE arithmetic through the plain
hardware conversions (engines/cpu/plain.py): the same bits as the exact ones, NaNs included.

A narrow math helper (gp_exp_f2 ...) gives the format's one quiet NaN for any NaN operand, and an
fadd / fsub / fmul / fdiv quiets a NaN operand itself, so the payload work of the exact widening
(numpy keeps a signalling NaN's payload, vcvtph2ps quiets it) cannot show in their results; those
results are exact in float16 or quiet NaNs, which both roundings narrow alike. Elsewhere (a value
also compared, selected, negated, stored as it is) the exact conversions stay.
"""
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core.ops import op_named
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu.source import source
from gpupromote.kernel.unary import UNARY, narrow_entry
from tests.kernel.math._accuracy import narrow_entry_bits
from tests.kernel.math._harness import numba_call

FUNCTIONS = [real for real, _ in UNARY.values()]
EVERY_FLOAT16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def _library_bits(fn, x):
    """The float16 bits every engine must give: the library's float16 entry point's where it has one
    (a NaN input back, quieted), else gpm_round_f16 of gpm_<fn>_wide (NaN: 0x7E00 and the sign)."""
    with np.errstate(invalid="ignore"):
        if narrow_entry(fn, "f2") is not None:
            return narrow_entry_bits(fn, "f16", x.astype(np.float64))
        return numba_call("gpm_round_f16", numba_call(f"gpm_{fn}_wide", x.astype(np.float64)))


def _code(plan_args, op, policy="torch"):
    return source(plan_for(op, plan_args, policy)).split('Do not edit."""')[1]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_every_float16_input_gives_the_librarys_bits_nans_included(fn):
    code = _code([EVERY_FLOAT16], fn)
    assert "f16_to_f32_plain(" in code and "f32_to_f16_plain(" in code, code
    with np.errstate(all="ignore"):
        got = getattr(gp, fn)(EVERY_FLOAT16, policy="torch")
    bad = np.flatnonzero(got.view(np.uint16) != _library_bits(fn, EVERY_FLOAT16))
    assert bad.size == 0, [(hex(int(EVERY_FLOAT16.view(np.uint16)[i])), hex(int(got.view(np.uint16)[i]))) for i in bad[:5]]


def test_signalling_nans_keep_their_payload_where_the_value_is_stored_as_it_is():
    snan = np.array([0x7C01, 0xFD55, 0x7E00, 0x3C00], np.uint16).view(np.float16)
    for op in ("maximum", "negative", "positive"):
        assert "f16_to_f32_plain(" not in _code([snan, snan][:op_named(op).arity], op), op
    with np.errstate(invalid="ignore"):
        got = gp.maximum(snan, np.float16(0), policy="torch")
    assert got.view(np.uint16).tolist()[:3] == [0x7C01, 0xFD55, 0x7E00]   # torch.maximum gives the NaN as it came
    assert (-snan).view(np.uint16).tolist() == gp.negative(snan).view(np.uint16).tolist()


# every float16 against partners that are signalling and quiet NaNs of both signs, infinities,
# zeros, a subnormal, the largest finite value and ones: in both positions
_PARTNERS = np.array([0x7C01, 0xFD55, 0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x7BFF, 0x3C00, 0xBC00],
                     np.uint16).view(np.float16)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "true_divide"])
def test_float16_arithmetic_reads_and_rounds_plainly_with_numpys_bits(op):
    """numpy's float16 loops widen exactly, compute in float32 and narrow exactly; the plain
    conversions give its bits on every input. Where both operands are NaNs numpy's result is one
    of them, quieted, by an operand order of its compiler's choosing (here the second for add and
    multiply); gpupromote's is one of them, quieted, too."""
    a, b = np.repeat(EVERY_FLOAT16, _PARTNERS.size), np.tile(_PARTNERS, EVERY_FLOAT16.size)
    code = _code([a, b], op)
    assert "f16_to_f32(" not in code and "f32_to_f16(" not in code and "f32_to_f16_plain(" in code, code
    for x, y in ((a, b), (b, a)):
        with np.errstate(all="ignore"):
            got, want = getattr(gp, op)(x, y, policy="torch").view(np.uint16), getattr(np, op)(x, y).view(np.uint16)
        both = np.isnan(x) & np.isnan(y)
        bad = np.flatnonzero((got != want) & ~both)
        assert bad.size == 0, [(hex(int(x.view(np.uint16)[i])), hex(int(y.view(np.uint16)[i])), hex(int(got[i])),
                                hex(int(want[i]))) for i in bad[:5]]
        quiet = np.uint16(0x0200)
        assert np.all((got[both] == x.view(np.uint16)[both] | quiet) | (got[both] == y.view(np.uint16)[both] | quiet))


def test_a_fused_float16_chain_rounds_each_step_plainly_with_the_eager_bits():
    """a * b + a - b: each step rounded to float16 and widened again (the eager calls' values), all
    through the plain conversions; fused equals eager bit for bit on every float16 and NaN."""
    a, b = np.repeat(EVERY_FLOAT16, _PARTNERS.size), np.tile(_PARTNERS, EVERY_FLOAT16.size)
    fused = gp.fuse(lambda a, b: a * b + a - b, policy="numpy")
    kernel_code = source(fused.kernel(a, b)).split('Do not edit."""')[1]
    assert "f16_to_f32(" not in kernel_code and "f32_to_f16(" not in kernel_code, kernel_code
    for x, y in ((a, b), (b, a)):
        with np.errstate(all="ignore"):
            eager = gp.subtract(gp.add(gp.multiply(x, y), x), y, policy="numpy")
            assert fused(x, y).view(np.uint16).tolist() == eager.view(np.uint16).tolist()


def test_a_value_that_feeds_math_and_is_stored_as_it_is_is_read_exactly():
    fused = gp.fuse(lambda x: gp.where(gp.isnan(x), x, gp.exp(x)), policy="torch")
    x = np.array([0x7C01, 0xFD55, 0x3C00, 0xBC00], np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        got = fused(x)
    assert got.view(np.uint16).tolist()[:2] == [0x7C01, 0xFD55]      # the signalling NaNs as they came
    assert got.view(np.uint16).tolist()[2:] == gp.exp(x[2:], policy="torch").view(np.uint16).tolist()


def test_the_plain_store_is_only_for_a_math_helpers_or_an_arithmetic_result():
    x = np.ones(3, np.float16)
    assert "f32_to_f16_plain(" in _code([x, x], "add")
    assert "f32_to_f16_plain(" not in _code([x], "negative")
    assert "f32_to_f16_plain(" not in _code([x, x], "maximum")
    assert op_named("exp").arity == 1


def test_a_float32_sum_of_float16_widens_its_terms_plainly_and_a_nan_term_is_quieted():
    """gp.sum of float16 accumulating in float32 (torch): the combine's fadd quiets a NaN term
    itself, so the terms are widened plainly; one signalling NaN among 10**5 terms gives its
    payload quieted, as the exact widening did (numpy's keeps it signalling in float32; the add
    quiets it). max keeps a value as it came: its terms are read exactly."""
    from gpupromote.dispatch.reduce import reduction_plan
    from gpupromote.engines.cpu.reduce import reduce_source
    from gpupromote.kernel.reduce import reduction_of
    x = np.random.default_rng(5).standard_normal(10**5).astype(np.float16)

    def code(op):
        return reduce_source(reduction_of(reduction_plan(op, gp.dtype("float16"), 1, None, "torch")))
    assert "f16_to_f32_plain(" in code("sum") and "f16_to_f32_plain(" not in code("max")
    for bits in (0x7C01, 0xFD55, 0x7E00):
        y = x.copy()
        y[31337] = np.uint16(bits).view(np.float16)
        got = int(gp.sum(y, policy="torch").view(np.uint16))
        assert got == bits | 0x0200, (hex(bits), hex(got))
        assert int(gp.max(y, policy="torch").view(np.uint16)) == bits


def test_jax_flushes_subnormals_between_plain_conversions():
    """The jax policies flush subnormals (gp_ftz) around each step; a flush passes a NaN as it came,
    so it is looked through: jax's float16 arithmetic reads and rounds plainly too."""
    a, b = np.repeat(EVERY_FLOAT16, _PARTNERS.size), np.tile(_PARTNERS, EVERY_FLOAT16.size)
    code = _code([a, b], "multiply", policy="jax")
    assert "gp_ftz(" in code and "f16_to_f32(" not in code and "f32_to_f16(" not in code, code
    with np.errstate(all="ignore"):
        # (a float16 value or product is never a float32 subnormal: the flush keeps every one)
        got, want = gp.multiply(a, b, policy="jax").view(np.uint16), np.multiply(a, b).view(np.uint16)
    both = np.isnan(a) & np.isnan(b)
    assert np.array_equal(got[~both], want[~both])


def test_a_math_helpers_float16_result_is_not_rounded_again():
    """A narrow math helper's float32 result is a float16 value already (or the format's quiet NaN):
    the round trip an intermediate takes is left out (rounding it let LLVM fold it into the helper's
    double -> float rounding, a soft-float library call: 24 ns an element), the bits the same."""
    import re
    x = EVERY_FLOAT16.reshape(256, 256)
    y = np.flip(x).copy()
    fused = gp.fuse(lambda x, y: gp.where(gp.isnan(x), y, gp.exp(x)) * y, policy="torch")
    code = source(fused.kernel(x, y)).split('Do not edit."""')[1]
    exp_value = re.search(r"(v\d+) = np\.float32\(_gpmi_gpm_exp_f16\(", code).group(1)
    assert f"f32_to_f16({exp_value})" not in code and f"f32_to_f16_plain({exp_value})" not in code, code
    summed = gp.fuse(lambda x: gp.sum(gp.where(gp.isnan(x), 0, gp.exp(x)), axis=-1), policy="torch")
    with np.errstate(all="ignore"), gp.use_policy("torch"):
        want = gp.multiply(gp.where(gp.isnan(x), y, gp.exp(x)), y).view(np.uint16)
        assert fused(x, y).view(np.uint16).tolist() == want.tolist()
        want = gp.sum(gp.where(gp.isnan(x), 0, gp.exp(x)), axis=-1).view(np.uint16)
        for _ in range(3):   # staged, recorded, replayed
            assert summed(x).view(np.uint16).tolist() == want.tolist()


@pytest.mark.parametrize("op", ["astype", "maximum", "negative"])
def test_the_exact_widening_keeps_every_float16_pattern_as_numpy_does(op):
    """Where a value may come out as it went in, the exact widening (vcvtph2ps, and a signalling
    NaN's quiet bit taken off again) gives numpy's float32 for all 65,536 patterns, and narrowing
    gives each pattern back: astype to float32, maximum(x, x), negative (a sign flip)."""
    x = np.tile(EVERY_FLOAT16, 4)
    if op == "astype":
        got, want = gp.astype(x, np.float32).view(np.uint32), x.astype(np.float32).view(np.uint32)
    elif op == "maximum":
        got, want = gp.maximum(x, x, policy="torch").view(np.uint16), x.view(np.uint16)
    else:
        got, want = gp.negative(x).view(np.uint16), x.view(np.uint16) ^ np.uint16(0x8000)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(x.view(np.uint16)[i])), hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]]
