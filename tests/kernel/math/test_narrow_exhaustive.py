"""float16 and bfloat16, exhaustively: for every one of the 65,536 inputs of each format, a unary
function's narrow result (its ``_wide`` value, rounded once by ``gpm_round_<fmt>``) is the exact
value correctly rounded, and so is its float32-based entry point (``gpm_<f>_f16`` / ``_bf16``, what
the kernels call where the library has one): the same bits, NaNs included, held exactly in a float32.
The reference: NumPy's float64 value rounded by an independent rounding
(_reference.round_to_narrow_bits), and mpmath wherever the library differs or the float64 value is
within 2^-45 of a rounding boundary. Binary functions: 10^5 random pairs of narrow values.
"""
import numpy as np
import pytest

from . import _reference as R
from ._accuracy import narrow_check, narrow_entry_bits
from ._harness import host_call, numba_call
from ._inputs import BINARY, SAMPLES, UNARY
from gpupromote.kernel.math import entry_points


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_exhaustive_correctly_rounded(name, fmt):
    bits, x = R.all_values(fmt)
    n, wrong = narrow_check(name, fmt, x)
    assert n == 65536
    assert not wrong, wrong[:10]


ENTRIES = [(name, fmt) for name in UNARY for fmt in ("f16", "bf16") if f"gpm_{name}_{fmt}" in entry_points()]


def test_most_functions_have_float32_based_narrow_entries():
    assert len(ENTRIES) >= 40 and {("exp", "f16"), ("tanh", "bf16"), ("log", "f16")} <= set(ENTRIES)


@pytest.mark.parametrize("name, fmt", ENTRIES, ids=[f"{n}-{f}" for n, f in ENTRIES])
def test_narrow_entry_point_gives_the_double_paths_bits_on_every_input(name, fmt):
    """NaN inputs of float16 aside: the entries give them back quieted (NumPy's bits)."""
    bits, x = R.all_values(fmt)
    with np.errstate(invalid="ignore"):
        x32 = x.astype(np.float32)
    got = numba_call(f"gpm_{name}_{fmt}", x32)
    narrow = got.astype(R.narrow_dtype(fmt))
    assert (narrow.astype(np.float32).view(np.uint32) == got.view(np.uint32)).all(), "not held exactly"
    want = narrow_entry_bits(name, fmt, x)
    bad = np.nonzero(narrow.view(np.uint16) != want)[0]
    assert len(bad) == 0, [(hex(int(bits[i])), hex(int(narrow.view(np.uint16)[i])), hex(int(want[i]))) for i in bad[:5]]


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_random_pairs_correctly_rounded(name, fmt):
    bits, vals = R.all_values(fmt)
    rng = np.random.default_rng(11)
    x = rng.choice(vals, SAMPLES)
    y = rng.choice(vals, SAMPLES)
    if name == "power":   # exponents where powers stay in range more often
        y = np.where(rng.random(SAMPLES) < 0.5, np.round(rng.uniform(-20, 20, SAMPLES)), y)
        y = R.round_to_narrow_bits(y, fmt).view(R.narrow_dtype(fmt)).astype(np.float64)
    n, wrong = narrow_check(name, fmt, x, y)
    assert not wrong, wrong[:10]


@pytest.mark.parametrize("fmt", ["f16", "bf16", "e4m3fn", "e5m2"])
def test_rounding_from_double_is_correct(fmt):
    """gpm_round_<fmt> against an independent rounding: every value of the format, every midpoint
    and its two neighbouring doubles, random doubles over the whole range, both engines."""
    bits, vals = R.all_values(fmt)
    fin = vals[np.isfinite(vals)]
    s = np.unique(np.abs(fin))
    mids = (s[1:] + s[:-1]) / 2
    rng = np.random.default_rng(3)
    x = np.concatenate([fin, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), -mids,
                        rng.standard_normal(SAMPLES) * 10.0 ** rng.integers(-60, 60, SAMPLES),
                        [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1e300, -1e300, 5e-324]])
    want = R.round_to_narrow_bits(x, fmt)
    for call in (numba_call, host_call):
        got = call(f"gpm_round_{fmt}", x)
        bad = np.nonzero(got != want)[0]
        assert len(bad) == 0, [(x[i], hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_ml_dtypes_bfloat16_cast_double_rounds():
    """Why the reference is not ml_dtypes: its float64 -> bfloat16 goes through float32."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.0 + 2.0**-8 + 2.0**-40])      # just above a bfloat16 midpoint, rounds up
    assert R.round_to_narrow_bits(x, "bf16")[0] == 0x3F81
    assert x.astype(ml_dtypes.bfloat16).view(np.uint16)[0] == 0x3F80
    assert numba_call("gpm_round_bf16", x)[0] == 0x3F81
