"""The kernel caches on a full disk, or with a directory where a kernel file should be (issue 25).

Every op still computes: what cannot be cached is compiled in memory (the CPU engine's generated
module, Numba's machine code; the CUDA engine's cubin is loaded from memory), after exactly one
``CacheWarning`` that names the cause ("the disk is full"). The next process on a freed disk writes
the cache again, and a process after it compiles nothing.

The full disk is real where the machine allows it (a small tmpfs mounted in a user and mount
namespace, ``unshare -Urm``, filled to the last block); everywhere, ENOSPC is also injected at the
write: files opened for writing in the cache folder are opened on /dev/full, whose writes fail with
ENOSPC as a full disk's do. Each scenario runs in fresh processes, each with its own cache folder.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

# A child process: the same ops every time (binary on the compiled dispatcher with its native entry
# point, the Python path on a strided view, unary, a fused chain); prints its results, warnings, the
# CPU engine's compile statistics and the kernel modules on disk. FULL=1: writes in the cache folder
# fail with ENOSPC (opened on /dev/full). DIRS=1: a directory stands where each kernel file goes.
_CHILD = textwrap.dedent("""
    import builtins, json, os, sys, tempfile, warnings
    cache = os.environ["GPUPROMOTE_CACHE_DIR"]
    if os.environ.get("FULL"):
        def _in_cache(path):
            return os.path.abspath(os.fspath(path)).startswith(cache + os.sep)
        real_open, real_mkstemp = builtins.open, tempfile.mkstemp
        def full_open(file, mode="r", *args, **kwargs):
            if isinstance(file, (str, bytes, os.PathLike)) and any(m in mode for m in "wax+") and _in_cache(file):
                return real_open("/dev/full", mode.replace("x", "w").replace("a", "w"), *args, **kwargs)
            return real_open(file, mode, *args, **kwargs)
        def full_mkstemp(suffix=None, prefix=None, dir=None, text=False):
            fd, path = real_mkstemp(suffix, prefix, dir, text)
            if dir is not None and _in_cache(dir):
                os.close(fd)
                fd = os.open("/dev/full", os.O_WRONLY)
            return fd, path
        builtins.open, tempfile.mkstemp = full_open, full_mkstemp
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        import numpy as np
        import gpupromote as gp
        from gpupromote.engines.cpu import engine
        a = np.linspace(-3, 3, 101).astype(np.float32)
        b = np.arange(101, dtype=np.int16)
        m = np.linspace(0, 1, 60).reshape(6, 10)
        fused = gp.fuse(lambda x, y: x * y - 1)
        if os.environ.get("DIRS"):
            from gpupromote.dispatch.api import plan_for
            import hashlib
            for plan in (plan_for("multiply", [a, b]), plan_for("sin", [m])):
                src = engine.source(plan)
                (engine.WRITE_DIR / ("_gpk_" + hashlib.sha1(src.encode()).hexdigest()[:24] + ".py")).mkdir(parents=True)
        results = [gp.multiply(a, b), gp.multiply(a, b), gp.subtract.__wrapped__(m.T, a[:6]), gp.sin(m),
                   gp.exp(a), fused(a, b)]
    folder = engine.KERNEL_DIR
    print(json.dumps({
        "results": [[str(r.dtype), list(r.shape), np.asarray(r).tobytes().hex()] for r in results],
        "warnings": [f"{w.category.__name__}: {w.message}" for w in seen],
        "stats": engine.compile_stats(), "write_dir": str(engine.WRITE_DIR),
        "modules": sorted(p.name for p in folder.glob("_gpk_*.py") if p.is_file()) if folder.is_dir() else [],
        "numba_files": len(list(folder.glob("*.nbi"))) if folder.is_dir() else 0}))
