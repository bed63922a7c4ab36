"""gp.add on dask arrays against dask.array's own ``x + y``, on a 2-worker cluster, in the same run.

float16 + float32 (the issue's case: NumPy's float16 loops are slow, gpupromote's kernel reads the
float16 bits and converts them in registers), N = GP_BENCH_DASK_N elements (default 10**8) in blocks
of GP_BENCH_DASK_CHUNK (default N / 20), on ``distributed.LocalCluster(n_workers=2,
threads_per_worker=1)``. The operands are made and kept on the workers first; a round computes the
result into the workers' memory (``client.persist``) and waits for it, so both rows do the same
work but the arithmetic: NumPy's ``np.add`` per block, or one gpupromote kernel per block. A third
row is the single-process call, ``gp.add`` on the whole NumPy arrays in this process. A second
group reduces the float32 operand: ``gp.sum(y)`` (dask's tree reduction, one gpupromote reduction
kernel per block and per combine) against dask.array's own ``y.sum()``.

Rows of one group (``extra_info["impl"]``): "gpupromote" (gp.add on the cluster), "dask.array x + y"
(on the cluster) and "gp, one process"; bench/report.py prints each baseline's median over the
cluster gp.add's (> 1: the cluster gp.add is faster).

    NUMBA_NUM_THREADS=1 python -m pytest bench/bench_dask.py --benchmark-json=dask.json
    GP_BENCH_DASK_N=2e7 python -m pytest bench/bench_dask.py     # a smaller run
    python bench/report.py dask.json

Skipped without the dask extra (pip install gpupromote[dask]).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")   # the workers inherit it: one thread each

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402

da = pytest.importorskip("dask.array", reason="needs the dask extra: pip install gpupromote[dask]")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install gpupromote[dask]")

N = int(float(os.environ.get("GP_BENCH_DASK_N", "1e8")))
CHUNK = int(float(os.environ.get("GP_BENCH_DASK_CHUNK", N // 20)))
GROUP = f"dask N={N:.0e} float16+float32, 2 workers"
SUM_GROUP = f"dask N={N:.0e} sum of float32, 2 workers"
ROUNDS = int(os.environ.get("GP_BENCH_DASK_ROUNDS", "5"))


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:   # the default client while this module runs (wait() needs it)
        yield client


@pytest.fixture(scope="module")
def operands(client):
    """float16 x and float32 y, made on the workers and kept there."""
    rng = da.random.default_rng(0)
    x = rng.standard_normal(N, chunks=CHUNK, dtype=np.float32).astype(np.float16)
    y = rng.standard_normal(N, chunks=CHUNK, dtype=np.float32)
    x, y = client.persist([x, y])
    distributed.wait([x, y])
    return x, y


class _Rounds:
    """Each round computes the graph into the workers' memory and waits for it. The graph is cloned
    with new keys for every round (in the untimed setup, inputs kept): a result whose keys the
    scheduler still holds from the round before would be found in memory, not computed again."""

    def __init__(self, client, lazy, inputs):
        self.client, self.lazy, self.inputs = client, lazy, inputs
        self.graph = self.last = None
        self.count = 0

    def setup(self):
        from dask.graph_manipulation import clone
        self.last = None    # the previous result is released
        self.count += 1
        self.graph = clone(self.lazy, omit=self.inputs, seed=self.count)

    def run(self):
        self.last = self.client.persist(self.graph)
        distributed.wait(self.last)

    def bench(self, benchmark):
        benchmark.pedantic(self.run, setup=self.setup, rounds=ROUNDS, warmup_rounds=1)
        self.last = None


def test_gpupromote_on_the_cluster(benchmark, client, operands):
    x, y = operands
    lazy = gp.add(x, y)
    assert lazy.dtype == (x + y).dtype == np.float32
    head = client.compute(lazy[:1000]).result()
    assert np.array_equal(head, gp.add(*client.gather(client.compute([x[:1000], y[:1000]]))))
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["n"] = N
    _Rounds(client, lazy, [x, y]).bench(benchmark)


def test_dask_array_add_on_the_cluster(benchmark, client, operands):
    x, y = operands
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = "dask.array x + y"
    _Rounds(client, x + y, [x, y]).bench(benchmark)


def test_gpupromote_in_one_process(benchmark, client, operands):
    x, y = client.gather(client.compute(list(operands)))   # the same values, whole, in this process
    assert gp.add(x, y).dtype == np.float32
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = "gp, one process"
    benchmark.pedantic(gp.add, (x, y), rounds=ROUNDS, warmup_rounds=1)


def test_gpupromote_sum_on_the_cluster(benchmark, client, operands):
    _, y = operands
    lazy = gp.sum(y)
    assert lazy.dtype == y.sum().dtype == np.float32
    assert np.isclose(client.compute(lazy).result(), client.compute(y.sum()).result(), rtol=1e-4)
    benchmark.group = SUM_GROUP
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["n"] = N
    _Rounds(client, lazy, [y]).bench(benchmark)


def test_dask_array_sum_on_the_cluster(benchmark, client, operands):
    _, y = operands
    benchmark.group = SUM_GROUP
    benchmark.extra_info["impl"] = "dask.array y.sum()"
    _Rounds(client, y.sum(), [y]).bench(benchmark)
