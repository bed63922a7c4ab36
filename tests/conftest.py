"""Test-session setup, done before any test module imports gpupromote.

The suite compiles its kernels into a cache of its own, one per checkout (``.cache/`` at the top
of the repository, git-ignored), never the user's ``~/.cache/gpupromote``: the tests damage and
rewrite cache files (in temporary copies), and a warm cache survives from one ``make test`` to the
next, which keeps CI time down. ``GP_TEST_CACHE_DIR`` puts it elsewhere (a CI cache folder). The
host CUDA tier's libraries are kept there as well (``GP_HOSTCUDA_CACHE`` overrides).
"""
import os
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
_CACHE = Path(os.environ.get("GP_TEST_CACHE_DIR") or _ROOT / ".cache")

os.environ["GPUPROMOTE_CACHE_DIR"] = str(_CACHE / "gpupromote")
os.environ["CUPY_CACHE_DIR"] = str(_CACHE / "cupy")
# the host CUDA tier's g++ builds (tests/hostcuda/builder.py) go there too, so that a fresh checkout
# starts cold and measures what CI pays, and `make clean` plus .cache removal really is a clean start
os.environ.setdefault("GP_HOSTCUDA_CACHE", str(_CACHE / "hostcuda"))


# GP_TEST_MEMORY_REPORT=path: after each test module, the process's resident memory now and at
# its peak, and the module's time, written as a table at the end of the run (what holds the
# memory of `make test`; off by default).
_REPORT = os.environ.get("GP_TEST_MEMORY_REPORT")
if _REPORT:
    import resource
    import time

    _rows, _state = [], {"module": None, "start": time.perf_counter()}

    def _rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _close_module():
        if _state["module"] is not None:
            now = time.perf_counter()
            _rows.append((_state["module"], _rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          now - _state["start"]))
            _state["start"] = now

    def pytest_runtest_setup(item):
        module = item.nodeid.split("::")[0]
        if module != _state["module"]:
            _close_module()
            _state["module"] = module

    def pytest_sessionfinish(session):
        _close_module()
        with open(_REPORT, "w") as f:
            f.write("| module | RSS after (MB) | peak so far (MB) | time (s) |\n|---|---|---|---|\n")
            for module, rss, peak, seconds in _rows:
                f.write(f"| {module} | {rss:.0f} | {peak:.0f} | {seconds:.1f} |\n")


@pytest.fixture(autouse=True)
def _fuse_stages_at_every_size(request, monkeypatch):
    """gp.fuse runs a function with reductions on small NumPy arrays as its eager calls
    (dispatch/fuse.py ``STAGED_EAGER_MAX``: faster there, and the same bits). The suite's tests of
    the stages use small arrays, so here they stage at every size; a test marked ``staged_eager``
    keeps the default."""
    if request.node.get_closest_marker("staged_eager") is None:
        from gpupromote.dispatch import fuse
        monkeypatch.setattr(fuse, "STAGED_EAGER_MAX", -1)
