"""Writes gpupromote/kernel/math/_narrow_entries.py, the float16 and bfloat16 entry points of the unary
functions (``gpm_<f>_f16``, ``gpm_<f>_bf16``): the float32 path's value rounded to the format
(narrow32.py), and for the inputs, among all 65,536 of the format, where that differs from the double
path (``gpm_<f>_wide`` rounded once by ``gpm_round_<fmt>``, correctly rounded on every input:
test_narrow_exhaustive.py) the double path's result, a compare and a select each. A function that would
need more than MAX_FIXES of them gets no entry for the format and keeps the double path. Seconds.

    PYTHONPATH=. python3 tests/kernel/math/find_narrow_exceptions.py

It first writes every entry without fixes, then scans them in a fresh process, then writes what it
found. Run it after changing a float32 path or narrow32.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "gpupromote" / "kernel" / "math" / "_narrow_entries.py"
FORMATS = ("f16", "bf16")
MAX_FIXES = 8     # 2 vector operations each: beyond this the double path is as fast

_HEAD = '''"""The float16 and bfloat16 entry points of the unary functions: the float32 path's value rounded
to the format (narrow32.py), with the inputs where that is not the correctly rounded result replaced
(found over all 65,536 inputs of each format by tests/kernel/math/find_narrow_exceptions.py; generated,
do not edit). A function absent here for a format keeps the double path (too many such inputs)."""
from __future__ import annotations

from ._dsl import as_f32, as_u32, f32, public, select, u32  # noqa: F401
from .narrow32 import gpm_narrow_bf16, gpm_narrow_f16
'''


def functions() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from gpupromote.kernel.unary import UNARY
    return [real for real, _ in UNARY.values()]


def write(rows: dict | None) -> None:
    """The module; ``rows`` None: every entry without fixes (to be scanned)."""
    names = functions()
    out = [_HEAD.rstrip("\n")]
    lines, line = [], "from .float32 import ("
    used = [n for n in names if rows is None or any(len(rows[f"{n}_{fmt}"]) <= MAX_FIXES for fmt in FORMATS)]
    for raw in sorted({f"gpm_{n}_f32_raw" for n in used}):
        if len(line) + len(raw) + 2 > 110:
            lines.append(line.rstrip())
            line = "                      "
        line += raw + ", "
    out += [*lines, line.rstrip(", ") + ")"]
    for name in names:
        for fmt in FORMATS:
            fixes = [] if rows is None else rows[f"{name}_{fmt}"]
            if len(fixes) > MAX_FIXES:
                continue
            out += ["", "", "@public", f"def gpm_{name}_{fmt}(x: f32) -> f32:",
                    f"    r = gpm_narrow_{fmt}(x, gpm_{name}_f32_raw(x))"]
            if fixes:
                out.append("    b = as_u32(x)")
            out += [f"    r = select(b == u32({b:#010x}), as_f32(u32({v:#010x})), r)" for b, v in fixes]
            out.append("    return r")
    TARGET.write_text("\n".join(out) + "\n")


def scan() -> dict:
    import numpy as np
    from tests.kernel.math import _reference as R
    from tests.kernel.math._harness import numba_call
    rows = {}
    for name in functions():
        for fmt in FORMATS:
            bits, x = R.all_values(fmt)
            with np.errstate(invalid="ignore"):
                x32 = x.astype(np.float32)
            ours = numba_call(f"gpm_{name}_{fmt}", x32)
            right = numba_call(f"gpm_round_{fmt}", numba_call(f"gpm_{name}_wide", x))
            carrier = right.view(R.narrow_dtype(fmt)).astype(np.float32)
            with np.errstate(invalid="ignore"):
                ours_bits = ours.astype(R.narrow_dtype(fmt)).view(np.uint16)
            bad = np.nonzero(ours_bits != right)[0]
            rows[f"{name}_{fmt}"] = [(int(x32[i:i + 1].view(np.uint32)[0]), int(carrier[i:i + 1].view(np.uint32)[0]))
                                     for i in bad]
            print(name, fmt, len(bad), file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    if sys.argv[1:] == ["--scan"]:
        print(json.dumps(scan()))
        sys.exit(0)
    write(None)
    done = subprocess.run([sys.executable, __file__, "--scan"], stdout=subprocess.PIPE, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    found = json.loads(done.stdout)
    write(found)
    print({k: len(v) for k, v in found.items()})
