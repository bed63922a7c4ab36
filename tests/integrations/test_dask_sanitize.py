"""gp.sanitize on dask arrays: the action in force when the graph is built travels with it, so the
blocks computed later, in worker threads (whose context is not the caller's), are sanitized; each
block reports as the eager call on it does (its index is the block's own)."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from tests.dispatch.test_sanitize import _chain, bits, sanitized

da = pytest.importorskip("dask.array", reason="needs the dask extra: pip install '.[dask]' in a clone")


def test_a_graph_built_under_sanitize_reports_from_its_blocks():
    x = np.array([1, 2, 127, 4, 5, 6], np.int8)
    one = np.ones(6, np.int8)
    lazy_x, lazy_one = da.from_array(x, chunks=3), da.from_array(one, chunks=3)
    with gp.sanitize("raise"):
        graph = gp.add(lazy_x, lazy_one, policy="numpy")
        fused = gp.fuse(_chain, policy="torch")(lazy_x, lazy_one, lazy_one)
    with pytest.raises(gp.LossyPromotionError) as info:
        graph.compute(scheduler="threads")   # outside the block, in worker threads: still sanitized
    assert (info.value.report.op, info.value.report.index, info.value.report.value) == ("add", 2, (127, 1))
    with pytest.raises(gp.LossyPromotionError):
        fused.compute(scheduler="threads")
    with gp.sanitize():
        quiet = gp.add(lazy_x, lazy_one, policy="numpy")
    got, reports = sanitized(lambda: quiet.compute(scheduler="sync"))
    assert bits(got) == bits(gp.add(x, one, policy="numpy"))
    assert [(r.what, r.count, r.size, r.index) for r in reports] == [("int_wrap", 1, 3, 2)]
    plain_graph = gp.add(lazy_x, lazy_one, policy="numpy")   # built outside: computed as it is
    assert bits(plain_graph.compute(scheduler="threads")) == bits(got)
