"""The GPU check of the owned math library (run by hand on a machine with an NVIDIA GPU and CuPy):
every public entry point, compiled by NVRTC through CuPy and run on the GPU, against the Numba
rendering on the CPU, bit for bit, on the inputs of the tests (GP_MATH_SAMPLES per set; every
float16 and bfloat16 value for the _wide entry points).

    PYTHONPATH=. GP_MATH_SAMPLES=20000 python3 tests/kernel/math/gpu_check.py [--out DIR] [--dry]

--dry compiles the kernels with NVRTC (cuda-bindings) and runs nothing on a GPU. Writes
gpu_check.json (per entry point: inputs, mismatches, examples) into --out.

The kernels are compiled with the CUDA engine's NVRTC options (engines/cuda/source.py's
NVRTC_OPTIONS: -fmad=false, no -ftz) and loaded from the binary, never through
``cupy.RawModule(code=...)``: CuPy appends -ftz=true to every compile it makes, and the float32 and
complex64 entry points then flush subnormals (the first run on an H200, 2026-11-26: 6,552 mismatches,
every one a float32 subnormal input, output or intermediate; none in float64 or the narrow formats).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.kernel.math._isolation import ensure_kernel_math_importable  # noqa: E402

ensure_kernel_math_importable()

import numpy as np  # noqa: E402

C = {"f64": "double", "f32": "float", "u16": "gpm_u16", "u8": "gpm_u8"}


def _names():
    from gpupromote.kernel.math import entry_points
    return list(entry_points())


def _inputs(name):
    from tests.kernel.math import _reference as R
    from tests.kernel.math._harness import signature
    from tests.kernel.math._inputs import binary_inputs, unary_inputs
    pts, rts, is_tuple = signature(name)
    base, _, kind = name[len("gpm_"):].rpartition("_")
    if name.startswith("gpm_round_"):
        _, vals = R.all_values(name[len("gpm_round_"):])
        rng = np.random.default_rng(1)
        return (np.concatenate([vals, rng.standard_normal(20000) * 10.0 ** rng.integers(-40, 40, 20000)]),)
    if kind == "wide":
        v = np.concatenate([R.all_values("f16")[1], R.all_values("bf16")[1]])
        if len(pts) == 1:
            return (v,)
        rng = np.random.default_rng(5)
        return rng.choice(v, 50000), rng.choice(v, 50000)
    if kind in ("f16", "bf16"):     # the narrow entry points: every value of the format, as float32
        with np.errstate(invalid="ignore"):
            return (R.all_values(kind)[1].astype(np.float32),)
    ft = {"f64": "float64", "f32": "float32", "c128": "float64", "c64": "float32"}[kind]
    if kind in ("c128", "c64"):
        rng = np.random.default_rng(9)
        n = int(os.environ.get("GP_MATH_SAMPLES", "20000"))
        mags = np.exp(rng.uniform(-700 if ft == "float64" else -85, 700 if ft == "float64" else 85, (len(pts), n)))
        parts = [np.concatenate([m * rng.choice([-1, 1], n), rng.uniform(-3, 3, n),
                                 [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]]).astype(ft) for m in mags]
        if base == "cpow":
            parts[2] = np.where(np.arange(len(parts[2])) % 2 == 0, np.round(parts[2] % 20 - 10), parts[2]).astype(ft)
            parts[3] = np.where(np.arange(len(parts[3])) % 2 == 0, 0.0, parts[3]).astype(ft)
        return tuple(parts)
    if len(pts) == 1:
        return (unary_inputs(base, ft),)
    return binary_inputs(base, ft)


def _cpu(names):
    """Numba results for some entry points (one worker process)."""
    from tests.kernel.math._harness import numba_call
    out = {}
    for n in names:
        args = _inputs(n)
        r = numba_call(n, *args)
        out[n] = r if isinstance(r, tuple) else (r,)
    return out


def _kernel_source():
    from gpupromote.kernel.math import cuda_source, entry_points
    parts = [cuda_source()]
    for name, (pts, rt) in entry_points().items():
        rts = rt if isinstance(rt, tuple) else (rt,)
        ins = [f"const {C[t]}* in{k}" for k, t in enumerate(pts)]
        outs = [f"{C[t]}* out{k}" for k, t in enumerate(rts)]
        args = ", ".join(f"in{k}[i]" for k in range(len(pts)))
        if isinstance(rt, tuple):
            body = f"{name}_out({args}, " + ", ".join(f"&out{k}[i]" for k in range(len(rts))) + ");"
        else:
            body = f"out0[i] = {name}({args});"
        parts.append(f'extern "C" __global__ void k_{name}({", ".join(ins + outs)}, long long n) {{\n'
                     f"    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                     f"    if (i < n) {{ {body} }}\n}}\n")
    return "\n".join(parts)


# The CUDA engine's options (engines/cuda/source.py), written here too: this check imports only the
# math library when the package's top level cannot be imported (tests/kernel/math/_isolation.py)
NVRTC_OPTIONS = ("--std=c++17", "-fmad=false")


def _nvrtc(src, arch, cubin):
    """NVRTC through cuda-bindings with NVRTC_OPTIONS: (result, log, PTX or cubin bytes)."""
    from cuda.bindings import nvrtc
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"gpm_check.cu", 0, [], [])
    opts = [o.encode() for o in NVRTC_OPTIONS] + [f"--gpu-architecture={arch}".encode()]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, n = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * max(n, 2)   # never the shared one-byte b" ": NVRTC writes its NUL into it
    nvrtc.nvrtcGetProgramLog(prog, log)
    out = None
    if res == nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size_fn, get_fn = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin else
                           (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
        _, size = size_fn(prog)
        out = b" " * max(size, 2)
        get_fn(prog, out)
        out = out[:size]
    return res, log.decode(errors="replace"), out


def _gpu_module(src, out_dir):
    """A cupy.RawModule of ``src`` compiled with NVRTC_OPTIONS for this device (a cubin for its arch
    when NVRTC knows it, else PTX), loaded from a file."""
    import cupy as cp
    from cuda.bindings import nvrtc
    cc = int(cp.cuda.Device().compute_capability)
    _, archs = nvrtc.nvrtcGetSupportedArchs()
    cubin = cc in archs
    arch = f"sm_{cc}" if cubin else f"compute_{max([a for a in archs if a <= cc] or [min(archs)])}"
    res, log, binary = _nvrtc(src, arch, cubin)
    if binary is None:
        raise RuntimeError(f"NVRTC failed ({res}): {log[-4000:]}")
    path = Path(out_dir) / ("gpm_check.cubin" if cubin else "gpm_check.ptx")
    path.write_bytes(binary)
    return cp.RawModule(path=str(path)), arch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--dry", action="store_true")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    a = ap.parse_args()
    t0 = time.time()
    names = _names()
    src = _kernel_source()
    report = {"entry_points": len(names), "source_bytes": len(src)}
    if a.dry:
        res, log, binary = _nvrtc(src, "sm_90", True)
        print("nvrtc", res, log[-2000:], f"cubin {len(binary or b'')} bytes", f"{time.time() - t0:.1f}s")
        return
    import cupy as cp
    from tests.kernel.math._harness import NP, signature
    # CPU side in parallel (Numba compiles per process)
    chunks = [names[k::a.workers] for k in range(a.workers)]
    with ProcessPoolExecutor(a.workers) as ex:
        futs = [ex.submit(_cpu, c) for c in chunks if c]
        tmp = tempfile.mkdtemp(prefix="gpm_check_")
        mod, report["arch"] = _gpu_module(src, tmp)
        report["nvrtc_options"] = list(NVRTC_OPTIONS)
        t1 = time.time()
        gpu = {}
        for n in names:
            pts, rts, _ = signature(n)
            args = [cp.asarray(np.ascontiguousarray(x, dtype=NP[t])) for x, t in zip(_inputs(n), pts)]
            m = args[0].shape[0]
            outs = [cp.empty(m, dtype=NP[t]) for t in rts]
            mod.get_function(f"k_{n}")(((m + 255) // 256,), (256,), (*args, *outs, np.int64(m)))
            gpu[n] = tuple(o.get() for o in outs)
        cp.cuda.Device().synchronize()
        report["gpu_compile_and_run_s"] = round(time.time() - t1, 1)
        cpu = {}
        for f in futs:
            cpu.update(f.result())
    bad_total = 0
    per = {}
    for n in names:
        ins = _inputs(n)
        mism = 0
        ex_ = []
        for g, c in zip(gpu[n], cpu[n]):
            ug = g.view(np.dtype(f"u{g.dtype.itemsize}"))
            uc = c.view(np.dtype(f"u{c.dtype.itemsize}"))
            idx = np.nonzero(ug != uc)[0]
            mism += len(idx)
            ex_ += [([float(x[i]) for x in ins], float(g[i]), float(c[i])) for i in idx[:3]]
        per[n] = {"inputs": int(len(ins[0])), "mismatches": int(mism), "examples": ex_[:3]}
        bad_total += mism
    report["mismatches_total"] = bad_total
    report["per_entry_point"] = per
    report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    report["wall_s"] = round(time.time() - t0, 1)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "gpu_check.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "per_entry_point"}))
    for n, r in per.items():
        if r["mismatches"]:
            print(n, r)


if __name__ == "__main__":
    main()
