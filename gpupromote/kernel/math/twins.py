"""Fast twins: entry point -> (twin, rare). ``twin(x)`` equals the entry point's result wherever
``rare(x)`` is false. The float32 entry points select between the twin's computation and another
on the same predicate, so there it holds by construction (and was checked on all 2^32 inputs); a
float64 twin is its entry point's own computation for those inputs, the entry point's branches
written as selects around the same helpers (checked around every threshold:
tests/kernel/math/test_fast_twins.py). The entry points stay as they were, so that a kernel compiles
them as before (a float64 entry point calling its twin compiled the twin's helpers a second time).
The twin is straight-line where the entry point branches (float64: special values, subnormal
results) or skips work only the rare inputs need (float32 sin, cos, tan: the table reduction of
|x| >= 2^24, gathers in a vectorized loop), or evaluates a shorter formula whose rounding it checks
(float32 tanh, log, log2, log10, log1p: fast32.py, keyed). The CPU engine's contiguous loops run the twin over a
block and rerun the block with the entry point if rare held for any element (engines/cpu/source.py);
the C++ rendering and every other caller use the entry points."""
from __future__ import annotations

from .fast32 import TIE_KEY_LIMIT

__all__ = ["FAST_TWINS", "SECOND_TWINS", "TWIN_FUNCTIONS", "KEYED", "TOGETHER", "TIE_KEY_LIMIT"]

FAST_TWINS = {
    "gpm_sin_f32":     ("gpm_sin_cw_f32",        "gpm_trig_big_f32"),
    "gpm_cos_f32":     ("gpm_cos_cw_f32",        "gpm_trig_big_f32"),
    "gpm_tan_f32":     ("gpm_tan_cw_f32",        "gpm_trig_big_f32"),
    "gpm_tanh_f32":    ("gpm_tanh_short_f32",    "gpm_tanh_short_key_f32"),    # fast32.py: keyed
    "gpm_log_f32":     ("gpm_log_short_f32",     "gpm_log_short_key_f32"),
    "gpm_log2_f32":    ("gpm_log2_short_f32",    "gpm_log2_short_key_f32"),
    "gpm_log10_f32":   ("gpm_log10_short_f32",   "gpm_log10_short_key_f32"),
    "gpm_log1p_f32":   ("gpm_log1p_short_f32",   "gpm_log1p_short_key_f32"),
    "gpm_power_f32":   ("gpm_power_small_f32",   "gpm_power_not_small_f32"),   # y in 0, +-1, 2, 3, 4, 0.5
    "gpm_power_f64":   ("gpm_power_sq_f64",      "gpm_power_not_sq_f64"),
    "gpm_exp_f64":     ("gpm_exp_fast_f64",      "gpm_exp_rare_f64"),
    "gpm_exp2_f64":    ("gpm_exp2_fast_f64",     "gpm_exp2_rare_f64"),
    "gpm_expm1_f64":   ("gpm_expm1_fast_f64",    "gpm_expm1_rare_f64"),
    "gpm_sinh_f64":    ("gpm_sinh_fast_f64",     "gpm_sinh_rare_f64"),
    "gpm_cosh_f64":    ("gpm_cosh_fast_f64",     "gpm_cosh_rare_f64"),
    "gpm_sigmoid_f64": ("gpm_sigmoid_fast_f64",  "gpm_sigmoid_rare_f64"),
    "gpm_arcsinh_f64": ("gpm_arcsinh_fast_f64",  "gpm_arcsinh_rare_f64"),
    "gpm_arccosh_f64": ("gpm_arccosh_fast_f64",  "gpm_arccosh_rare_f64"),
    "gpm_sin_f64":     ("gpm_sin_fast_f64",      "gpm_trig_rare_f64"),
    "gpm_cos_f64":     ("gpm_cos_fast_f64",      "gpm_trig_rare_f64"),
    "gpm_tan_f64":     ("gpm_tan_fast_f64",      "gpm_trig_rare_f64"),
}

# Second twins: where the first twin flagged an input in a block, the CPU engine runs the block
# with these before the entry points (the cheap first twin keeps the common exponents fast, x ** 2
# 0.1 ns an element; the second answers the others for 4 ns instead of the entry point's 11-20)
SECOND_TWINS = {
    "gpm_power_f32":   ("gpm_power_fast_f32",    "gpm_power_key_f32"),      # pow.py: keyed
    "gpm_power_f64":   ("gpm_power_fast_f64",    "gpm_power_rare_f64"),     # the entry's core, straight-line
}

# rare functions that return a key (a u64) instead of a bool: rare where the key is at most
# TIE_KEY_LIMIT (fast32.py). A loop keeps the smallest key, one vector min an element; or-ing bools
# made LLVM fold flags in mask registers (a float32 log twin's loop: 7.15 -> 6.19 ms for 10**7)
KEYED = frozenset({"gpm_tanh_short_key_f32", "gpm_log_short_key_f32", "gpm_log2_short_key_f32",
                   "gpm_log10_short_key_f32", "gpm_log1p_short_key_f32", "gpm_power_key_f32"})

# a keyed twin's value and key from one evaluation: key -> the function returning (value, key). As two
# calls in one loop LLVM computed the shared evaluation twice where it holds table reads (float32
# power's log: x ** 2.5 of 10**6 4.2 -> 2.4 ms)
TOGETHER = {"gpm_power_key_f32": "gpm_power_fast_keyed_f32"}

# the functions the CPU kernels call as intrinsics for the twins
TWIN_FUNCTIONS = frozenset([*(name for table in (FAST_TWINS, SECOND_TWINS) for pair in table.values() for name in pair),
                            *TOGETHER.values()])
