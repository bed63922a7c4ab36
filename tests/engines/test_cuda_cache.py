"""The CUDA engine's disk cache of compiled kernels, with the real compile path (NVRTC, no GPU)
and a stand-in for the driver's module loader (tests/hostcuda/fake_cupy.py's RawModule, which
refuses what is not a whole cubin or PTX image, as cuModuleLoad does)."""
from __future__ import annotations

import os
import re

import pytest

from gpupromote.dispatch.api import plan_for, spec
from gpupromote.core.errors import CacheWarning
from gpupromote.engines.cuda import source as S
from gpupromote.engines.cuda import nvrtc as N
from gpupromote.engines.cuda import device as _cuda_device, modules as _cuda_modules
from tests.hostcuda import fake_cupy

pytestmark = [pytest.mark.nvrtc, pytest.mark.skipif(not N.nvrtc_available()[0], reason="NVRTC unavailable")]


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """The CUDA engine's kernel cache (_cuda_modules) with its own load_module, a fake CuPy, an
    sm_90 device and an empty cache."""
    monkeypatch.setattr(_cuda_device, "_cp", fake_cupy)
    monkeypatch.setattr(_cuda_modules, "_targets", {0: ("sm_90", True), 1: ("compute_90", False)})
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    fake_cupy.reset()
    return _cuda_modules


def _source():
    plan = plan_for("subtract", [spec("int16"), spec("float16")], policy="torch")
    return S.kernel_source(plan, ("contig", S.vector_width(plan)))


def test_kernels_are_filed_under_the_one_cache_key(engine):
    source = _source()
    module, how = engine.load_module(source, False, 0)
    assert how == "compiled"
    path = os.path.join(engine.kernel_cache_dir(), N.cache_key(source, arch="sm_90", cubin=True,
                                                               options=S.NVRTC_OPTIONS) + ".cubin")
    with open(path, "rb") as f:
        assert f.read()[:4] == b"\x7fELF"
    assert engine.load_module(source, False, 0)[1] == "disk"
    _, how = engine.load_module(source, False, 1)   # a device NVRTC has no cubin for: PTX, keyed by the driver
    ptx = os.path.join(engine.kernel_cache_dir(), N.cache_key(source, arch="compute_90", cubin=False,
                                                              options=S.NVRTC_OPTIONS, driver_version=13000) + ".ptx")
    assert how == "compiled" and os.path.isfile(ptx)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_corrupt_cached_cubin_is_dropped_and_compiled_again(engine, damage):
    source = _source()
    engine.load_module(source, False, 0)
    path = engine._cache_path(source, False, 0)[0]
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "wb") as f:
        f.write({"truncated": good[: len(good) // 2], "garbage": b"\x00" * 4096, "empty": b""}[damage])
    with pytest.warns(CacheWarning, match=re.escape(path)):
        _, how = engine.load_module(source, False, 0)
    assert how == "compiled"
    with open(path, "rb") as f:
        assert f.read() == good       # NVRTC is deterministic: the same cubin again
    assert engine.load_module(source, False, 0)[1] == "disk"
