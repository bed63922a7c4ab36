"""Special values, as a literal table: input -> expected result, signed zeros included (C99
Annex F; NumPy's semantics for logaddexp). Each row is checked on float64 and, where the input is
a float32 value, on float32 (the expected value rounded to float32), on both engines.
"""
import math

import numpy as np
import pytest

from ._harness import host_call, numba_call

inf = math.inf
nan = math.nan
PI = math.pi
PIO2 = math.pi / 2

UNARY_TABLE = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (inf, inf), (-inf, 0.0), (nan, nan), (1000.0, inf), (-1000.0, 0.0)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (inf, inf), (-inf, -1.0), (nan, nan), (1000.0, inf), (-1000.0, -1.0)],
    "exp2": [(0.0, 1.0), (-0.0, 1.0), (inf, inf), (-inf, 0.0), (nan, nan), (10.0, 1024.0), (-1.0, 0.5),
             (3000.0, inf), (-3000.0, 0.0)],
    "log": [(1.0, 0.0), (0.0, -inf), (-0.0, -inf), (-1.0, nan), (inf, inf), (-inf, nan), (nan, nan)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -inf), (-2.0, nan), (inf, inf), (-inf, nan), (nan, nan)],
    "log2": [(1.0, 0.0), (2.0, 1.0), (0.5, -1.0), (1024.0, 10.0), (0.0, -inf), (-0.0, -inf), (-1.0, nan),
             (inf, inf), (nan, nan)],
    "log10": [(1.0, 0.0), (10.0, 1.0), (100.0, 2.0), (1000.0, 3.0), (0.0, -inf), (-1.0, nan), (inf, inf),
              (nan, nan)],
    "rsqrt": [(0.0, inf), (-0.0, -inf), (inf, 0.0), (-1.0, nan), (4.0, 0.5), (1.0, 1.0), (nan, nan)],
    "cbrt": [(0.0, 0.0), (-0.0, -0.0), (inf, inf), (-inf, -inf), (8.0, 2.0), (-27.0, -3.0), (nan, nan)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (inf, nan), (-inf, nan), (nan, nan)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (inf, nan), (-inf, nan), (nan, nan)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (inf, nan), (-inf, nan), (nan, nan)],
    "arcsin": [(0.0, 0.0), (-0.0, -0.0), (1.0, PIO2), (-1.0, -PIO2), (1.5, nan), (inf, nan), (nan, nan)],
    "arccos": [(1.0, 0.0), (-1.0, PI), (0.0, PIO2), (-0.0, PIO2), (2.0, nan), (-inf, nan), (nan, nan)],
    "arctan": [(0.0, 0.0), (-0.0, -0.0), (inf, PIO2), (-inf, -PIO2), (nan, nan)],
    "sinh": [(0.0, 0.0), (-0.0, -0.0), (inf, inf), (-inf, -inf), (1000.0, inf), (-1000.0, -inf), (nan, nan)],
    "cosh": [(0.0, 1.0), (-0.0, 1.0), (inf, inf), (-inf, inf), (1000.0, inf), (nan, nan)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (inf, 1.0), (-inf, -1.0), (1000.0, 1.0), (-1000.0, -1.0), (nan, nan)],
    "arcsinh": [(0.0, 0.0), (-0.0, -0.0), (inf, inf), (-inf, -inf), (nan, nan)],
    "arccosh": [(1.0, 0.0), (0.5, nan), (0.0, nan), (inf, inf), (-inf, nan), (nan, nan)],
    "arctanh": [(0.0, 0.0), (-0.0, -0.0), (1.0, inf), (-1.0, -inf), (2.0, nan), (inf, nan), (nan, nan)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (inf, 1.0), (-inf, 0.0), (1000.0, 1.0), (-1000.0, 0.0), (nan, nan)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (inf, 1.0), (-inf, -1.0), (10.0, 1.0), (-10.0, -1.0), (nan, nan)],
}

# float64 only (the input or the result is not a float32 matter)
UNARY_TABLE_F64 = {
    "exp2": [(1024.0, inf), (-1074.0, 5e-324), (-1075.0, 0.0), (1023.0, 2.0**1023)],
    "log10": [(1e22, 22.0), (1e-300, -300.0)],
    "log2": [(5e-324, -1074.0), (2.0**1023, 1023.0)],
    "cbrt": [(5e-324 * 2**150, 2.0**-308)],
}
UNARY_TABLE_F32 = {
    "exp2": [(128.0, inf), (-149.0, 1.401298464324817e-45), (-151.0, 0.0)],
    "log2": [(1.401298464324817e-45, -149.0)],
}

