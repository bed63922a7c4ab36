"""`make bench`: run the benchmark suites that fit this machine and print ratio tables.

GPU suites run when CuPy sees a CUDA device; otherwise the CPU suites run with Numba. Within a
pytest-benchmark group, each implementation is tagged ``extra_info["impl"]``; bench/report.py's
table shows gpupromote's speed relative to every other implementation of the same group
(> 1.0: gpupromote is faster) and the goal the issues set.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import report  # noqa: E402  (bench/report.py: the table, with the issues' goals)


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device: all mean CPU
        return False


def _suites(gpu: bool) -> list[str]:
    # bench_dask.py skips without the dask extra; GP_BENCH_DASK_N sets its size (default 10**8)
    names = ["bench_resolve.py", "bench_cpu.py", "bench_fuse.py", "bench_dask.py"] + (["bench_gpu.py"] if gpu else [])
    return [str(HERE / n) for n in names if (HERE / n).exists()]


def main(argv=None) -> int:
    gpu = _has_gpu()
    print(f"== gpupromote benchmarks on {'the GPU (CuPy)' if gpu else 'the CPU (Numba)'}")
    out = pathlib.Path(tempfile.mkdtemp()) / "bench.json"
    # One thread unless a row says otherwise: NumPy's ufuncs, numexpr and the dask workers run one
    # each. bench_cpu.py's "threads" and "all cores" rows set gpupromote's count themselves.
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_suites(gpu),
           f"--benchmark-json={out}", "--benchmark-columns=median,iqr,rounds", *(argv or sys.argv[1:])]
    rc = subprocess.call(cmd, env=env, cwd=HERE.parent)
    if out.exists():
        print("\n== speed ratios (baseline median / gpupromote median; > 1: gpupromote is faster)")
        print(report.table(json.loads(out.read_text())))
    return rc


if __name__ == "__main__":
    sys.exit(main())
