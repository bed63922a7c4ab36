"""One process of the concurrency tier: ``python -m tests.concurrency.child THREADS ROUNDS [LABEL...]``.

THREADS threads wait at a barrier, then each calls every job (tests/concurrency/jobs.py) in its
order - half of them in the listed order, half from the middle, so that several threads ask for
each cold kernel at the same moment and two kernels compile at once - ROUNDS times (the first
round finds every kernel cold). Then one thread alone calls every job again: the reference.
Prints one line of JSON: the exceptions raised (as text), the calls whose result differs from
the reference, each job's result digest, the seconds the cold round and the rest took, and the
CPU engine's compile_stats (how many entry points were compiled here, how many read from disk).
A CacheWarning is an error here (warnings.simplefilter("error")): a cold cache must not warn.
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
import traceback
import warnings


def main(argv):
    threads, rounds, labels = int(argv[0]), int(argv[1]), argv[2:]
    from gpupromote.core.errors import CacheWarning
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.simplefilter("error", CacheWarning)
    from tests.concurrency import jobs
    labels = labels or list(jobs.JOBS)
    results = [[None] * rounds for _ in range(threads)]
    errors, times = [], []
    barrier = threading.Barrier(threads)

    def work(t):
        order = labels if t % 2 == 0 else labels[len(labels) // 2:] + labels[:len(labels) // 2]
        for r in range(rounds):
            barrier.wait()
            start = time.perf_counter()
            got = {}
            for label in order:
                try:
                    got[label] = jobs.run(label)
                except BaseException as exc:  # noqa: BLE001 - every failure is reported
                    errors.append(f"thread {t} round {r} {label}: {type(exc).__name__}: {exc}\n"
                                  + "".join(traceback.format_exc(limit=-3)))
            results[t][r] = got
            if t == 0:
                times.append(time.perf_counter() - start)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    reference = {label: jobs.run(label) for label in labels}
    differ = [f"thread {t} round {r} {label}" for t in range(threads) for r in range(rounds)
              for label, got in (results[t][r] or {}).items() if got != reference[label]]
    from gpupromote.engines.cpu import engine
    digest = {label: hashlib.sha256(repr(v).encode()).hexdigest()[:16] for label, v in reference.items()}
    print(json.dumps({"errors": errors[:20], "n_errors": len(errors), "differ": differ[:20], "n_differ": len(differ),
                      "digest": digest, "cold_s": times[0] if times else None, "warm_s": sum(times[1:]),
                      "compile_stats": engine.compile_stats()}))


if __name__ == "__main__":
    main(sys.argv[1:])
