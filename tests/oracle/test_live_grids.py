"""Promotion grids computed live from the libraries themselves, not from gpupromote's tables:
NumPy (with ml_dtypes) for the ``numpy`` policy and array-api-strict for ``array-api``. Every op,
rows are arrays of each dtype, columns arrays, 0-d arrays and Python scalars; a cell is the result
dtype's 2-char code, ``--`` where the library refuses, ``OV`` where it raises OverflowError. A
failure prints only the differing cells."""
import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import dtypes as D

SCALARS = [True, 1, -1, 300, 2**40, 1.5, 1e300, 1 + 2j]


def _cell(compute):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return D.dtype(compute().dtype).code
    except OverflowError:
        return "OV"
    except Exception:  # noqa: BLE001 - any refusal
        return "--"


def _gp_cell(policy, op, a, b):
    operands = (True, a, b) if op == "where" else (a, b)
    return _cell(lambda: gp.result_type(*operands, op=op, policy=policy))


def _diff_grid(policy, op, dtypes, library_cell):
    """Cells where gpupromote and the library differ: (a, b-label, library, gpupromote)."""
    diffs = []
    for a in dtypes:
        columns = [(d.code, d, gp.spec(d)) for d in dtypes] + [(d.code + "[]", d, gp.spec(d, ndim=0)) for d in dtypes]
        columns += [(repr(s), s, s) for s in SCALARS]
        for label, b, spec in columns:
            want = library_cell(op, a, b, label.endswith("[]"))
            got = _gp_cell(policy, op, gp.spec(a), spec)
            if want != got:
                diffs.append(f"  {op}({a.code}[n], {label}): {policy.split('-')[0]} {want}, gpupromote {got}")
    return diffs


# --- NumPy 2 + ml_dtypes ---------------------------------------------------------------------------

NUMPY_DTYPES = [d for d in D.ALL if d.numpy is not None]


def _numpy_operand(d, zero_dim):
    if not isinstance(d, D.DType):
        return d   # a Python scalar
    return np.zeros((), d.numpy) if zero_dim else np.ones(2, d.numpy)


def _numpy_cell(op, a, b, zero_dim):
    x, y = _numpy_operand(a, False), _numpy_operand(b, zero_dim)
    if op == "where":
        return _cell(lambda: np.where(np.ones(2, bool), x, y))
    return _cell(lambda: getattr(np, op)(x, y))


@pytest.mark.parametrize("op", sorted(gp.OPS))
def test_numpy_grid_is_numpys(op):
    # Note: np.where's result_type refuses nothing for Python scalars beyond int64 the way ufuncs
    # do; both sides see the same calls, so every cell is compared as it is.
    diffs = _diff_grid("numpy", op, NUMPY_DTYPES, _numpy_cell)
    assert not diffs, f"{len(diffs)} cells differ from NumPy {np.__version__}\n" + "\n".join(diffs[:60])


# --- array-api-strict ------------------------------------------------------------------------------

try:
    import array_api_strict as xp
except ImportError:   # the test extra installs it
    xp = None

ARRAY_API_DTYPES = [D.dtype(n) for n in ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                         "int64", "float32", "float64", "complex64", "complex128")]
# The standard's function names, where they differ from NumPy's.
_XP_NAMES = {"true_divide": "divide", "power": "pow", "arctan2": "atan2", "left_shift": "bitwise_left_shift",
             "right_shift": "bitwise_right_shift"}
# Ops the standard does not have (gpupromote's array-api policy answers for them by the nearest rule).
_NOT_IN_STANDARD = {"fmax", "fmin", "fmod", "logical_xor"}


def _xp_operand(d, zero_dim):
    if not isinstance(d, D.DType):
        return d
    dtype = getattr(xp, d.name)
    return xp.zeros((), dtype=dtype) if zero_dim else xp.ones(2, dtype=dtype)


def _xp_cell(op, a, b, zero_dim):
    x, y = _xp_operand(a, False), _xp_operand(b, zero_dim)
    if op == "where":
        return _cell(lambda: _numpy_dtype_of(xp.where(xp.ones(2, dtype=xp.bool), x, y)))
    fn = getattr(xp, _XP_NAMES.get(op, op))
    return _cell(lambda: _numpy_dtype_of(fn(x, y)))


def _numpy_dtype_of(result):
    """An array-api-strict array's dtype by its name in the standard (``int16``, ...), for _cell."""
    names = {dtype: name for name, dtype in xp.__array_namespace_info__().dtypes().items()}
    return np.empty(0, dtype=names[result.dtype])


@pytest.mark.skipif(xp is None, reason="array-api-strict is not installed (pip install -e .[test])")
@pytest.mark.parametrize("op", sorted(set(gp.OPS) - _NOT_IN_STANDARD))
def test_array_api_grid_is_array_api_stricts(op):
    diffs = _diff_grid("array-api", op, ARRAY_API_DTYPES, _xp_cell)
    assert not diffs, f"{len(diffs)} cells differ from array-api-strict {xp.__version__}\n" + "\n".join(diffs[:60])
