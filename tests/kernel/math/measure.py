"""Measures the accuracy table of the owned math library (the one in gpupromote/kernel/math/README.md).

    PYTHONPATH=. GP_MATH_SAMPLES=1000000 python3 tests/kernel/math/measure.py

For each function: float64 max ulp error (mpmath on the inputs where the library and NumPy differ,
the largest differences first, plus a random subsample), float32 results that are not correctly
rounded (decided by mpmath), float16 and bfloat16 exhaustively. Prints a markdown table.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.kernel.math._isolation import ensure_kernel_math_importable  # noqa: E402

ensure_kernel_math_importable()

from tests.kernel.math import _reference as R  # noqa: E402
from tests.kernel.math._accuracy import measure_f32, measure_f64, narrow_check  # noqa: E402
from tests.kernel.math._harness import numba_call  # noqa: E402
from tests.kernel.math._inputs import BINARY, SAMPLES, UNARY, binary_inputs, unary_inputs  # noqa: E402


def main():
    print(f"inputs per type and function: {SAMPLES} random + edges (GP_MATH_SAMPLES)\n")
    print("| function | float64 max ulp | float64 checked with mpmath | float32 not correctly rounded | "
          "float16 / bfloat16 (all 65536 each) wrong |")
    print("| --- | --- | --- | --- | --- |")
    for name in UNARY + BINARY:
        t = time.time()
        if name in UNARY:
            x = unary_inputs(name, "float64")
            r64 = measure_f64(name, (x,), numba_call(f"gpm_{name}_f64", x), most=3000, random_extra=1000)
            x32 = unary_inputs(name, "float32")
            r32 = measure_f32(name, (x32,), numba_call(f"gpm_{name}_f32", x32))
            nar = []
            for fmt in ("f16", "bf16"):
                _, vals = R.all_values(fmt)
                nar.append(len(narrow_check(name, fmt, vals)[1]))
            narrow = f"{nar[0]} / {nar[1]}"
        else:
            x, y = binary_inputs(name, "float64")
            r64 = measure_f64(name, (x, y), numba_call(f"gpm_{name}_f64", x, y), most=3000, random_extra=1000)
            x32, y32 = binary_inputs(name, "float32")
            r32 = measure_f32(name, (x32, y32), numba_call(f"gpm_{name}_f32", x32, y32))
            narrow = "(random pairs in the tests)"
        print(f"| {name} | {r64.max_ulp:.3f} | {r64.checked_exactly} of {r64.inputs} | "
              f"{r32.not_correctly_rounded} of {r32.inputs} | {narrow} |", flush=True)
        _ = t


if __name__ == "__main__":
    main()
