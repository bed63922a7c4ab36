"""The concurrency tier: many threads, and many processes, asking for the same cold kernels at once.

A server or a data loader warms up on several threads; several workers share one kernel cache. A
kernel module must never be seen half-loaded by another thread (issue 25: AttributeError
"module '_gpk_...' has no attribute 'flat'"), an entry point must be compiled once, and the
results must be those of one thread, bit for bit.

* ``test_threads_racing_for_cold_kernels``: one process with a cache folder of its own (every
  kernel cold): 8 threads x 20 jobs (tests/concurrency/jobs.py: binary ops on the compiled
  dispatcher and on the Python path, unary ops, gp.fuse chains) x 20 rounds, the first of which
  compiles. No exception; every result equal to the one-thread result.
* ``test_processes_sharing_one_cold_cache``: 3 processes (2 threads each) compile the same cold
  kernels into one cache folder at once: the same results in each; a fourth process then finds
  every entry point on disk (nothing compiled).

GP_CONCURRENCY_THREADS / GP_CONCURRENCY_ROUNDS / GP_CONCURRENCY_PROCESSES make the runs larger
(defaults 8 / 20 / 3, about half a minute on two cores).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.concurrency import jobs

REPO = Path(__file__).resolve().parents[2]
THREADS = int(os.environ.get("GP_CONCURRENCY_THREADS", "8"))
ROUNDS = int(os.environ.get("GP_CONCURRENCY_ROUNDS", "20"))
PROCESSES = int(os.environ.get("GP_CONCURRENCY_PROCESSES", "3"))


def _child_env(cache: Path) -> dict:
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def _start(cache: Path, threads: int, rounds: int, labels=()):
    return subprocess.Popen([sys.executable, "-m", "tests.concurrency.child", str(threads), str(rounds), *labels],
                            env=_child_env(cache), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _report(proc) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _clean(report, who="the child"):
    assert report["n_errors"] == 0, f"{who}: {report['n_errors']} calls raised, e.g.\n" + "\n".join(report["errors"])
    assert report["n_differ"] == 0, f"{who}: {report['n_differ']} results differ from one thread's: {report['differ']}"


def test_the_jobs_are_twenty_distinct_kernels():
    assert len(jobs.JOBS) == 20
    labels = list(jobs.JOBS)
    assert any("compiled" in s for s in labels) and any("Python path" in s for s in labels)
    assert any("unary" in s for s in labels) and any(s.startswith("fuse") for s in labels)


def test_threads_racing_for_cold_kernels(tmp_path):
    report = _report(_start(tmp_path / "cache", THREADS, ROUNDS))
    _clean(report)
    assert set(report["digest"]) == set(jobs.JOBS)
    assert report["compile_stats"]["loaded"] == 0, "the cache folder was fresh: every kernel was cold"
    print(f"\n{THREADS} threads x {len(jobs.JOBS)} cold kernels x {ROUNDS} rounds: cold round "
          f"{report['cold_s']:.1f} s, the other rounds {report['warm_s']:.3f} s")


def test_processes_sharing_one_cold_cache(tmp_path):
    cache = tmp_path / "cache"
    labels = list(jobs.JOBS)[::3]   # a kernel of each kind, fewer: every process compiles each one
    procs = [_start(cache, 2, 3, labels) for _ in range(PROCESSES)]
    reports = [_report(p) for p in procs]
    for k, report in enumerate(reports):
        _clean(report, f"process {k}")
    assert all(r["digest"] == reports[0]["digest"] for r in reports), "every process computes the same results"
    warm = _report(_start(cache, 2, 1, labels))
    _clean(warm, "the warm process")
    assert warm["digest"] == reports[0]["digest"]
    stats = warm["compile_stats"]
    assert stats["compiled"] == 0 and stats["loaded"] > 0, f"the cache the racing processes wrote is whole: {stats}"
