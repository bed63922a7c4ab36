"""Kernels that several processes compiled into one cache run right in the next process.

Two faults of Numba's disk cache, both found on an H100 (2026-11-26: 15 workers computed the GPU
sweep's CPU references into a cold cache, and the next run read float16 / bfloat16 exp, log, sin,
... from it as garbage), both fixed in engines/cpu/cache.py:

* symbols: Numba's function ids count from 1 in every process and are part of each symbol, so
  helpers of one qualname compiled in two processes (the narrow-rounding lambdas of cos and of tan)
  got one symbol, and a process that loaded both kernels ran one helper for both. Two processes
  started together on a cold cache were enough (each compiles the same helpers first, in the same
  order, so their ids agree).
* the index: Numba names a new data file by the first number its index does not use, so processes
  that save two signatures of one function at the same moment both wrote ``<function>.1.nbc``, and
  the index that survived could name the other signature's machine code, or lose it.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# f(5) = 16 in every type; machine code compiled for another type reads the argument's bits as that
# type (and is dropped on load: the data file's key is checked)
TYPES = ["int8", "uint8", "int16", "int32", "int64", "float32", "float64", "complex128"]

MODULE = '''
from gpupromote.engines.cpu.cache import cached_njit

@cached_njit()
def f(x):
    return x * 3 + 1
'''

WORKER = '''
import json, os, sys, time
from pathlib import Path
import numpy as np
from gpupromote.engines.cpu import cache
folder, gate, names = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
cache.claim_dir(folder)
sys.path.insert(0, str(folder))
import shared_fn
Path(str(gate) + "." + str(os.getpid())).touch()
while not gate.exists():
    time.sleep(0.005)
got = {n: complex(shared_fn.f(np.dtype(n).type(5))).real for n in names}
stats = shared_fn.f.stats
print(json.dumps({"got": got, "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
'''


def _start(folder, gate, names, env):
    return subprocess.Popen([sys.executable, "-c", WORKER, str(folder), str(gate), ",".join(names)], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


OPS = """
import sys, numpy as np, ml_dtypes, gpupromote as gp
x = np.linspace(-3, 3, 64).astype(ml_dtypes.finfo("DTYPE").dtype)
print(repr({op: np.asarray(getattr(gp, op)(x, policy="numpy")).view(np.uint16).tobytes().hex()
            for op in sys.argv[1].split(",")}))
"""


@pytest.mark.parametrize("dtype, ops", [("bfloat16", ("cos", "tan"))])
def test_kernels_compiled_in_two_processes_each_run_their_own_helpers(tmp_path, dtype, ops):
    """Each op compiled by its own process into its own cold cache (the same steps before it, so the
    same function ids), the two caches merged (what two processes racing on one cold cache do, made
    deterministic), then one process loads both kernels."""
    def run(names, cache):
        env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(cache),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        done = subprocess.run([sys.executable, "-c", OPS.replace("DTYPE", dtype), ",".join(names)], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return ast.literal_eval(done.stdout.strip().splitlines()[-1])

    first, second = tmp_path / "first", tmp_path / "second"
    alone = {**run([ops[0]], first), **run([ops[1]], second)}
    for path in second.rglob("*"):       # what the first cache lacks: the second op's kernel files
        target = first / path.relative_to(second)
        if path.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    for order in (ops, ops[::-1]):
        together = run(list(order), first)
        wrong = [op for op in ops if together[op] != alone[op]]
        assert not wrong, f"{wrong}, loaded from the cache in the order {order}, ran another kernel's helper"


@pytest.mark.parametrize("round_", range(2), ids=lambda r: f"round{r}")
def test_processes_saving_one_function_at_once_leave_every_signature_right(tmp_path, round_):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "shared_fn.py").write_text(MODULE + f"\n# round {round_}\n")
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    gate = tmp_path / "go"
    procs = [_start(folder, gate, [name], env) for name in TYPES]   # one signature each
    deadline = time.monotonic() + 240
    while len(list(tmp_path.glob("go.*"))) < len(procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.touch()   # every process has imported and waits: they compile and save together
    first = [_result(p) for p in procs]
    assert all(r["misses"] == 1 for r in first), first
    assert [r["got"][n] for n, r in zip(TYPES, first)] == [16] * len(TYPES)
    later = _result(_start(folder, gate, TYPES, env))
    assert later["got"] == dict.fromkeys(TYPES, 16), \
        "a signature loaded from the cache ran another signature's machine code"
    assert (later["hits"], later["misses"]) == (len(TYPES), 0), \
        f"{later['misses']} of {len(TYPES)} signatures saved at once were lost from the index"
