"""The kernel disk caches under faults: a changed helper, damaged files, read-only folders.

Every scenario runs in fresh Python processes (what a user sees the next day), each with its own
cache folder under tmp_path. A child prints the result, Numba's cache hits and misses for the
kernel, and every warning it saw, one per line.
"""
from __future__ import annotations

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

import gpupromote as gp
from gpupromote.engines import disk_cache as _disk_cache
from gpupromote.engines.cpu import cache as _numba_cache

REPO = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    read_only = {read_only!r}
    if read_only:
        # root ignores file permissions: tell the cache which folders to treat as read-only
        import gpupromote.engines.disk_cache as dc
        real = dc.writable
        dc.writable = lambda path: False if str(path).startswith(tuple(read_only)) else real(path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        import numpy as np
        import gpupromote as gp
        from gpupromote.dispatch.api import plan_for
        from gpupromote.engines.cpu import engine as cpu_numba
        a, b = np.array([3.0, 5.0]), np.array([4.0, 12.0])
        result = gp.hypot(a, b).tolist()
        stats = cpu_numba.kernel_for(plan_for("hypot", [a, b])).compile_stats()
        h = np.array([1.5, -2.0], np.float16)   # float16 kernels call the cached _numba_narrow helpers
        assert gp.maximum(h, -h).tolist() == [1.5, 2.0]   # (exactly: arithmetic widens plainly)
    print(json.dumps({{"result": result, "hits": stats["loaded"],
                       "misses": stats["compiled"], "kernel_dir": str(cpu_numba.KERNEL_DIR),
                       "write_dir": str(cpu_numba.WRITE_DIR),
                       "warnings": [f"{{w.category.__name__}}: {{w.message}}" for w in seen]}}))
""")


def _run(cache, *, package=None, read_only=(), extra_env=None):
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(cache))
    env.pop("NUMBA_CACHE_DIR", None)
    if package is not None:
        env["PYTHONPATH"] = str(package)
    env.update(extra_env or {})
    code = _CHILD.format(read_only=[str(p) for p in read_only])
    # cwd: not this checkout, whose gpupromote/ would come first on sys.path
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=cache.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cache_warnings(report):
    return [w for w in report["warnings"] if w.startswith("CacheWarning")]


def _package_copy(tmp_path) -> Path:
    """A copy of the gpupromote package that a child imports instead of this checkout's."""
    root = tmp_path / "src"
    shutil.copytree(REPO / "gpupromote", root / "gpupromote", ignore=shutil.ignore_patterns("__pycache__"))
    return root


# --- what the key covers --------------------------------------------------------------------------

@pytest.mark.parametrize("what, change", [
    ("helper source", lambda mp: mp.setattr(_numba_cache, "_module_source", lambda name: b"edited " + name.encode())),
    ("gpupromote version", lambda mp: mp.setattr(_numba_cache, "package_version", lambda: "99.0")),
    ("Numba version", lambda mp: mp.setattr(sys.modules["numba"], "__version__", "0.0.1")),
    ("llvmlite version", lambda mp: mp.setattr(sys.modules["llvmlite"], "__version__", "0.0.1")),
    ("NumPy version", lambda mp: mp.setattr(np, "__version__", "1.0.0")),
    ("target CPU", lambda mp: mp.setattr(_numba_cache.config, "CPU_NAME", "generic")),
    ("target CPU features", lambda mp: mp.setattr(_numba_cache.config, "CPU_FEATURES", "+sse2")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_the_cache_tag_changes_with_everything_that_shapes_machine_code(monkeypatch, what, change):
    before = _numba_cache.cache_tag()
    change(monkeypatch)
    assert _numba_cache.cache_tag() != before, f"a different {what} must give another cache folder"


def test_the_tag_names_the_kernel_folder_under_the_cache_root():
    from gpupromote.engines.cpu import engine as cpu_numba
    assert cpu_numba._cache_tag() == _numba_cache.cache_tag()
    assert cpu_numba.KERNEL_DIR == cpu_numba.CACHE_ROOT / f"numba-{cpu_numba._cache_tag()}"


def test_the_default_cache_root_is_one_folder_per_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUPROMOTE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    here = _disk_cache.default_root()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "another-venv"))
    there = _disk_cache.default_root()
    assert here.parent == there.parent == tmp_path / "gpupromote" and here != there


def test_a_changed_helper_is_compiled_again_despite_a_warm_cache(tmp_path):
    package, cache = _package_copy(tmp_path), tmp_path / "cache"
    first = _run(cache, package=package)
    warm = _run(cache, package=package)
    assert first["result"] == warm["result"] == [5.0, 13.0]
    assert (first["hits"], warm["hits"]) == (0, 1)

    helpers = package / "gpupromote" / "kernel" / "math" / "special.py"   # the owned hypot's source
    original = helpers.read_text()
    edited = original.replace("    return gpm_scale2_dd(h, lo, e)", "    return gpm_scale2_dd(h, lo, e) + 100.0")
    assert edited != original
    helpers.write_text(edited)
    changed = _run(cache, package=package)
    assert changed["result"] == [105.0, 113.0] and changed["misses"] == 1, changed
    assert changed["kernel_dir"] != warm["kernel_dir"]

    helpers.write_text(original)   # back: the first folder is still there, and still right
    again = _run(cache, package=package)
    assert again["result"] == [5.0, 13.0] and again["hits"] == 1 and again["kernel_dir"] == warm["kernel_dir"]


# --- damaged files ---------------------------------------------------------------------------------

def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 3])


