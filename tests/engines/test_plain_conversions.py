"""float16 read and stored around narrow math helpers through the plain hardware conversions
(engines/cpu/source.py ``_plain_conversions``): the same bits as the exact ones, NaNs included.

A narrow math helper (gp_exp_f2 ...) gives the format's one quiet NaN for any NaN operand, so the
payload work of the exact widening (numpy keeps a signalling NaN's payload, vcvtph2ps quiets it)
cannot show in its result; its result is exact in float16 or that quiet NaN, which both roundings
narrow alike. Elsewhere (a value also added, compared, stored as it is) the exact conversions stay.
"""
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core.ops import op_named
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu.source import source
from gpupromote.kernel.unary import UNARY
from tests.kernel.math._harness import numba_call

FUNCTIONS = [real for real, _ in UNARY.values()]
EVERY_FLOAT16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def _library_bits(fn, x):
    """gpm_round_f16 of gpm_<fn>_wide: the float16 bits every engine must give (NaN: 0x7E00 and the sign)."""
    with np.errstate(invalid="ignore"):
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
    assert "f16_to_f32_plain(" not in _code([snan, snan], "add")
    with np.errstate(invalid="ignore"):
        got = gp.add(snan, np.float16(0), policy="torch")    # numpy's float16 add keeps a NaN's top bits
        want = snan + np.float16(0)
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


def test_a_value_that_feeds_math_and_is_stored_as_it_is_is_read_exactly():
    fused = gp.fuse(lambda x: gp.where(gp.isnan(x), x, gp.exp(x)), policy="torch")
    x = np.array([0x7C01, 0xFD55, 0x3C00, 0xBC00], np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        got = fused(x)
    assert got.view(np.uint16).tolist()[:2] == [0x7C01, 0xFD55]      # the signalling NaNs as they came
    assert got.view(np.uint16).tolist()[2:] == gp.exp(x[2:], policy="torch").view(np.uint16).tolist()


def test_the_plain_store_is_only_for_a_math_helpers_result():
    x = np.ones(3, np.float16)
    assert "f32_to_f16_plain(" not in _code([x, x], "add")
    assert "f32_to_f16_plain(" not in _code([x], "negative")
    assert op_named("exp").arity == 1
