"""Whether calls stay on the compiled dispatcher (gpupromote/dispatch/fastpath/ops.c)."""
from __future__ import annotations


def assert_all_served(calls) -> None:
    """Run each call twice (the first makes its key's entry) and hold the second round to the
    compiled path: every call served there, none handed to the Python function (op_stats())."""
    from gpupromote.dispatch import _fastpath
    for call in calls:
        call()
    before = _fastpath.op_stats()
    for call in calls:
        call()
    after = _fastpath.op_stats()
    assert (after["served"] - before["served"], after["declined"] - before["declined"]) == (len(calls), 0)
