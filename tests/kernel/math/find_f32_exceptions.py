"""Finds every float32 input whose library result is not the correctly rounded value (all 2^32
inputs; about 2 to 20 minutes per function on one core) and writes gpupromote/kernel/math/_f32_fixes.py,
the table of those inputs and their correct results that the float32 entry points apply.

    PYTHONPATH=. python3 tests/kernel/math/find_f32_exceptions.py exp log ...   # results in ./f32_exceptions/*.json
    PYTHONPATH=. python3 tests/kernel/math/find_f32_exceptions.py --write        # json -> _f32_fixes.py

A scan of the library as it is finds nothing where the table is complete (that is the check). After
an algorithm changes, regenerate: move the old json files away, --write (empty fixes), scan, --write.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.kernel.math._isolation import ensure_kernel_math_importable  # noqa: E402

ensure_kernel_math_importable()

import numpy as np  # noqa: E402

OUT = Path("f32_exceptions")
CHUNK = 1 << 24
# regions where the float64 reference sits on float32 ties by construction and the library is
# exact by construction (checked by sampling in the tests): not scanned with mpmath
SKIP_SMALL = {"sigmoid": 0.0625}


def scan(name):
    from tests.kernel.math import _reference as R
    from tests.kernel.math._accuracy import _near_f32_boundary, numpy_reference
    from tests.kernel.math._harness import numba_call
    bad = []
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        ours = numba_call(f"gpm_{name}_f32", x)
        ref64 = numpy_reference(name, x)
        with np.errstate(all="ignore"):
            ref32 = ref64.astype(np.float32)
        same = (ours.view(np.uint32) == ref32.view(np.uint32)) | (np.isnan(ours) & np.isnan(ref32))
        doubt = ~same | _near_f32_boundary(ref64)
        if name in SKIP_SMALL:
            doubt &= ~(np.abs(x) < SKIP_SMALL[name])
        for i in np.nonzero(doubt)[0]:
            cr = R.round_exact(R.exact(name, float(x[i])), "f32")
            if not ((np.float32(cr) == ours[i]) or (math.isnan(cr) and math.isnan(ours[i]))):
                bad.append([int(x[i:i + 1].view(np.uint32)[0]), int(np.array([cr], np.float32).view(np.uint32)[0])])
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(bad))
    print(name, len(bad), flush=True)


def write():
    from tests.kernel.math._inputs import UNARY
    rows = {name: [] for name in UNARY}
    for p in sorted(OUT.glob("*.json")):
        rows[p.stem] = json.loads(p.read_text())
    lines = ['"""float32 inputs whose double evaluation lies too close to a float32 rounding boundary',
             "(found by tests/kernel/math/find_f32_exceptions.py over all 2^32 inputs; generated, do not edit):",
             'each float32 entry point replaces its result for these inputs by the correctly rounded one."""',
             "from __future__ import annotations", "",
             "from ._dsl import as_f32, as_u32, f32, helper, select, u32", ""]
    for name in sorted(rows):
        lines += ["", "@helper", f"def gpm_fix_{name}_f32(x: f32, r: f32) -> f32:"]
        if rows[name]:
            lines.append("    b = as_u32(x)")
        for a, c in rows[name]:
            lines.append(f"    r = select(b == u32({a:#010x}), as_f32(u32({c:#010x})), r)")
        lines.append("    return r")
        lines.append("")
    src = "\n".join(lines).rstrip("\n") + "\n"
    if not any(rows.values()):
        src = src.replace(", u32", "")
    (ROOT / "gpupromote" / "kernel" / "math" / "_f32_fixes.py").write_text(src)
    print({k: len(v) for k, v in rows.items()})


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        for n in sys.argv[1:]:
            scan(n)
