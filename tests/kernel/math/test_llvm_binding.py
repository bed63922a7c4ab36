"""The straight-line functions written as LLVM instructions (kernel/math/llvm_binding.py: what the
CPU kernels' loops hold) give the bits of the flattened functions Numba compiles from the text, on
the inputs of test_engines_agree (every float16 and bfloat16 value for the narrow paths, random
bit patterns, edges and the known hard cases for the float32 ones)."""
import pytest

from ._harness import assert_same_bits, numba_call
from .test_engines_agree import REAL, _inputs_for
from gpupromote.kernel.math._flatten import is_straight
from gpupromote.kernel.math.llvm_binding import intrinsic_for

STRAIGHT = [n for n in REAL if is_straight(n)]


@pytest.mark.parametrize("name", STRAIGHT)
def test_instructions_give_the_bits_of_the_flat_function(name):
    args = _inputs_for(name)
    a = numba_call(name, *args, llvm=True)
    b = numba_call(name, *args, flat=True)
    assert_same_bits(args, a, b)


def test_every_float32_and_narrow_path_has_its_instructions():
    """The kernels' paths: 40-odd straight-line functions, each one intrinsic of its own arity."""
    paths = [n for n in STRAIGHT if n.endswith(("_f32", "_wide"))]
    assert len(paths) >= 40
    assert len({id(intrinsic_for(n)) for n in paths}) == len(paths)


def test_a_function_with_branches_is_refused():
    with pytest.raises(ValueError, match="gpm_power_f64 has branches or loops"):
        intrinsic_for("gpm_power_f64")
