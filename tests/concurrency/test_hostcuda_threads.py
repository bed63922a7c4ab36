"""The concurrency tier on the CUDA engine: 8 threads ask for the same cold CUDA kernels at once, run
on the host tier (tests/hostcuda: the generated CUDA built with g++ behind the real launcher and
a stand-in CuPy). The engine's tables of loaded kernels and launchers start empty in this process
(cold), whatever the host builder has on disk; every call must succeed and every result equal the
one-thread result bit for bit. Covers the compiled dispatcher (gp.add on CuPy arrays), the Python
path (``__wrapped__``), a strided launch, a unary op and a gp.fuse chain.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import gpupromote as gp
from tests import hostcuda
from tests.hostcuda.support import HOSTCUDA_MARKS, host_result

pytestmark = HOSTCUDA_MARKS

THREADS, ROUNDS = 8, 20


def test_threads_racing_for_cold_cuda_kernels():
    warnings.simplefilter("ignore", RuntimeWarning)
    with hostcuda.installed() as cp:
        rng = np.random.default_rng(25)
        f = rng.standard_normal(300) * 10
        x = {"i8": cp.asarray(f.astype(np.int8)), "u16": cp.asarray(np.abs(f).astype(np.uint16)),
             "f16": cp.asarray(f.astype(np.float16)), "f32": cp.asarray(f.astype(np.float32)),
             "m": cp.asarray(f[:288].reshape(12, 24)), "big": cp.asarray(rng.standard_normal((300, 200)))}
        fused = gp.fuse(lambda a, b: a * b + 1)
        jobs = {"add i8 u16 (compiled)": lambda: gp.add(x["i8"], x["u16"]),
                "multiply f16 f32 (compiled)": lambda: gp.multiply(x["f16"], x["f32"]),
                "add f32 i8 (Python path)": lambda: gp.add.__wrapped__(x["f32"], x["i8"]),
                "subtract transposed 2.5 (strided)": lambda: gp.subtract(x["m"].T, 2.5),
                # long enough that launches of one kernel overlap (the host tier's launch geometry
                # was shared by all threads: 206 of 240 such results differed before it was thread-local)
                "subtract transposed 300x200 (strided, long)": lambda: gp.subtract(x["big"].T, 2.5),
                "exp f32 (unary)": lambda: gp.exp(x["f32"]),
                "fuse a*b+1": lambda: fused(x["f16"], x["i8"])}
        labels = list(jobs)
        results, errors = {}, []
        barrier = threading.Barrier(THREADS)

        def work(t):
            order = labels if t % 2 == 0 else labels[3:] + labels[:3]
            for r in range(ROUNDS):
                barrier.wait()
                for label in order:
                    try:
                        dtype, values = host_result(jobs[label](), cp)
                        results[(t, r, label)] = (dtype, values.shape, values.tobytes())
                    except Exception as exc:  # noqa: BLE001 - every failure is reported
                        errors.append(f"thread {t} round {r} {label}: {type(exc).__name__}: {exc}")

        pool = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert not errors, f"{len(errors)} calls raised, e.g.\n" + "\n".join(errors[:5])
        reference = {}
        for label in labels:
            dtype, values = host_result(jobs[label](), cp)
            reference[label] = (dtype, values.shape, values.tobytes())
        differ = [key for key, got in results.items() if got != reference[key[2]]]
        assert not differ, f"{len(differ)} results differ from one thread's, e.g. {differ[:5]}"
        assert len(results) == THREADS * ROUNDS * len(labels)
