"""Writes gpupromote/kernel/math/_narrow_entries.py, the float16 and bfloat16 entry points of the unary
functions (``gpm_<f>_f16``, ``gpm_<f>_bf16``): a float32 value of the function rounded to the format
(narrow32.py), and for the inputs, among all 65,536 of the format, where that differs from the double
path (``gpm_<f>_wide`` rounded once by ``gpm_round_<fmt>``, correctly rounded on every input:
test_narrow_exhaustive.py) the double path's result, a compare and a select each.

The float32 value is the function's lean path (``gpm_<f>_f32_lean``, lean32.py: float32 arithmetic)
where it has one and it needs at most MAX_FIXES fixes, else its float32 path (``gpm_<f>_f32_raw``, a
double evaluation). The rounding is ``gpm_narrow_<fmt>_nan_in`` where the function is a NaN only on
NaN inputs of the format, else ``gpm_narrow_<fmt>``; ``gpm_narrow_f16_carried`` (no select on x86)
where, besides, a float16 lean path gives every NaN input back as itself, quieted. A function that
would need more than MAX_FIXES fixes on both paths gets no entry for the format and keeps the
double path. Seconds.

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
do not edit; lean paths and the NaN-in roundings: see that script). A function absent here for a
format keeps the double path (too many such inputs)."""
from __future__ import annotations

from ._dsl import as_f32, as_u32, f32, public, select, u32  # noqa: F401
from .narrow32 import (gpm_narrow_bf16, gpm_narrow_bf16_nan_in, gpm_narrow_f16, gpm_narrow_f16_carried,  # noqa: F401
                       gpm_narrow_f16_nan_in)
'''


def functions() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from gpupromote.kernel.unary import UNARY
    return [real for real, _ in UNARY.values()]


def lean_functions() -> set[str]:
    sys.path.insert(0, str(ROOT))
    from gpupromote.kernel.math import lean32
    return {n[len("gpm_"):-len("_f32_lean")] for n in dir(lean32) if n.endswith("_f32_lean")}


def write(rows: dict | None) -> None:
    """The module; ``rows`` None: every entry without fixes (to be scanned), else ``rows[f"{name}_{fmt}"]``
    = (path, rounding, fixes) as scan() chose them."""
    names = functions()
    if rows is None:
        lean = lean_functions()
        rows = {f"{n}_{fmt}": ("lean" if n in lean else "raw", f"gpm_narrow_{fmt}", []) for n in names for fmt in FORMATS}
    out = [_HEAD.rstrip("\n")]
    used = {(n, rows[f"{n}_{fmt}"][0]) for n in names for fmt in FORMATS if rows[f"{n}_{fmt}"] is not None}
    for path, module in (("raw", "float32"), ("lean", "lean32")):
        lines, line = [], f"from .{module} import ("
        for fn in sorted(f"gpm_{n}_f32_{path}" for n, p in used if p == path):
            if len(line) + len(fn) + 2 > 110:
                lines.append(line.rstrip())
                line = "                      "
            line += fn + ", "
        out += [*lines, line.rstrip(", ") + ")"]
    for name in names:
        for fmt in FORMATS:
            row = rows[f"{name}_{fmt}"]
            if row is None:
                continue
            path, rounding, fixes = row
            out += ["", "", "@public", f"def gpm_{name}_{fmt}(x: f32) -> f32:",
                    f"    r = {rounding}(x, gpm_{name}_f32_{path}(x))"]
            if fixes:
                out.append("    b = as_u32(x)")
            out += [f"    r = select(b == u32({b:#010x}), as_f32(u32({v:#010x})), r)" for b, v in fixes]
            out.append("    return r")
    lean = sorted(f"gpm_{n}_{fmt}" for n in names for fmt in FORMATS if (rows[f"{n}_{fmt}"] or ("",))[0] == "lean")
    out += ["", "", "# the entries rounding a lean path: a float16 kernel that is one call of one of these runs its loop",
            "# on long calls, not a table (engines/cpu/tables.py)", f"LEAN = frozenset({{{', '.join(repr(n) for n in lean)}}})"]
    TARGET.write_text("\n".join(out) + "\n")


def _choose(name, fmt, x32, right, carrier, has_lean):
    """The first (path, rounding, fixes) with at most MAX_FIXES fixes, cheapest first, or None."""
    import numpy as np
    from tests.kernel.math import _reference as R
    from tests.kernel.math._harness import numba_call
    nan_only_on_nan = not np.isnan(carrier[~np.isnan(x32)]).any()
    roundings = [f"gpm_narrow_{fmt}_nan_in"] * nan_only_on_nan + [f"gpm_narrow_{fmt}"]
    for path in ["lean"] * has_lean + ["raw"]:
        y = numba_call(f"gpm_{name}_f32_{path}", x32)
        carried = fmt == "f16" and path == "lean" and nan_only_on_nan and _carries_nan(x32, y)
        for rounding in [f"gpm_narrow_{fmt}_carried"] * carried + roundings:
            with np.errstate(invalid="ignore"):
                ours_bits = numba_call(rounding, x32, y).astype(R.narrow_dtype(fmt)).view(np.uint16)
            bad = np.nonzero(ours_bits != right)[0]
            print(name, fmt, path, rounding, len(bad), file=sys.stderr, flush=True)
            if len(bad) <= MAX_FIXES:
                return path, rounding, [(int(x32[i:i + 1].view(np.uint32)[0]), int(carrier[i:i + 1].view(np.uint32)[0]))
                                        for i in bad]
    return None


def _carries_nan(x32, y) -> bool:
    """Whether the float32 path gives every NaN input back as itself, quieted, on this (x86) CPU:
    then the float16 entry may round with gpm_narrow_f16_carried, which lets it through."""
    import numpy as np
    nan = np.isnan(x32)
    return bool((y[nan].view(np.uint32) == (x32[nan].view(np.uint32) | np.uint32(0x00400000))).all())


def scan() -> dict:
    """For every function and format, the cheapest (path, rounding) with at most MAX_FIXES fixes and
    its fixes, or None; computed from the helpers, not from the written entries."""
    import numpy as np
    from tests.kernel.math import _reference as R
    from tests.kernel.math._accuracy import narrow_entry_bits
    lean = lean_functions()
    rows = {}
    for name in functions():
        for fmt in FORMATS:
            bits, x = R.all_values(fmt)
            with np.errstate(invalid="ignore"):
                x32 = x.astype(np.float32)
            right = narrow_entry_bits(name, fmt, x)
            carrier = right.view(R.narrow_dtype(fmt)).astype(np.float32)
            rows[f"{name}_{fmt}"] = _choose(name, fmt, x32, right, carrier, name in lean)
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
    print({k: v and (v[0], v[1][len('gpm_narrow_'):], len(v[2])) for k, v in found.items()})
