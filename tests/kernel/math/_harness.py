"""What the tests of the owned math library share: both renderings run over numpy arrays.

* ``numba_call(name, *arrays)``: the Numba rendering of an entry point as the CPU engine's kernels
  call it (flattened where straight-line, kernel/math/_flatten.py), in an njit loop;
* ``host_call(name, *arrays)``: the C++ rendering compiled by g++ (-std=c++17 -ffp-contract=off
  -fno-fast-math) into a shared library of array loops, loaded with ctypes. The library is built
  once per source text (cached under the test cache folder);
* inputs and outputs are numpy arrays of the entry point's types; tuple results come back as a
  tuple of arrays.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ._isolation import ensure_kernel_math_importable

ensure_kernel_math_importable()
from gpupromote.kernel.math._cpp_render import signature as _library_signature  # noqa: E402
from gpupromote.kernel.math import cuda_source, entry_points, numba_functions  # noqa: E402
from gpupromote.kernel.math.llvm_binding import intrinsic_for  # noqa: E402

NP = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "u64": np.uint64, "i32": np.int32,
      "u32": np.uint32, "u16": np.uint16, "u8": np.uint8}
C = {"f64": "double", "f32": "float", "i64": "gpm_i64", "u64": "gpm_u64", "i32": "gpm_i32",
     "u32": "gpm_u32", "u16": "gpm_u16", "u8": "gpm_u8"}
GXX_FLAGS = ["-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-O2", "-fPIC", "-shared"]

_ROOT = Path(__file__).resolve().parents[3]
_CACHE = Path(os.environ.get("GP_TEST_CACHE_DIR") or _ROOT / ".cache") / "gpm_math"


def signature(name):
    """(parameter types, return types, whether it returns a tuple) of a public function or a helper."""
    entry_points()   # registers every function
    pts, rt = _library_signature(name)[1:]
    return pts, (rt if isinstance(rt, tuple) else (rt,)), isinstance(rt, tuple)


def _wrapper(name):
    pts, rts, is_tuple = signature(name)
    ins = [f"const {C[t]}* in{k}" for k, t in enumerate(pts)]
    outs = [f"{C[t]}* out{k}" for k, t in enumerate(rts)]
    args = ", ".join(f"in{k}[i]" for k in range(len(pts)))
    if is_tuple:
        body = f"{name}_out({args}, " + ", ".join(f"&out{k}[i]" for k in range(len(rts))) + ");"
    else:
        body = f"out0[i] = {name}({args});"
    return (f'extern "C" void loop_{name}({", ".join(ins + outs)}, long n) {{\n'
            f"    for (long i = 0; i < n; ++i) {{ {body} }}\n}}\n")


@functools.lru_cache(maxsize=1)
def host_library():
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    names = list(entry_points())
    src = cuda_source() + "\n" + "\n".join(_wrapper(n) for n in names)
    key = hashlib.sha256((src + " ".join(GXX_FLAGS)).encode()).hexdigest()[:20]
    _CACHE.mkdir(parents=True, exist_ok=True)
    so = _CACHE / f"gpm_{key}.so"
    if not so.exists():
        cpp = _CACHE / f"gpm_{key}.cpp"
        cpp.write_text(src)
        tmp = so.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([gxx, *GXX_FLAGS, str(cpp), "-o", str(tmp)], check=True, capture_output=True, text=True)
        os.replace(tmp, so)
    return ctypes.CDLL(str(so))


def host_call(name, *arrays):
    lib = host_library()
    pts, rts, is_tuple = signature(name)
    ins = [np.ascontiguousarray(a, dtype=NP[t]) for a, t in zip(arrays, pts)]
    n = ins[0].shape[0]
    outs = [np.empty(n, dtype=NP[t]) for t in rts]
    fn = getattr(lib, f"loop_{name}")
    fn(*[a.ctypes.data_as(ctypes.c_void_p) for a in ins + outs], ctypes.c_long(n))
    return tuple(outs) if is_tuple else outs[0]


@functools.lru_cache(maxsize=None)
def numba_loop(name, flat=True, llvm=False):
    from numba import njit
    pts, rts, is_tuple = signature(name)
    fn = intrinsic_for(name) if llvm else numba_functions(flat=flat)[name]
    ins = [f"in{k}" for k in range(len(pts))]
    outs = [f"out{k}" for k in range(len(rts))]
    call = f"fn({', '.join(a + '[i]' for a in ins)})"
    if is_tuple:
        body = f"        r = {call}\n" + "".join(f"        out{k}[i] = r[{k}]\n" for k in range(len(rts)))
    else:
        body = f"        out0[i] = {call}\n"
    src = f"def loop({', '.join(ins + outs)}):\n    for i in range(in0.shape[0]):\n{body}"
    g = {"fn": fn}
    exec(src, g)
    return njit(error_model="numpy")(g["loop"])


def assert_same_bits(args, a, b):
    """a and b (results on the inputs ``args``) are the same bits, NaN payloads included; the first
    differences named with their inputs."""
    ua = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    ub = b.view(np.dtype(f"u{b.dtype.itemsize}"))
    bad = np.nonzero(ua != ub)[0]
    assert len(bad) == 0, [(tuple(x[i] for x in args), a[i], b[i]) for i in bad[:5]]


def numba_call(name, *arrays, flat=True, llvm=False):
    """``name`` over arrays with Numba: as the function is written, flattened (``flat``), or as the
    instructions the CPU kernels write into their loops (``llvm``: kernel/math/llvm_binding.py)."""
    pts, rts, is_tuple = signature(name)
    ins = [np.ascontiguousarray(a, dtype=NP[t]) for a, t in zip(arrays, pts)]
    n = ins[0].shape[0]
    outs = [np.empty(n, dtype=NP[t]) for t in rts]
    numba_loop(name, flat, llvm)(*ins, *outs)
    return tuple(outs) if is_tuple else outs[0]