BINARY_TABLE = {
    "arctan2": [  # (y, x) -> atan2(y, x)
        ((0.0, 0.0), 0.0), ((-0.0, 0.0), -0.0), ((0.0, -0.0), PI), ((-0.0, -0.0), -PI), ((0.0, -1.0), PI),
        ((-0.0, -1.0), -PI), ((0.0, 1.0), 0.0), ((-0.0, 1.0), -0.0), ((1.0, 0.0), PIO2), ((-1.0, 0.0), -PIO2),
        ((1.0, -0.0), PIO2), ((1.0, -inf), PI), ((-1.0, -inf), -PI), ((1.0, inf), 0.0), ((-1.0, inf), -0.0),
        ((inf, 1.0), PIO2), ((-inf, 1.0), -PIO2), ((inf, -inf), 3 * PI / 4), ((-inf, -inf), -3 * PI / 4),
        ((inf, inf), PI / 4), ((-inf, inf), -PI / 4), ((nan, 1.0), nan), ((1.0, nan), nan), ((1.0, 1.0), PI / 4),
        ((-1.0, -1.0), -3 * PI / 4)],
    "hypot": [((inf, nan), inf), ((nan, inf), inf), ((-inf, nan), inf), ((nan, -inf), inf), ((nan, 1.0), nan),
              ((1.0, nan), nan), ((3.0, 4.0), 5.0), ((0.0, 0.0), 0.0), ((-0.0, -0.0), 0.0), ((0.0, -5.0), 5.0),
              ((-3.0, 0.0), 3.0)],
    "logaddexp": [((inf, inf), inf), ((-inf, -inf), -inf), ((inf, -inf), inf), ((-inf, inf), inf),
                  ((-inf, 1.0), 1.0), ((1.0, -inf), 1.0), ((0.0, 0.0), math.log(2)), ((nan, 1.0), nan),
                  ((1.0, nan), nan), ((inf, nan), nan), ((-inf, 0.0), 0.0)],
    "power": [((nan, 0.0), 1.0), ((nan, -0.0), 1.0), ((1.0, nan), 1.0), ((-1.0, inf), 1.0), ((-1.0, -inf), 1.0),
              ((1.0, inf), 1.0), ((0.0, -1.0), inf), ((-0.0, -1.0), -inf), ((-0.0, -2.0), inf), ((0.0, -inf), inf),
              ((-0.0, -inf), inf), ((0.0, 3.0), 0.0), ((-0.0, 3.0), -0.0), ((-0.0, 2.0), 0.0), ((-0.0, 0.5), 0.0),
              ((0.5, inf), 0.0), ((0.5, -inf), inf), ((2.0, inf), inf), ((2.0, -inf), 0.0), ((-inf, -3.0), -0.0),
              ((-inf, -2.0), 0.0), ((-inf, 3.0), -inf), ((-inf, 2.0), inf), ((-inf, 0.5), inf), ((inf, -1.0), 0.0),
              ((inf, 1.0), inf), ((-2.0, 0.5), nan), ((-2.0, 3.0), -8.0), ((-2.0, -3.0), -0.125), ((2.0, 10.0), 1024.0),
              ((nan, 1.0), nan), ((2.0, nan), nan), ((-8.0, 1.0 / 3.0), nan), ((-1.0, 0.5), nan), ((10.0, 2.0), 100.0),
              ((0.0, 0.0), 1.0), ((inf, 0.0), 1.0), ((-inf, -0.0), 1.0)],
}
BINARY_TABLE_F64 = {
    "hypot": [((1e308, 1e308), 1.4142135623730951e308), ((5e-324, 5e-324), 5e-324 * 1 + 5e-324 * 0)],
    "power": [((2.0, 1024.0), inf), ((2.0, -1074.0), 5e-324), ((2.0, -1075.0), 0.0), ((-2.0, 1025.0), -inf),
              ((-0.5, 1075.0), -0.0)],
}


def _same(got, want, dt):
    got = dt(got)
    want = dt(want)
    if np.isnan(want):
        return bool(np.isnan(got))
    return got.tobytes() == want.tobytes()


def _rows_unary():
    for name, rows in UNARY_TABLE.items():
        for x, want in rows:
            yield name, "f64", x, want
            yield name, "f32", x, want
    for name, rows in UNARY_TABLE_F64.items():
        for x, want in rows:
            yield name, "f64", x, want
    for name, rows in UNARY_TABLE_F32.items():
        for x, want in rows:
            yield name, "f32", x, want


def _rows_binary():
    for name, rows in BINARY_TABLE.items():
        for args, want in rows:
            yield name, "f64", args, want
            yield name, "f32", args, want
    for name, rows in BINARY_TABLE_F64.items():
        for args, want in rows:
            yield name, "f64", args, want


DT = {"f64": np.float64, "f32": np.float32}