""")


def _env(cache: Path, **extra) -> dict:
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(cache), XDG_CACHE_HOME=str(cache.parent / "home"),
               TMPDIR=str(cache.parent / "tmp"))
    env.pop("NUMBA_CACHE_DIR", None)
    env.update({k: str(v) for k, v in extra.items()})
    (cache.parent / "tmp").mkdir(exist_ok=True)
    return env


def _child(cache: Path, **extra) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD], env=_env(cache, **extra), capture_output=True, text=True,
                          cwd=cache.parent)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected():
    """The results with a warm, writable cache (this process's own)."""
    import gpupromote as gp
    a = np.linspace(-3, 3, 101).astype(np.float32)
    b = np.arange(101, dtype=np.int16)
    m = np.linspace(0, 1, 60).reshape(6, 10)
    fused = gp.fuse(lambda x, y: x * y - 1)
    rs = [gp.multiply(a, b), gp.multiply(a, b), gp.subtract.__wrapped__(m.T, a[:6]), gp.sin(m), gp.exp(a), fused(a, b)]
    return [[str(r.dtype), list(r.shape), np.asarray(r).tobytes().hex()] for r in rs]


def _cache_warnings(report):
    return [w for w in report["warnings"] if w.startswith("CacheWarning")]


def _assert_full_then_freed(full, freed, warm, expected):
    assert full["results"] == expected, "every op computes on a full disk"
    warned = _cache_warnings(full)
    assert len(warned) == 1, f"exactly one CacheWarning, not {warned}"
    assert "the disk is full" in warned[0] and "No space left on device" in warned[0], warned[0]
    assert full["modules"] == [] and full["stats"]["loaded"] == 0
    assert freed["results"] == expected and _cache_warnings(freed) == []
    assert len(freed["modules"]) >= 5 and freed["numba_files"] >= 5, "the next process writes the cache again"
    assert warm["results"] == expected and _cache_warnings(warm) == []
    assert warm["stats"]["compiled"] == 0 and warm["stats"]["loaded"] > 0, warm["stats"]


def test_enospc_at_the_write_computes_in_memory_with_one_warning(tmp_path):
    cache = tmp_path / "cache"
    full = _child(cache, FULL=1)
    freed = _child(cache)
    warm = _child(cache)
    _assert_full_then_freed(full, freed, warm, _expected())


def _tmpfs_available() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _tmpfs_available(), reason="no tmpfs can be mounted here (unshare -Urm + mount)")
def test_a_real_full_tmpfs_then_freed(tmp_path):
    """A 16 MiB tmpfs filled to the last block (its folders made first), one child on it; the filler
    removed, a second child writes the cache; a third compiles nothing. All in one mount namespace."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cache = mnt / "cache"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    reports = [tmp_path / f"report{k}.json" for k in range(3)]
    env = _env(cache)
    env.update(XDG_CACHE_HOME=str(mnt / "home"), TMPDIR=str(mnt / "tmp"))
    py = sys.executable
    shell = (f"set -e; mount -t tmpfs -o size=16m tmpfs {mnt}; mkdir -p {cache} {mnt}/home {mnt}/tmp; "
             f"dd if=/dev/zero of={mnt}/filler bs=64k 2>/dev/null || true; "
             f"df -k {mnt} | tail -1 >&2; "
             f"{py} {script} > {reports[0]}; rm {mnt}/filler; "
             f"{py} {script} > {reports[1]}; {py} {script} > {reports[2]}")
    done = subprocess.run(["unshare", "-Urm", "sh", "-c", shell], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    full, freed, warm = (json.loads(p.read_text().strip().splitlines()[-1]) for p in reports)
    _assert_full_then_freed(full, freed, warm, _expected())


def test_a_directory_where_a_kernel_file_goes(tmp_path):
    cache = tmp_path / "cache"
    report = _child(cache, DIRS=1)
    assert report["results"] == _expected()
    warned = _cache_warnings(report)
    assert len(warned) == 1 and "a directory stands where the file should be" in warned[0], warned
    assert len(report["modules"]) >= 3, "the other kernels are cached as usual"


# --- the CUDA engine: a cubin that cannot be written is loaded from memory ------------------------------

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy's NVRTC binding is not installed")


@pytest.fixture
def stand_in_cupy(monkeypatch, tmp_path):
    """The CUDA engine's module cache with a stand-in CuPy whose RawModule reads its file when
    loaded (compile()), as the driver's cuModuleLoad does."""
    from gpupromote.engines import disk_cache
    from gpupromote.engines.cuda import device as _cuda_device, modules as c

    loaded = []

    class RawModule:
        def __init__(self, path):
            self.path, self.data = path, None

        def compile(self):
            with open(self.path, "rb") as f:
                self.data = f.read()
            loaded.append(self)

    class Device:
        def __init__(self, device_id):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake = types.SimpleNamespace(__version__="test", RawModule=lambda path: RawModule(path),
                                 cuda=types.SimpleNamespace(Device=Device, driver=types.SimpleNamespace(
                                     CUDADriverError=RuntimeError)))
    monkeypatch.setattr(_cuda_device, "_cp", fake)
    monkeypatch.setitem(c._targets, 0, ("sm_90", True))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    monkeypatch.setattr(disk_cache, "_warned", set())
    return c, loaded


def _source():
    import gpupromote as gp
    from gpupromote.dispatch.api import spec
    from gpupromote.engines.cuda import source as S
    plan = gp.dispatch.api.plan_for("add", [spec("float16"), spec("float32")], policy="torch")
    return S.kernel_source(plan, ("contig", S.vector_width(plan)))


@pytest.mark.parametrize("fault", ["enospc", "directory"])
def test_a_cubin_that_cannot_be_written_is_loaded_from_memory(stand_in_cupy, monkeypatch, fault):
    from gpupromote.core.errors import CacheWarning
    from gpupromote.engines import disk_cache
    c, loaded = stand_in_cupy
    source = _source()
    path = Path(c._cache_path(source, False, 0)[0])
    if fault == "directory":
        path.mkdir(parents=True)
        cause = "a directory stands where the file should be"
    else:
        real = disk_cache.tempfile.mkstemp

        def full(*args, **kwargs):   # the temporary file's writes go to /dev/full: ENOSPC
            fd, name = real(*args, **kwargs)
            os.close(fd)
            return os.open("/dev/full", os.O_WRONLY), name
        monkeypatch.setattr(disk_cache.tempfile, "mkstemp", full)
        cause = "the disk is full"
    with pytest.warns(CacheWarning) as seen:
        module, how = c.load_module(source, False, 0)
        again, _ = c.load_module(source, False, 0)   # the same fault, no second warning
    assert how == "compiled" and module.data is not None and module.data[:4] == b"\x7fELF"
    assert again.data == module.data
    warned = [str(w.message) for w in seen if issubclass(w.category, CacheWarning)]
    assert len(warned) == 1 and cause in warned[0], warned
    assert not path.is_file()
    monkeypatch.undo() if fault == "enospc" else None


def test_write_error_names_the_cause(tmp_path):
    from gpupromote.engines import disk_cache
    (tmp_path / "k.py").mkdir()
    failure = disk_cache.write_error(tmp_path / "k.py", "x = 1\n")
    assert isinstance(failure, OSError) and failure.errno == errno.EISDIR
    assert disk_cache.why_unwritable(failure).startswith("a directory stands where the file should be")
    assert disk_cache.why_unwritable(OSError(errno.ENOSPC, "No space left on device")).startswith("the disk is full")
    assert disk_cache.write_error(tmp_path / "ok.py", "x = 1\n") is None and (tmp_path / "ok.py").read_text() == "x = 1\n"
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left behind"
