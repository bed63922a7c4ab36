"""The flattened functions (kernel/math/_flatten.py: a straight-line function with its helpers
written inline, as the CPU engine's kernels call it) give the bits of the functions as written,
on the inputs of test_engines_agree; and the flattening keeps what it must: every operation, no
call left, names of different modules apart."""
import ast

import pytest

from ._harness import assert_same_bits, numba_call
from .test_engines_agree import REAL, _inputs_for
from gpupromote.kernel.math import _library  # noqa: F401 - fills the registry
from gpupromote.kernel.math._dsl import REGISTRY
from gpupromote.kernel.math._flatten import flat_source, is_straight

FLAT = [n for n in REAL if is_straight(n)]


@pytest.mark.parametrize("name", FLAT)
def test_flat_gives_the_bits_of_the_function_as_written(name):
    args = _inputs_for(name)
    a = numba_call(name, *args, flat=True)
    b = numba_call(name, *args, flat=False)
    assert_same_bits(args, a, b)


def test_the_float32_and_narrow_paths_are_flattened():
    """What the engine's vectorised loops call: every float32 and _wide entry point (power's too,
    since its integer exponents' square-and-multiply is unrolled)."""
    paths = [n for n in REAL if n.endswith(("_f32", "_wide"))]
    not_flat = sorted(n for n in paths if not is_straight(n))
    assert not_flat == []
    assert len(paths) >= 40


def test_a_flat_function_calls_nothing_and_keeps_every_operation():
    text, values = flat_source("gpm_exp_f32")
    tree = ast.parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not called & set(REGISTRY)
    # exp_wide_core: 13 fma (the shifter, the two-step reduction, the ten Horner steps), none lost or merged
    assert sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and n.func.id == "fma") == 13
    # module-level values keep their module in their name (two modules may reuse a constant's name)
    assert all(k.startswith("_g_exp_log_") for k in values) and values["_g_exp_log_EF0"] == 0.16666666666610855


def test_branching_functions_are_not_flattened():
    assert not is_straight("gpm_exp_f64")      # if x != x: return x ...
    assert is_straight("gpm_exp_f32") and is_straight("gpm_two_sum")