@pytest.mark.parametrize("name", sorted(UNARY_TABLE))
def test_unary_special_values(name):
    bad = []
    for fn, suf, x, want in _rows_unary():
        if fn != name:
            continue
        dt = DT[suf]
        xs = np.array([x], dtype=dt)
        for engine, call in (("numba", numba_call), ("g++", host_call)):
            got = call(f"gpm_{name}_{suf}", xs)[0]
            if not _same(got, want, dt):
                bad.append((engine, suf, x, float(got), want))
        if suf == "f32":   # the narrow path agrees (before its one rounding)
            w = numba_call(f"gpm_{name}_wide", xs.astype(np.float64))[0]
            if not _same(np.float32(w), want, dt):
                bad.append(("wide", suf, x, float(w), want))
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(BINARY_TABLE))
def test_binary_special_values(name):
    bad = []
    for fn, suf, (x, y), want in _rows_binary():
        if fn != name:
            continue
        dt = DT[suf]
        xs, ys = np.array([x], dtype=dt), np.array([y], dtype=dt)
        for engine, call in (("numba", numba_call), ("g++", host_call)):
            got = call(f"gpm_{name}_{suf}", xs, ys)[0]
            if not _same(got, want, dt):
                bad.append((engine, suf, (x, y), float(got), want))
        if suf == "f32":
            w = numba_call(f"gpm_{name}_wide", xs.astype(np.float64), ys.astype(np.float64))[0]
            if not _same(np.float32(w), want, dt):
                bad.append(("wide", suf, (x, y), float(w), want))
    assert not bad, bad


NARROW_TABLE = {
    "f16": [(inf, 0x7C00), (-inf, 0xFC00), (nan, 0x7E00), (-nan, 0xFE00), (65504.0, 0x7BFF), (65520.0, 0x7C00),
            (65519.99, 0x7BFF), (2.0**-25, 0x0000), (2.0**-25 * 1.0001, 0x0001), (-0.0, 0x8000), (1e-300, 0x0000),
            (1.0, 0x3C00), (1.0 + 2.0**-11, 0x3C00), (1.0 + 3 * 2.0**-11, 0x3C02), (2.0**-14, 0x0400),
            (2.0**-24, 0x0001), (3 * 2.0**-25, 0x0002), (-1e300, 0xFC00)],
    "bf16": [(inf, 0x7F80), (-inf, 0xFF80), (nan, 0x7FC0), (-nan, 0xFFC0), (1.0, 0x3F80),
             (1.0 + 2.0**-8, 0x3F80), (1.0 + 2.0**-8 + 2.0**-40, 0x3F81), (1.0 + 3 * 2.0**-8, 0x3F82),
             (2.0**-133, 0x0001), (2.0**-134, 0x0000), (2.0**-134 * 1.001, 0x0001), (3.3895313892515355e38, 0x7F7F),
             (3.3961775292304767e38, 0x7F80), (-0.0, 0x8000), (1e-300, 0x0000)],
    "e4m3fn": [(inf, 0x7F), (-inf, 0xFF), (nan, 0x7F), (-nan, 0xFF), (448.0, 0x7E), (464.0, 0x7E),
               (464.00001, 0x7F), (1e300, 0x7F), (1.0, 0x38), (2.0**-9, 0x01), (2.0**-10, 0x00),
               (2.0**-10 * 1.01, 0x01), (-0.0, 0x80), (0.0, 0x00)],
    "e5m2": [(inf, 0x7C), (-inf, 0xFC), (nan, 0x7E), (-nan, 0xFE), (57344.0, 0x7B), (61440.0, 0x7C),
             (61439.99, 0x7B), (1.0, 0x3C), (2.0**-16, 0x01), (2.0**-17, 0x00), (-0.0, 0x80), (1e300, 0x7C)],
}


@pytest.mark.parametrize("fmt", sorted(NARROW_TABLE))
def test_narrow_rounding_special_values(fmt):
    rows = NARROW_TABLE[fmt]
    x = np.array([r[0] for r in rows], dtype=np.float64)
    want = [r[1] for r in rows]
    for call in (numba_call, host_call):
        got = call(f"gpm_round_{fmt}", x)
        assert [int(g) for g in got] == want, [(r[0], hex(int(g)), hex(w)) for r, g, w in zip(rows, got, want) if g != w]


def test_exact_ties_round_to_even():
    """An exact result that falls on a tie of the target format rounds to even: the double-double
    inside must stay exact (power by multiplication; hypot's square root correction)."""
    # float32: 8.849609375^2 = 78.315586090087890625, 25 significant bits
    x = np.array([8.849609375], np.float32)
    got = numba_call("gpm_power_f32", x, np.array([2.0], np.float32))[0]
    assert got == np.float32(78.315586090087890625)
    assert host_call("gpm_power_f32", x, np.array([2.0], np.float32))[0] == got
    # float16: 63^2 = 3969 lies halfway between 3968 and 3970
    w = numba_call("gpm_power_wide", np.array([63.0]), np.array([2.0]))
    assert w[0] == 3969.0
    assert numba_call("gpm_round_f16", w)[0] == np.float16(3968.0).view(np.uint16)
    # hypot: (3 * 2^11 + 1)^2 + 0 has no tie, but 5 * 2^k triples stay exact
    assert numba_call("gpm_hypot_f32", np.array([3e-20], np.float32), np.array([4e-20], np.float32))[0] == \
        np.float32(np.hypot(np.float32(3e-20), np.float32(4e-20)))
