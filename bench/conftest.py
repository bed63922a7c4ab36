"""Fixtures the benchmark suites share."""
import pytest


@pytest.fixture
def pool_off(monkeypatch):
    """gpupromote's CPU output pool off for one benchmark (what GPUPROMOTE_CPU_POOL_MB=0 sets): its
    outputs and kept intermediates then come from np.empty each call, as NumPy's do."""
    from gpupromote.engines.cpu import pool
    monkeypatch.setattr(pool, "_POOL_CAP", 0)
