"""A warning gpupromote emits names the line that called gpupromote, as NumPy's own warnings do,
whichever path served the call (the C dispatcher, the Python runners, gp.fuse, gp.Array's
operators), and np.errstate decides whether it is a warning, an error or nothing."""
import warnings

import numpy as np
import pytest

import gpupromote as gp


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "no warning"
    return caught


CALLS = {
    "integer division by zero": (lambda: gp.floor_divide(np.array([1]), 0), "divide by zero"),
    "by a zero array": (lambda: gp.floor_divide(np.array([1, 2]), np.array([1, 0])), "divide by zero"),
    "INT_MIN // -1": (lambda: gp.floor_divide(np.array([-128], np.int8), -1), "overflow encountered in floor_divide"),
    "a Python float beyond float16": (lambda: gp.add(np.ones(2, np.float16), 1e10), "overflow encountered in cast"),
    "... under torch": (lambda: gp.add(np.ones(2, np.float16), 1e10, policy="torch"), "overflow encountered in cast"),
    "a Python int beyond float16": (lambda: gp.add(np.ones(2, np.float16), 10**6, policy="torch"),
                                    "overflow encountered in cast"),
    "gp.fuse": (lambda: gp.fuse(lambda a, b: a // b)(np.array([1]), np.array([0])), "divide by zero"),
    "gp.Array operator": (lambda: gp.asarray(np.array([3])) // 0, "divide by zero"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_the_warning_names_this_file(name):
    call, message = CALLS[name]
    for _ in range(2):   # the first call resolves and compiles; the second is served by the cached path
        caught = _caught(call)
        assert len(caught) == 1, [str(w.message) for w in caught]   # one warning, as NumPy gives one
        assert message in str(caught[0].message)
        assert caught[0].filename == __file__, f"{name}: the warning names {caught[0].filename}:{caught[0].lineno}"
        assert caught[0].category is RuntimeWarning


def test_np_errstate_decides_as_for_numpy():
    a = np.array([1])
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        gp.floor_divide(a, 0)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero"):
        gp.floor_divide(a, 0)
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(gp.add(np.ones(2, np.float16), 1e10)).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        gp.add(np.ones(2, np.float16), 1e10)
