"""`make test`: the suite as a few pytest processes, run side by side (GP_TEST_JOBS at a time, default
the number of cores, at most 2), each process's output kept in .cache/test-logs/<group>.log.

Why processes: the kernels a process compiles stay in its memory until it exits (Numba does not free
machine code), so one process holding every tier's kernels reached 8 GB; a group holds one wing's.
Why side by side: most of the time is single-threaded (Numba and g++ compiles), so two groups on two
cores take about half the time of one after the other.

Each line printed is one group finished: its pytest summary, wall time and peak resident memory
(from wait4: the group's largest process). A failing group's log is printed whole at the end, and the
exit status is 1 if any group failed. GP_TEST_GROUPS=name,name runs only those groups.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# gp.fuse's property tests, the differential fuzz and the reductions: a group of their own (each draws
# new kernels; the reductions' in the dispatch group took it from 2.5 to 3.1 GB on a cold cache)
_FUSE = sorted(str(p.relative_to(ROOT)) for pattern in ("test_fuse*.py", "test_reduce*.py", "test_fuzz.py")
               for p in (ROOT / "tests" / "dispatch").glob(pattern))

# the CUDA engine's source and NVRTC tests and the kernel caches' tests, apart from the CPU engine's
# values (together they reached 3 GB on a cold cache)
_ENGINE_TOOLS = sorted(str(p.relative_to(ROOT)) for pattern in ("test_cuda_*.py", "test_nvrtc*.py", "test_cache*.py")
                       for p in (ROOT / "tests" / "engines").glob(pattern))

# the CPU engine's values in two: the op sweeps, and the specials, reductions and math helpers (one
# process with both reached 2.95 GB on a cold cache)
_ENGINE_VALUES = ["tests/engines/test_specials.py", "tests/engines/test_reduce.py", "tests/engines/test_numba_math.py"]

# (name, pytest arguments): the longest first, so that the two lanes end close together
GROUPS = [
    ("hostcuda", ["tests/hostcuda"]),
    ("engines", ["tests/engines", *(f"--ignore={p}" for p in _ENGINE_TOOLS + _ENGINE_VALUES)]),
    ("engines-cuda-cache", _ENGINE_TOOLS),
    ("engines-values", _ENGINE_VALUES),
    ("fuse-fuzz", _FUSE),
    ("dispatch", ["tests/dispatch", *(f"--ignore={p}" for p in _FUSE)]),
    ("oracle", ["tests/oracle", "--ignore=tests/oracle/test_cpu_oracle.py"]),
    ("rest", ["tests"] + [f"--ignore=tests/{d}" for d in ("oracle", "engines", "hostcuda", "dispatch", "kernel")]),
    ("oracle-cpu", ["tests/oracle/test_cpu_oracle.py"]),
    ("kernel", ["tests/kernel"]),
]


def _summary(log: Path) -> str:
    """pytest's last line (``=== 12 passed, 3 skipped in 40.1s ===``), without the rulers."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def main(argv: list[str]) -> int:
    jobs = int(os.environ.get("GP_TEST_JOBS") or min(2, os.cpu_count() or 1))
    logs = ROOT / ".cache" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    only = [g for g in os.environ.get("GP_TEST_GROUPS", "").split(",") if g]   # e.g. GP_TEST_GROUPS=engines,kernel
    unknown = set(only) - {name for name, _ in GROUPS}
    if unknown:
        raise SystemExit(f"GP_TEST_GROUPS: unknown group(s) {sorted(unknown)}; groups: {[n for n, _ in GROUPS]}")
    groups = [g for g in GROUPS if not only or g[0] in only]
    pending, running, failed = list(groups), {}, []
    start = time.perf_counter()
    while pending or running:
        while pending and len(running) < jobs:
            name, args = pending.pop(0)
            log = logs / f"{name}.log"
            with open(log, "w") as out:
                # --durations: each log ends with its slowest tests, where a longer run shows first
                proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "--durations=15", *args, *argv], cwd=ROOT,
                                        stdout=out, stderr=subprocess.STDOUT)
            running[proc.pid] = (name, log, time.perf_counter())
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        name, log, began = running.pop(pid)
        rss_mb = usage.ru_maxrss / 1024
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            failed.append((name, log))
        print(f"{'ok  ' if code == 0 else 'FAIL'} {name:<17} {time.perf_counter() - began:6.0f} s  "
              f"peak {rss_mb:5.0f} MB  {_summary(log)}", flush=True)
    print(f"make test: {len(groups) - len(failed)} of {len(groups)} groups passed in "
          f"{time.perf_counter() - start:.0f} s ({jobs} at a time; logs in {logs.relative_to(ROOT)})")
    for name, log in failed:
        print(f"\n===== {name} ({log.relative_to(ROOT)}) =====\n{log.read_text(errors='replace')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
