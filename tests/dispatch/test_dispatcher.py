"""The compiled dispatcher (gpupromote/dispatch/fastpath/ops.c: gp.<op> as a C callable) against the Python op
function behind it (``gp.<op>.__wrapped__``, the path GPUPROMOTE_PURE_PYTHON=1 runs alone).

For every call, both get fresh copies of the same arguments and must give the same outcome: the
same result (type, dtype, shape, bits; ``out`` itself when out= is given) and the same contents of
every array afterwards (out= may alias an input), or the same exception with the same message;
and the same warnings, in the same order. The compiled side is called twice, so that both its
miss (the entry is made) and its hit (the entry is reused) are held to it.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support.compiled import assert_all_served
from tests.support import tier
from gpupromote.dispatch import opfunctions
from tests.support.refcounts import assert_no_reference_leaked_or_dropped

_fastpath = pytest.importorskip("gpupromote.dispatch._fastpath", reason="the C extension was not built (no C compiler?)")
pytestmark = pytest.mark.skipif(opfunctions._fastpath is None,
                                reason="GPUPROMOTE_PURE_PYTHON is set: the ops run in Python")


def _snapshot(x):
    if isinstance(x, np.ndarray):
        return ("array", str(x.dtype), x.shape, x.tobytes())
    return repr(x)


def _run(fn, make):
    """fn(*args, **kwargs) on fresh arguments from ``make()``: (outcome, arguments after, warnings)."""
    args, kwargs = make()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kwargs)
            outcome = (type(r).__name__, _snapshot(r), r is kwargs.get("out", object()))
        except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
            outcome = ("raises", type(exc).__name__, str(exc))
    after = [_snapshot(x) for x in (*args, kwargs.get("out"))]
    return outcome, after, [f"{w.category.__name__}: {w.message}" for w in seen]


def _differences(op, cases):
    """The cases whose compiled and Python outcomes differ, described."""
    compiled = getattr(gp, op)
    python = compiled.__wrapped__
    diffs = []
    for label, make in cases:
        want = _run(python, make)
        for attempt in ("miss", "hit"):
            got = _run(compiled, make)
            if got != want:
                diffs.append(f"{op}{label} [{attempt}]:\n    C      {got}\n    Python {want}")
    return diffs


def _array(dtype, n=5, seed=0):
    rng = np.random.default_rng(seed)
    d = gp.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if d.kind in "ui":
        info = np.iinfo(d.numpy)
        return rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(d.numpy)
    raw = rng.standard_normal(n) * 10
    raw[0] = 0.0
    return (raw + 1j * rng.standard_normal(n)).astype(d.numpy) if d.kind == "c" else raw.astype(d.numpy)


def _fresh(value):
    return value.copy() if isinstance(value, np.ndarray) else value


DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "bfloat16", "float32",
          "float64", "complex64"]
SCALARS = [True, False, 0, 1, -1, 3, 127, 128, 255, -129, 300, 70000, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -2**63,
           2**64, 0.0, -0.0, 1.5, 1e-8, 65520.0, 3.5e38, 1e300, float("nan"), float("-inf"), 1 + 2j, complex(1e300, 1)]
# add over every dtype; the ops whose fast path has rules of its own (an int divisor's or
# exponent's sign, exact comparisons, shifts, logical and float-only ops) over fewer, for CI time:
# each case compiles a kernel for each side.
OPS = {"add": DTYPES, "floor_divide": ["int8", "uint64", "int32", "float16", "float64"],
       "power": ["int8", "uint8", "int64", "float32"], "less": ["uint8", "int64", "uint64", "bfloat16", "float32"],
       "left_shift": ["bool", "int8", "uint32", "int64"], "logical_and": ["bool", "int8", "float16"],
       "copysign": ["int16", "float16", "float32"], "true_divide": ["int8", "float32"]}


def _scalar_cases(op, dtypes):
    cases = []
    for dtype in dtypes:
        for s in SCALARS:
            a = _array(dtype)
            cases.append((f"({dtype}[5], {s!r})", lambda a=a, s=s: ((_fresh(a), s), {"policy": _policy})))
            cases.append((f"({s!r}, {dtype}[5])", lambda a=a, s=s: ((s, _fresh(a)), {"policy": _policy})))
    return cases


def _array_cases(op, dtypes):
    cases = []
    for da in dtypes:
        for db in DTYPES[::3]:
            a, b = _array(da, seed=1), _array(db, seed=2)
            cases.append((f"({da}[5], {db}[5])", lambda a=a, b=b: ((_fresh(a), _fresh(b)), {"policy": _policy})))
    return cases


_policy = "numpy"


@pytest.mark.parametrize("policy", gp.policies())
def test_every_op_and_operand_kind_gives_the_python_outcome(policy):
    global _policy
    _policy = policy
    diffs = []
    # lean tier (tests/support/tier.py): half of each op's dtypes, another half under the next policy
    kept = tier.thin([(op, d) for op in OPS for d in OPS[op]], 2, shift=gp.policies().index(policy))
    for op in OPS:
        dtypes = [d for o, d in kept if o == op]
        diffs += _differences(op, _scalar_cases(op, dtypes) + _array_cases(op, dtypes))
    assert not diffs, f"{len(diffs)} calls differ under {policy!r}:\n" + "\n".join(diffs[:15])


def _float_values(n=400, seed=7):
    """Doubles that probe each rounding: random magnitudes, float16 / bfloat16 / float32 halfway
    points and their neighbours (a double rounding would show there), limits and specials."""
    rng = np.random.default_rng(seed)
    values = list(rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n))
    for narrow in (np.float16, ml_dtypes.bfloat16, np.float32):
        grid = np.sort(rng.standard_normal(40).astype(narrow)).astype(np.float64)
        mids = (grid[:-1] + grid[1:]) / 2
        values += list(mids) + list(np.nextafter(mids, np.inf)) + list(np.nextafter(mids, -np.inf))
    values += [65504.0, 65519.99, 65520.0, 6e-8, 3e-8, 1e-45, 3.4028235e38, 3.4028236e38, 5e-324, -0.0,
               float("inf"), float("nan"), 2.0 ** 24 + 1, 2.0 ** 53 + 2]
    return [float(v) for v in values]


_INTS = [0, 1, -1, 2**7, 2**8 + 1, 2**11 + 1, 2**15, 2**16 + 3, 2**24 + 1, 2**31 - 1, -2**31, 2**53 + 1, 2**62 + 1,
         2**63 - 1, -2**63]


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax", "jax-x64", "paddle", "tf-all", "array-api"])
def test_folded_python_scalars_are_converted_bit_for_bit_as_the_python_converter_does(policy):
    # The C side converts most scalars itself (fold_value); every such conversion must give the
    # Python converter's bits, the policy's scalar precision (float16 under NumPy 2 for a float16
    # array, float32 under PyTorch) and the compute dtype included.
    global _policy
    _policy = policy
    cases = []
    for dtype in ["float16", "bfloat16", "float32", "float64", "complex64", "int8", "uint16", "int32", "uint64", "bool"]:
        for s in _float_values() + _INTS + [True, 1 + 1j, complex(3.4e38, -1e-45)]:
            a = np.zeros(3, gp.dtype(dtype).numpy)
            cases.append((f"({dtype}[3], {s!r})", lambda a=a, s=s: ((_fresh(a), s), {"policy": _policy})))
    diffs = []
    for op in ("add", "multiply", "equal"):
        diffs += _differences(op, cases)
    assert not diffs, f"{len(diffs)} calls differ under {policy!r}:\n" + "\n".join(diffs[:15])


class _Subclass(np.ndarray):
    pass


def _unaligned(dtype, n):
    raw = np.zeros(n * np.dtype(dtype).itemsize + 1, np.uint8)
    return np.frombuffer(raw.data, dtype, n, offset=1)


def _layout_cases():
    f4, f2, i1 = _array("float32", 12, 3), _array("float16", 12, 4), _array("int8", 12, 5)
    m = _array("float32", 12, 6).reshape(3, 4)
    cases = {
        "contiguous": lambda: ((f4.copy(), f2.copy()), {}),
        "2-d C-contiguous": lambda: ((m.copy(), m.copy() * 2), {}),
        "2-d Fortran order": lambda: ((np.asfortranarray(m), m.copy()), {}),
        "2-d transposed": lambda: ((m.T.copy().T, m.copy()), {}),
        "stride 2": lambda: ((f4.copy()[::2], f2.copy()[::2]), {}),
        "stride 3 with a scalar": lambda: ((i1.copy()[::3], 2.5), {}),
        "stride 2 with a scalar that overflows (a warning)": lambda: ((f2.copy()[::2], 70000), {}),
        "reversed": lambda: ((f4.copy()[::-1], f2.copy()), {}),
        "broadcast (n,) + (1,)": lambda: ((f4.copy(), f2.copy()[:1]), {}),
        "broadcast (3, 4) + (4,)": lambda: ((m.copy(), f4.copy()[:4]), {}),
        "broadcast_to stride 0": lambda: ((np.broadcast_to(f4[:1], (12,)), f2.copy()), {}),
        "broadcast (4,) + (3, 4)": lambda: ((f2.copy()[:4], m.copy()), {}),
        "broadcast (2, 3, 2) + (3, 2)": lambda: ((f4.copy().reshape(2, 3, 2), f2.copy()[:6].reshape(3, 2)), {}),
        "broadcast (3, 4) + (1, 1, 4)": lambda: ((m.copy(), f2.copy()[:4].reshape(1, 1, 4)), {}),
        "broadcast (1, 12) + (1, 1)": lambda: ((f4.copy().reshape(1, 12), f2.copy()[:1].reshape(1, 1)), {}),
        "broadcast (3, 4) + (3, 1)": lambda: ((m.copy(), f2.copy()[:3].reshape(3, 1)), {}),
        "broadcast (3, 4) + (2, 4)": lambda: ((m.copy(), f2.copy()[:8].reshape(2, 4)), {}),
        "broadcast (3, 4) + (4,) with a scalar": lambda: ((m.copy()[0], 2.5), {}),
        "column (3, 4) + (3, 1) float64": lambda: ((m.copy(), _array("float64", 3, 7).reshape(3, 1)), {}),
        "column (3, 1) + (3, 4)": lambda: ((f2.copy()[:3].reshape(3, 1), m.copy()), {}),
        "column of NaNs and infinities": lambda: ((m.copy(), np.array([[np.nan], [-np.nan], [-np.inf]], np.float32)), {}),
        "column float16 NaN with a payload": lambda: ((m.copy(), np.array([[1], [0x7E01], [0xFC01]], np.uint16).view(np.float16)),
                                                      {}),
        "column uint64 beyond 2**53": lambda: ((m.astype(np.float64), np.array([[2**53 + 1], [2**64 - 1], [7]], np.uint64)), {}),
        "column bool": lambda: ((i1.copy().reshape(3, 4), np.array([[True], [False], [True]])), {}),
        "column bfloat16": lambda: ((m.copy(), f4[:3].astype(ml_dtypes.bfloat16).reshape(3, 1)), {}),
        "column float8_e5m2": lambda: ((m.copy(), f4[:3].astype(ml_dtypes.float8_e5m2).reshape(3, 1)), {}),
        "column complex64": lambda: ((m.copy(), (f4[:3] + 1j).astype(np.complex64).reshape(3, 1)), {}),
        "column int8 into int8": lambda: ((i1.copy().reshape(3, 4), np.array([[127], [-128], [3]], np.int8)), {}),
        "views x[:, 1:] - x[:, :-1]": lambda: ((m.copy()[:, 1:], m.copy()[:, :-1]), {}),
        "views x[::2] and x[1::2]": lambda: ((f4.copy().reshape(6, 2)[::2], f2.copy().reshape(6, 2)[1::2]), {}),
        "view reversed rows": lambda: ((m.copy()[::-1], m.copy()), {}),
        "view with a scalar": lambda: ((m.copy()[:, :2], 2.5), {}),
        "view beside a broadcast row": lambda: ((m.copy()[:, 1:3], f2.copy()[:2]), {}),
        "view (2, 3, 2)[:, 1:] + (2, 2, 2)": lambda: ((f4.copy().reshape(2, 3, 2)[:, 1:], f2.copy()[:8].reshape(2, 2, 2)), {}),
        "view of a column beside rows": lambda: ((m.copy()[:, :1], m.copy()), {}),
        "view, rows of one element": lambda: ((m.copy()[:, :1], m.copy()[:, 1:2]), {}),
        "unaligned": lambda: ((_unaligned("float32", 12), f4.copy()), {}),
        "big-endian": lambda: ((f4.astype(">f4"), f4.copy()), {}),
        "empty": lambda: ((f4[:0].copy(), f2[:0].copy()), {}),
        "0-d": lambda: ((np.float32(2)[()] * np.ones((), np.float32), f4.copy()), {}),
        "0-d both": lambda: ((np.ones((), np.float32), np.ones((), np.float16)), {}),
        "0-d object": lambda: ((f4.copy(), np.array(5, dtype=object)), {}),
        "0-d string": lambda: ((f4.copy(), np.array("x")), {}),
        "0-d datetime": lambda: ((f4.copy(), np.array(np.datetime64("2020-01-01"))), {}),
        "n-d with a scalar": lambda: ((m.copy(), 3), {}),
        "subclass": lambda: ((m.copy().view(_Subclass), m.copy()), {}),
        "one element": lambda: ((f4.copy()[:1], f2.copy()[:1]), {}),
    }

    def out(make_out, *make_args):
        def make():
            args = tuple(x() if callable(x) else _fresh(x) for x in make_args)
            return args, {"out": make_out(args)}
        return make
    cases.update({
        "out=": out(lambda a: np.zeros(12, np.float32), f4, f2),
        "out= 2-d": out(lambda a: np.zeros((3, 4), np.float32), m, m),
        "out= the first operand (in place)": out(lambda a: a[0], f4, f2),
        "out= the second operand (in place)": out(lambda a: a[1], f2.astype(np.float32), f4),
        "out= a view of an operand": out(lambda a: a[0][:], f4, f4),
        "out= overlapping an operand, shifted": out(lambda a: a[0][1:], lambda: f4.copy()[:11], lambda: f4.copy()[1:]),
        "out= strided": out(lambda a: np.zeros(24, np.float32)[::2], f4, f2),
        "out= reversed": out(lambda a: np.zeros(12, np.float32)[::-1], f4, f2),
        "out= another dtype": out(lambda a: np.zeros(12, np.float64), f4, f2),
        "out= a narrower dtype": out(lambda a: np.zeros(12, np.float16), f4, f2),
        "out= an integer dtype": out(lambda a: np.zeros(12, np.int32), f4, f2),
        "out= read-only": out(lambda a: np.broadcast_to(np.zeros(1, np.float32), (12,)), f4, f2),
        "out= wrong shape": out(lambda a: np.zeros(13, np.float32), f4, f2),
        "out= larger (broadcast into it)": out(lambda a: np.zeros((2, 12), np.float32), f4, f2),
        "out= unaligned": out(lambda a: _unaligned("float32", 12), f4, f2),
        "out= big-endian": out(lambda a: np.zeros(12, ">f4"), f4, f2),
        "out= empty": out(lambda a: np.zeros(0, np.float32), lambda: f4[:0].copy(), lambda: f2[:0].copy()),
        "out= a list": out(lambda a: [0.0] * 12, f4, f2),
        "out= with a scalar, in place": out(lambda a: a[0], f4, 1.5),
        "out= strided, a scalar that overflows (a warning)": out(lambda a: np.zeros(24, np.float16)[::2], f2, 70000),
        "out= int8 in place with an int": out(lambda a: a[0], i1, 3),
        "out= broadcast (3, 4) + (4,)": out(lambda a: np.zeros((3, 4), np.float32), m, lambda: f4.copy()[:4]),
        "out= broadcast, in place": out(lambda a: a[0], m, lambda: f4.copy()[:4]),
        "out= broadcast, the row a view of out": lambda: (((o := m.copy()), o[1]), {"out": o}),
        "out= column, in place": out(lambda a: a[0], m, lambda: f4.copy()[:3].reshape(3, 1)),
        "out= column, the column a view of out": lambda: (((o := m.copy()), o.reshape(12)[:3].reshape(3, 1)), {"out": o}),
        "out= column of another dtype": out(lambda a: np.zeros((3, 4), np.float64), m, lambda: f4.copy()[:3].reshape(3, 1)),
        "out= views into a new array": out(lambda a: np.zeros((3, 3), np.float32), lambda: m.copy()[:, 1:],
                                          lambda: m.copy()[:, :-1]),
        "out= a view of an operand's base": lambda: (((w := m.copy())[:, 1:], w[:, :-1]), {"out": w[:, 1:]}),
        "out= C-contiguous rows of the base of a view": lambda: (((w := m.copy())[1:, :], w[:-1, :]), {"out": w[1:, :]}),
        "out= broadcast (1, 4) + (4,), the row itself": lambda: (((r := f4.copy()[:4]), r.reshape(1, 4)), {"out": r.reshape(1, 4)}),
    })
    return cases


LAYOUTS = _layout_cases()


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax", "paddle", "tf-safe", "array-api", "ascend"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_and_out_arrays_give_the_python_outcome(layout, policy):
    make = LAYOUTS[layout]

    def with_policy():
        args, kwargs = make()
        return args, {**kwargs, "policy": policy}
    diffs = []
    for op in ("add", "multiply", "less", "maximum"):
        diffs += _differences(op, [(f" {layout}", with_policy)])
    assert not diffs, "\n".join(diffs)


def test_where_and_unary_ops_give_the_python_outcome():
    cond, a, b = np.array([True, False, True, False]), _array("int8", 4), _array("float16", 4)
    cases = [
        ("(cond, int8, float16)", lambda: ((cond.copy(), a.copy(), b.copy()), {})),
        ("(cond, int8, 2.5)", lambda: ((cond.copy(), a.copy(), 2.5), {"policy": "torch"})),
        ("(cond, 3, float16)", lambda: ((cond.copy(), 3, b.copy()), {"policy": "jax"})),
        ("(True, int8, float16)", lambda: ((True, a.copy(), b.copy()), {})),
        ("(cond, 300, int8)", lambda: ((cond.copy(), 300, a.copy()), {"policy": "torch"})),
        ("(cond, int8, float16, out=)", lambda: ((cond.copy(), a.copy(), b.copy()), {"out": np.zeros(4, np.float16)})),
    ]
    assert not _differences("where", cases)
    for op in ("negative", "absolute", "invert"):
        unary = [(f"({d}[5])", lambda d=d: ((_array(d),), {"policy": p})) for d in DTYPES for p in ("numpy", "torch")]
        unary.append(("(out=)", lambda: ((_array("int32"),), {"out": np.zeros(5, np.int32)})))
        assert not _differences(op, unary)


def test_errors_and_warnings_are_the_python_ones():
    i4, z = np.arange(-2, 3, dtype=np.int32), np.zeros(5, np.int32)
    cases = {
        "floor_divide": [("(int32, 0)", lambda: ((i4.copy(), 0), {})),
                         ("(int32, 0) torch", lambda: ((i4.copy(), 0), {"policy": "torch"})),
                         ("(int32, int32 zeros)", lambda: ((i4.copy(), z.copy()), {})),
                         ("(int32, -1)", lambda: ((np.array([-2**31, 1], np.int32), -1), {}))],
        "power": [("(int32, -1)", lambda: ((i4.copy(), -1), {})), ("(int32, 2)", lambda: ((i4.copy(), 2), {}))],
        "add": [("(uint16, int8) torch", lambda: ((np.ones(3, np.uint16), np.ones(3, np.int8)), {"policy": "torch"})),
                ("(int8, float32) array-api", lambda: ((np.ones(3, np.int8), np.ones(3, np.float32)), {"policy": "array-api"})),
                ("(int8, 300)", lambda: ((np.ones(3, np.int8), 300), {})),
                ("(int8, None)", lambda: ((np.ones(3, np.int8), None), {})),
                ("(int8, 'int8')", lambda: ((np.ones(3, np.int8), "int8"), {})),
                ("(int8, int8) policy='nmpy'", lambda: ((np.ones(3, np.int8), np.ones(3, np.int8)), {"policy": "nmpy"})),
                ("(int8, int8) polcy=", lambda: ((np.ones(3, np.int8), np.ones(3, np.int8)), {"polcy": "numpy"})),
                ("(int8,)", lambda: ((np.ones(3, np.int8),), {})),
                ("(f32, f32, f32)", lambda: ((np.ones(3, np.float32),) * 3, {})),
                ("(float16, 70000)", lambda: ((np.ones(3, np.float16), 70000), {})),
                ("(int32, float64) out=int32 tf-safe", lambda: ((np.ones(3, np.int32), np.ones(3)), {
                    "policy": "tf-safe", "out": np.ones(3, np.int32)})),
                ("(float32, float64) out=float32 in place, array-api", lambda: ((f := np.ones(3, np.float32), np.ones(3)), {
                    "policy": "array-api", "out": f}))],
    }
    diffs = []
    for op, op_cases in cases.items():
        diffs += _differences(op, op_cases)
    assert not diffs, "\n".join(diffs)
    with np.errstate(divide="raise", over="raise"):
        diffs = _differences("floor_divide", cases["floor_divide"]) + _differences("add", cases["add"][-3:])
    assert not diffs, "\n".join(diffs)


def test_an_op_is_a_compiled_callable_that_reads_and_pickles_as_the_function():
    assert type(gp.add) is _fastpath.Op and gp.add.__wrapped__.__name__ == "add"
    assert gp.add.__name__ == "add" and gp.add.__module__ == "gpupromote"
    assert gp.add.__doc__ == gp.add.__wrapped__.__doc__ and "promotion" in gp.add.__doc__
    assert gp.sub is gp.subtract and pickle.loads(pickle.dumps(gp.add)) is gp.add
    assert "add" in repr(gp.add)


def test_the_policy_comes_from_the_context_when_not_given():
    a = np.arange(3, dtype=np.int32)
    with gp.use_policy("torch"):
        assert gp.add(a, 5.5).dtype == np.float32
        assert gp.add(a, 5.5, policy=None).dtype == np.float32
        assert gp.add(a, 5.5, policy="").dtype == np.float32
    assert gp.add(a, 5.5).dtype == np.float64
    assert gp.add(a, 5.5, policy="".join(["to", "rch"])).dtype == np.float32   # an equal, not interned, string


def test_clearing_the_caches_keeps_answers_right():
    from gpupromote.core import caches
    a = np.arange(3, dtype=np.int8)
    first = gp.add(a, 3)
    caches.clear_all()   # the plan cache, the entries and the compiled memos
    assert not gp.add._fast_cache
    assert gp.add(a, 3).tobytes() == first.tobytes() and gp.add(a, 3).dtype == np.int8


def test_no_reference_is_leaked_or_dropped():
    # the compiled path borrows and takes references by hand; a leak shows as a growing count on
    # the objects every call touches, a dropped reference as a shrinking one
    a, f = np.ones(3, np.int8), np.ones(3, np.float32)
    o = np.empty(3, np.float32)
    calls = [lambda: gp.add(a, f), lambda: gp.add(a, 3), lambda: gp.add(f, 2.5, policy="torch"),
             lambda: gp.add(a, f, out=o), lambda: gp.add(f, f, out=f), lambda: gp.add(a, 300, policy="torch"),
             lambda: gp.where(a > 0, a, 1.5), lambda: gp.negative(f), lambda: gp.add(a[::2], f[::2]),
             lambda: gp.add(f, s), lambda: gp.add(z, f), lambda: gp.add(a, z, policy="torch"),
             lambda: A + A, lambda: gp.multiply(A, f), lambda: A < f,
             lambda: gp.subtract(M, C), lambda: gp.subtract(M, N), lambda: gp.add(M, M[0]),
             lambda: gp.subtract(M[:, 1:], M[:, :-1]), lambda: gp.multiply(M[::2], 2.5)]
    M, C = np.ones((3, 4), np.float32), np.ones((3, 1), np.float32)   # a column (folded a row at a time)
    N = np.full((3, 1), np.nan, np.float32)                              # NaN rows: through the Python converter
    s, z = np.float32(2.5), np.array(1.5, np.float32)   # a numpy scalar; a 0-d array (made a scalar in C)
    A = gp.asarray(f)                                   # a host gp.Array (its storage read in C, the result wrapped)
    watched = [a, f, o, s, z, A, M, C, N, a.dtype, f.dtype, A.dtype, int, float, np.float32, "numpy", "torch", "cpu", None, True]

    def run(n):
        for _ in range(n):
            for call in calls:
                call()
    assert_no_reference_leaked_or_dropped(run, watched)


def test_pure_python_mode_runs_the_python_functions():
    code = ("import numpy as np, gpupromote as gp, types\n"
            "assert isinstance(gp.add, types.FunctionType)\n"
            "print(gp.add(np.arange(3, dtype=np.int8), 2.5, policy='torch').tolist())")
    env = dict(os.environ, GPUPROMOTE_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "[2.5, 3.5, 4.5]"


def test_the_common_calls_never_leave_the_compiled_path():
    from gpupromote.core import caches
    # why: a session that resolved many keys (the conformance sweep) has a full plan cache, and
    # keys it never cached take the full path on both sides
    caches.clear_all()
    f4, i1, f2 = np.ones(1, np.float32), np.ones(1, np.int8), np.ones(7, np.float16)
    m, o = np.ones((3, 4), np.float32), np.empty(1, np.float32)
    calls = [lambda: gp.add(f4, f4), lambda: gp.add(i1, 3), lambda: gp.add(3, i1), lambda: gp.add(f4, f4, out=o),
             lambda: gp.add(f4, f4, out=f4), lambda: gp.add(f2, 2.5), lambda: gp.add(f2, 1e-8),
             lambda: gp.multiply(f2, 2.5, policy="torch"), lambda: gp.add(i1, 1.5, policy="jax"),
             lambda: gp.floor_divide(i1, 2), lambda: gp.power(i1, 2), lambda: gp.less(f2, 1),
             lambda: gp.add(m, m), lambda: gp.add(m, 2), lambda: gp.add(m[1:], 1.0), lambda: gp.add(m, m[0]),
             lambda: gp.multiply(m[:1], m), lambda: gp.where(m > 0, m[0], 0.0),
             lambda: gp.subtract(m, m.max(axis=-1, keepdims=True)), lambda: gp.divide(m.sum(axis=-1, keepdims=True), m),
             lambda: gp.add(m, m[:1, :1]), lambda: gp.subtract(m[:, 1:], m[:, :-1]), lambda: gp.multiply(m[:, :2], 2.0),
             lambda: gp.add(m[::-1], m), lambda: gp.add(m[:, :2], m[0, :2]),
             lambda: gp.where(i1 > 0, i1, 1.5), lambda: gp.negative(f2), lambda: gp.add(np.ones(0, np.int8), i1[:0]),
             lambda: gp.add(f2, 1 + 1j), lambda: gp.add(i1, True), lambda: gp.bitwise_and(i1, 3, policy="torch")]
    assert_all_served(calls)
