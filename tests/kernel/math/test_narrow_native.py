"""The float16 carrier in hardware (kernel/math/_flatten.NATIVE_HELPERS): where the target converts
between float32 and float16 (F16C), the flattened functions and the kernels' instructions write
``round_f16`` (vcvtps2ph, vcvtph2ps) for narrow32.gpm_carrier_f16's arithmetic. The two give the same
bits on every float32 that matters to the rounding: all 1,024 float16 mantissas in every binade from
below float16's subnormals to past its overflow, each with the low 13 bits that decide it (zero, one,
just below, at and just above the tie, all ones) and random ones, both signs; and NumPy's float16
rounding agrees with both."""
import numpy as np
import pytest

from ._harness import numba_call
from gpupromote.kernel.math._flatten import flat_source
from gpupromote.kernel.math.numba_binding import HARDWARE_HALF

pytestmark = pytest.mark.skipif(not HARDWARE_HALF, reason="no float16 conversion in hardware here: the arithmetic runs")


def _rounding_inputs():
    rng = np.random.default_rng(16)
    exponent = np.arange(127 - 30, 127 + 18, dtype=np.uint32)            # 2^-30 .. 2^17
    mantissa = np.arange(1024, dtype=np.uint32) << 13
    low = np.concatenate([[0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF], rng.integers(0, 0x2000, 10)]).astype(np.uint32)
    bits = (exponent[:, None, None] << 23) | mantissa[None, :, None] | low[None, None, :]
    bits = bits.reshape(-1)
    bits = np.concatenate([bits, bits | np.uint32(0x80000000),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x477FE000, 0x477FF000, 0x477FEFFF],
                                    np.uint32)])
    return bits.view(np.float32)


def test_the_hardware_carrier_gives_the_arithmetics_bits():
    y = _rounding_inputs()
    native = numba_call("gpm_carrier_f16", y, flat=True)       # flattened: round_f16
    written = numba_call("gpm_carrier_f16", y, flat=False)     # as written: the arithmetic
    bad = np.nonzero(native.view(np.uint32) != written.view(np.uint32))[0]
    assert bad.size == 0, [(hex(int(y[i:i + 1].view(np.uint32)[0])), native[i], written[i]) for i in bad[:5]]
    with np.errstate(over="ignore"):
        assert (native == y.astype(np.float16).astype(np.float32)).all()
    assert y.size > 700_000


def test_narrow_entries_call_the_hardware_rounding_once():
    carrier_step = str(0x06800000)    # the exponent offset of the arithmetic (flat_source writes decimals)
    text, _ = flat_source("gpm_exp_f16", native=True)
    assert text.count("round_f16(") == 1 and carrier_step not in text
    written, _ = flat_source("gpm_exp_f16")
    assert "round_f16(" not in written and carrier_step in written


def _carried_entries():
    """The float16 entries that round with narrow32.gpm_narrow_f16_carried, as they are written."""
    import ast
    from gpupromote.kernel.math import _library  # noqa: F401 - registers every function
    from gpupromote.kernel.math._cpp_render import function_ast
    from gpupromote.kernel.math._dsl import REGISTRY
    return sorted(n for n in REGISTRY if n.endswith("_f16") and "gpm_narrow_f16_carried(" in ast.unparse(function_ast(n)))


def test_some_entry_lets_x86_carry_a_nan_input():
    assert "gpm_tanh_f16" in _carried_entries()
    native, _ = flat_source("gpm_tanh_f16", native=True)
    written, _ = flat_source("gpm_tanh_f16")
    assert native.count("round_f16_carried(x, ") == 1 and "x != x" not in native   # no NaN test left
    assert "x != x" in written and "round_f16" not in written


@pytest.mark.parametrize("name", _carried_entries())
def test_a_carried_nan_gives_the_selects_bits_on_every_float16_input(name):
    """The native rendering (the rounding of the lean value alone) against the description (a NaN
    input selected, quieted): all 65,536 inputs, the 2,046 NaNs of every sign and payload among them,
    each the input quieted (NumPy's np.tanh of 0x7C01 is 0x7E01)."""
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x = h.view(np.float16).astype(np.float32)
    written = numba_call(name, x, flat=False)
    for native in (numba_call(name, x, flat=True), numba_call(name, x, llvm=True)):   # flattened; the kernels' own
        bad = np.nonzero(native.view(np.uint32) != written.view(np.uint32))[0]
        assert bad.size == 0, [(hex(int(h[i])), hex(int(native.view(np.uint32)[i])),
                                hex(int(written.view(np.uint32)[i]))) for i in bad[:5]]
    nan = np.isnan(x)
    assert nan.sum() == 2046
    assert (native[nan].astype(np.float16).view(np.uint16) == (h[nan] | 0x0200)).all()
