"""One plan cache, bounded, and one place that clears every cache."""
import numpy as np

import gpupromote as gp
from gpupromote.dispatch import api, folding
from gpupromote.core import caches
from gpupromote.kernel import ir


def _fill():
    gp.result_type(gp.spec("int8"), 1.5, op="add", policy="torch")
    gp.add(np.ones(3, np.float32), 2.0, policy="numpy")
    gp.add(gp.asarray(np.ones(3, np.int16)), 2, policy="numpy")


def test_clear_all_empties_every_decision_cache():
    _fill()
    assert api._plans and gp.add._fast_cache and folding._converters and ir._from_plan
    caches.clear_all()
    assert not api._plans and not gp.add._fast_cache and not folding._converters and not ir._from_plan
    _fill()   # and everything still works, resolving anew
    assert gp.result_type(gp.spec("int8"), 1.5, op="add", policy="torch") == "float32"


def test_plan_cache_is_bounded(monkeypatch):
    caches.clear_all()
    monkeypatch.setattr(api, "_PLANS_LIMIT", 8)
    for op in list(gp.OPS)[:12]:
        for d in ("int8", "int16", "float32"):
            gp.result_type(gp.spec(d), gp.spec(d), op=op, policy="numpy")
            assert len(api._plans) <= 8
    caches.clear_all()