def _garbage(path):
    path.write_bytes(b"\x80\x04garbage, not a pickle" * 3)


def _empty(path):
    path.write_bytes(b"")


def _half_written(path):
    text = path.read_text()
    path.write_text(text[:text.index("def flat")])   # cut at a line: valid Python, no kernel in it


DAMAGE = [
    # the kernel entry point the call compiled: native (the compiled dispatcher) or flat (the Python path)
    ("truncated .nbc of the kernel", "_gpk_*.*-*.nbc", _truncate),
    ("garbage .nbc of the kernel", "_gpk_*.*-*.nbc", _garbage),
    ("garbage .nbi of the kernel", "_gpk_*.*-*.nbi", _garbage),
    ("empty .nbi of the kernel", "_gpk_*.*-*.nbi", _empty),
    ("empty kernel module", "_gpk_*.py", _empty),
    ("half-written kernel module", "_gpk_*.py", _half_written),
    ("garbage kernel module", "_gpk_*.py", _garbage),
]


@pytest.mark.parametrize("what, pattern, damage", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_a_damaged_cache_file_is_dropped_with_one_warning_and_recompiled(tmp_path, what, pattern, damage):
    cache = tmp_path / "cache"
    warm = _run(cache)
    files = [p for p in Path(warm["kernel_dir"]).glob(pattern) if "hypot" in _module_text(p)]
    assert len(files) == 1, files
    damage(files[0])

    hurt = _run(cache)
    assert hurt["result"] == [5.0, 13.0]
    warned = _cache_warnings(hurt)
    assert len(warned) == 1 and str(files[0]) in warned[0], hurt["warnings"]

    healed = _run(cache)   # compiled again and cached again: the next process is clean
    assert healed["result"] == [5.0, 13.0] and healed["hits"] == 1 and not _cache_warnings(healed)


def _module_text(path: Path) -> str:
    """The generated module a cache file belongs to (its name starts with the module's)."""
    module = path.parent / (path.name.split(".")[0] + ".py")
    return module.read_text() if module.exists() else ""


@pytest.mark.parametrize("damage", [_truncate, _garbage], ids=["truncated", "garbage"])
def test_a_damaged_helper_cache_file_is_dropped_too(tmp_path, damage):
    cache = tmp_path / "cache"
    warm = _run(cache)
    # the widening helper the float16 kernel calls (helpers it calls in turn are linked into it)
    helper_files = sorted(Path(warm["kernel_dir"]).glob("narrow._f16_to_f32_*.nbc"))
    assert len(helper_files) == 1, "the narrow helpers are cached in the tag folder"
    for path in Path(warm["kernel_dir"]).glob("_gpk_*"):
        path.unlink()   # the kernels are compiled again, and load their helpers from the cache
    damage(helper_files[0])
    hurt = _run(cache)
    assert hurt["result"] == [5.0, 13.0]
    warned = _cache_warnings(hurt)
    assert len(warned) == 1 and str(helper_files[0]) in warned[0], hurt["warnings"]


# --- read-only and unwritable folders ----------------------------------------------------------------

def test_a_complete_read_only_cache_is_read_not_recompiled(tmp_path):
    cache = tmp_path / "cache"
    warm = _run(cache)
    before = sorted(p.name for p in Path(warm["kernel_dir"]).iterdir())
    _read_only(cache)
    try:
        report = _run(cache, read_only=[cache], extra_env={"XDG_CACHE_HOME": str(tmp_path / "home-cache")})
    finally:
        _writable_again(cache)
    assert report["result"] == [5.0, 13.0] and (report["hits"], report["misses"]) == (1, 0)
    assert not _cache_warnings(report)
    assert sorted(p.name for p in Path(warm["kernel_dir"]).iterdir()) == before
    fallback = Path(report["write_dir"])
    assert not fallback.exists() or not any(fallback.glob("_gpk_*")), "nothing was compiled, nothing written"


def test_new_kernels_beside_a_read_only_cache_go_to_one_reused_folder(tmp_path):
    cache, home = tmp_path / "cache", tmp_path / "home-cache"
    (cache).mkdir()
    env = {"XDG_CACHE_HOME": str(home), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    _read_only(cache)
    try:
        first = _run(cache, read_only=[cache], extra_env=env)
        second = _run(cache, read_only=[cache], extra_env=env)
    finally:
        _writable_again(cache)
    assert first["result"] == second["result"] == [5.0, 13.0]
    assert (first["misses"], second["hits"]) == (1, 1), "the second process reads what the first cached"
    assert first["write_dir"] == second["write_dir"] and first["write_dir"].startswith(str(home))
    warned = _cache_warnings(first)
    assert len(warned) == 1 and str(cache) in warned[0] and first["write_dir"] in warned[0]
    assert not list((tmp_path / "tmp").glob("gpupromote-*")), "no temporary folder per process"


def test_with_nothing_writable_processes_share_one_private_temporary_folder(tmp_path):
    cache, home, tmp = tmp_path / "cache", tmp_path / "home-cache", tmp_path / "tmp"
    for folder in (cache, home, tmp):
        folder.mkdir()
    env = {"XDG_CACHE_HOME": str(home), "TMPDIR": str(tmp)}
    first = _run(cache, read_only=[cache, home], extra_env=env)
    second = _run(cache, read_only=[cache, home], extra_env=env)
    private = list(tmp.glob("gpupromote-*"))
    assert len(private) == 1 and first["write_dir"] == second["write_dir"]
    assert first["write_dir"].startswith(str(private[0])) and second["hits"] == 1
    assert oct(private[0].stat().st_mode & 0o777) == oct(0o700)


def _read_only(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)


def _writable_again(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


# --- the CUDA engine's cubins (no GPU: NVRTC compiles, a stand-in CuPy loads) -------------------------

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy's NVRTC binding is not installed")


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path):
    """The CUDA engine's kernel cache (_cuda_modules) with a stand-in CuPy whose loader refuses
    what the driver would refuse."""
    from gpupromote.engines.cuda import device as _cuda_device
    from gpupromote.engines.cuda import modules as c

    class CUDADriverError(Exception):
        def __init__(self, status):
            super().__init__(f"CUDA_ERROR {status}")
            self.status = status

    loads = []

    class RawModule:
        def __init__(self, path):
            self.path = path

        def compile(self):
            loads.append(self.path)
            data = Path(self.path).read_bytes()
            if c._intact(data, Path(self.path).suffix) is not None or b"refused" in data:
                raise CUDADriverError(200)   # CUDA_ERROR_INVALID_IMAGE

    class Device:
        def __init__(self, device_id):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fake = types.SimpleNamespace(
        __version__="test", RawModule=lambda path: RawModule(path),
        cuda=types.SimpleNamespace(Device=Device, driver=types.SimpleNamespace(CUDADriverError=CUDADriverError)))
    monkeypatch.setattr(_cuda_device, "_cp", fake)
    monkeypatch.setitem(c._targets, 0, ("sm_90", True))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    return c, loads


def _source():
    from gpupromote.dispatch.api import spec
    from gpupromote.engines.cuda import source as S
    plan = gp.dispatch.api.plan_for("add", [spec("float16"), spec("float32")], policy="torch")
    return S.kernel_source(plan, ("contig", S.vector_width(plan)))


def _cubin_path(c, source):
    return Path(c._cache_path(source, False, 0)[0])


def test_cubins_are_compiled_once_then_read(fake_cupy):
    c, loads = fake_cupy
    source = _source()
    assert c.load_module(source, False, 0)[1] == "compiled"
    assert c.load_module(source, False, 0)[1] == "disk"
    assert _cubin_path(c, source).is_file()


@pytest.mark.parametrize("damage", [_truncate, _garbage, _empty,
                                    lambda p: p.write_bytes(p.read_bytes()[:64] + b"refused" * 50)],
                         ids=["truncated", "garbage", "empty", "refused-by-the-driver"])
def test_a_damaged_cubin_is_dropped_with_one_warning_and_recompiled(fake_cupy, damage):
    c, loads = fake_cupy
    source = _source()
    c.load_module(source, False, 0)
    path = _cubin_path(c, source)
    damage(path)
    with pytest.warns(gp.CacheWarning, match=str(path)) as seen:
        module, how = c.load_module(source, False, 0)
    assert how == "compiled" and len([w for w in seen if issubclass(w.category, gp.CacheWarning)]) == 1
    assert c._intact(path.read_bytes(), ".cubin") is None
    assert c.load_module(source, False, 0)[1] == "disk"


def test_a_read_only_cubin_cache_is_read(fake_cupy, monkeypatch, tmp_path):
    c, loads = fake_cupy
    source = _source()
    c.load_module(source, False, 0)
    primary = c.kernel_cache_dir()
    monkeypatch.setattr(_disk_cache, "writable", lambda path: not str(path).startswith(primary))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    assert c.load_module(source, False, 0)[1] == "disk"


@pytest.mark.parametrize("ext, cut", [(".cubin", 0), (".cubin", 63), (".cubin", -2), (".cubin", -100),
                                      (".ptx", -3), (".ptx", 0)])
def test_intact_tells_whole_files_from_cut_ones(fake_cupy, ext, cut):
    c, _ = fake_cupy
    cubin = ext == ".cubin"
    data = c._compile(_source(), False, "sm_90" if cubin else "compute_90", cubin, "t.cu")
    data = data.encode() if isinstance(data, str) else bytes(data)
    assert c._intact(data, ext) is None
    assert c._intact(data[:cut] if cut else b"", ext) is not None


def test_the_tag_covers_every_module_of_the_cpu_engine():
    # every module of the CPU engine's folder: an edit to any of them must give another tag folder
    folder = Path(_numba_cache.__file__).parent
    engine = {f"gpupromote.engines.cpu.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"}
    assert engine <= set(_numba_cache.KERNEL_MODULES), engine - set(_numba_cache.KERNEL_MODULES)
    assert set(_numba_cache.HELPER_MODULES) <= engine


# --- the compiled twin of a kernel module ------------------------------------------------------------

_SRC = "def f():\n    return 42\n"


def test_the_compiled_twin_is_read_instead_of_compiling_again(tmp_path, monkeypatch):
    from gpupromote.engines.cpu import modules
    path = tmp_path / "_gpk_example.py"
    first = modules._code_of(_SRC, path)
    twins = list(tmp_path.glob("_gpk_example.*.code"))
    assert len(twins) == 1
    monkeypatch.setattr("builtins.compile", lambda *a, **k: pytest.fail("compiled again"))
    again = modules._code_of(_SRC, path)
    scope: dict = {}
    exec(again, scope)
    assert scope["f"]() == 42 and again.co_filename == first.co_filename == str(path)


@pytest.mark.parametrize("damage", ["garbage", "cut", "other code", "other source", "moved"])
def test_a_twin_that_does_not_match_its_source_is_never_run(tmp_path, damage):
    import hashlib
    import marshal
    from gpupromote.engines.cpu import modules
    path = tmp_path / "_gpk_example.py"
    modules._code_of(_SRC, path)
    twin = next(tmp_path.glob("_gpk_example.*.code"))
    blob = twin.read_bytes()
    if damage == "garbage":
        twin.write_bytes(b"\x00" * len(blob))
    elif damage == "cut":
        twin.write_bytes(blob[:len(blob) // 2])
    elif damage == "other code":      # well-formed code, the digest of the right source: not this payload
        twin.write_bytes(blob[:32] + marshal.dumps(compile("def f():\n    return 7\n", str(path), "exec")))
    src, where = _SRC, path
    if damage == "other source":      # the twin is intact, the module's text is not the one it came from
        src = _SRC.replace("42", "43")
    if damage == "moved":             # the same text filed elsewhere: its tracebacks must name the new file
        where = tmp_path / "moved" / "_gpk_example.py"
        where.parent.mkdir()
        (where.parent / twin.name).write_bytes(blob)
    scope: dict = {}
    code = modules._code_of(src, where)
    exec(code, scope)
    assert scope["f"]() == (43 if damage == "other source" else 42) and code.co_filename == str(where)
    healed = next(where.parent.glob("_gpk_example.*.code")).read_bytes()
    key = (str(where) + "\0" + src).encode()
    assert hashlib.sha256(key + healed[32:]).digest() == healed[:32], "written again, whole"
