"""`make bench`: run the benchmark suites that fit this machine and print the ratio tables.

GPU suites run when CuPy sees a CUDA device; otherwise the CPU suites run with Numba. Within a
pytest-benchmark group, each implementation is tagged ``extra_info["impl"]``; bench/report.py's
table shows gpupromote's speed relative to every other implementation of the same group
(> 1.0: gpupromote is faster) and gpupromote's own goal for the case.

The summary is what this prints. pytest-benchmark's raw tables (every round's statistics, in units
pytest-benchmark picks per table) go to a file under .benchmarks/, with the JSON the summary is
made from; ``--raw`` prints them after the summary as well. Other arguments go to pytest
(``python bench/run.py -k dispatch``).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import report  # noqa: E402  (bench/report.py: the table, with gpupromote's own goals)

OUT_DIR = HERE.parent / ".benchmarks"
# Rows whose time is measured inside a child process (extra_info["per_kernel_s"]) time a
# placeholder call in the raw tables; the summary shows the measured time.
RAW_NOTE = ("# pytest-benchmark's own tables. Rows that measure in a new process (cold compile, warm load of a\n"
            "# fused chain) time a placeholder call here; bench/report.py's summary shows the time measured\n"
            "# in that process (extra_info per_kernel_s in the JSON beside this file).\n")


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device: all mean CPU
        return False


def _suites(gpu: bool) -> list[str]:
    # bench_dask.py skips without the dask extra; GP_BENCH_DASK_N sets its size (default 10**8)
    names = ["bench_resolve.py", "bench_cpu.py", "bench_fuse.py", "bench_unary.py", "bench_reduce.py",
             "bench_sanitize.py", "bench_dask.py"] + (["bench_gpu.py"] if gpu else [])
    return [str(HERE / n) for n in names if (HERE / n).exists()]


def output_paths(stamp: str) -> tuple[pathlib.Path, pathlib.Path]:
    """(the JSON, the raw tables' text file) of a run, under .benchmarks/."""
    return OUT_DIR / f"run-{stamp}.json", OUT_DIR / f"run-{stamp}-raw.txt"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    show_raw = "--raw" in argv
    argv = [a for a in argv if a != "--raw"]
    gpu = _has_gpu()
    json_path, raw_path = output_paths(time.strftime("%Y%m%d-%H%M%S"))
    OUT_DIR.mkdir(exist_ok=True)
    suites = _suites(gpu)
    print(f"== gpupromote benchmarks on {'the GPU (CuPy)' if gpu else 'the CPU (Numba)'}: "
          f"{', '.join(pathlib.Path(s).name for s in suites)}")
    print(f"   (minutes; pytest-benchmark's raw tables go to {raw_path.relative_to(HERE.parent)})", flush=True)
    # One thread unless a row says otherwise: NumPy's ufuncs, numexpr and the dask workers run one
    # each. bench_cpu.py's "threads" and "all cores" rows set gpupromote's count themselves.
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *suites,
           f"--benchmark-json={json_path}", "--benchmark-columns=median,iqr,rounds", *argv]
    with open(raw_path, "w", encoding="utf-8") as raw:
        raw.write(RAW_NOTE + "# " + " ".join(cmd) + "\n\n")
        raw.flush()
        rc = subprocess.call(cmd, env=env, cwd=HERE.parent, stdout=raw, stderr=subprocess.STDOUT)
    text = raw_path.read_text(encoding="utf-8")
    if json_path.exists():
        print("\n== speed ratios (baseline median / gpupromote median; > 1: gpupromote is faster)")
        print(report.table(json.loads(json_path.read_text())))
    if rc != 0:
        tail = "\n".join(text.splitlines()[-40:])
        print(f"\n== pytest ended with status {rc}; the end of its output ({raw_path.name} has all of it):\n{tail}")
    if show_raw:
        print(f"\n== pytest-benchmark's raw tables ({raw_path.name})\n{text}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
