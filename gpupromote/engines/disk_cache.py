"""Where the kernel caches live on disk, and what happens when that place misbehaves.

Shared by the CPU engine (Numba's cache, engines/cpu/cache.py) and the CUDA engine (cubins,
engines/cuda/modules.py):

* ``default_root()``: ``$GPUPROMOTE_CACHE_DIR``, else one folder per Python environment under
  ``$XDG_CACHE_HOME/gpupromote`` (``~/.cache/gpupromote``), named after a hash of ``sys.prefix``:
  two virtual environments never share compiled code by default.
* ``writable(path)``: whether files can be created there (the answer is remembered per process).
* ``fallback_dir(subpath)``: where new files go when the cache folder is read-only: the same
  ``subpath`` under the per-user default root, else under ``<tmp>/gpupromote-<uid>``; one stable
  folder that every later process reuses, never a fresh temporary one per process.
* ``write_atomically(path, data)``: readers in other processes never see half a file;
  ``write_error(path, data)`` is the same write, returning the OSError that stopped it (a full disk,
  a directory where the file should be) for the caller's warning (``why_unwritable`` says it in words).
* ``drop_damaged(path, why)``: a damaged or unreadable cache file is deleted (when the folder
  allows it) and reported once per process with a ``CacheWarning`` naming the file.
"""
from __future__ import annotations

import atexit
import errno
import hashlib
import importlib.metadata
import os
import shutil
import stat
import sys
import tempfile
import threading
import warnings
from pathlib import Path

from ..core.errors import CacheWarning, warn_at_caller

__all__ = ["package_version", "default_root", "writable", "fallback_dir", "write_atomically", "write_error",
           "why_unwritable", "drop_damaged", "warn_once"]

_lock = threading.Lock()
_writable: dict = {}
_warned: set = set()


def _user_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    prefix = os.path.realpath(sys.prefix)
    # why: per environment, so that two venvs (or a venv and the system Python) never share a cache
    # folder; the hash keeps the name short and the same for every process of the environment
    return Path(base) / "gpupromote" / f"env-{hashlib.sha256(prefix.encode()).hexdigest()[:16]}"


def package_version() -> str:
    """gpupromote's version, part of every cache key ("source" when run from a source tree)."""
    try:
        return importlib.metadata.version("gpupromote")
    except importlib.metadata.PackageNotFoundError:
        return "source"


def default_root() -> Path:
    """The cache root: ``$GPUPROMOTE_CACHE_DIR``, else the per-environment folder under the user's
    cache directory."""
    explicit = os.environ.get("GPUPROMOTE_CACHE_DIR")
    return Path(explicit).expanduser() if explicit else _user_root()


def writable(path: Path) -> bool:
    """Whether files can be created in ``path`` (created if missing); remembered per process."""
    key = str(path)
    known = _writable.get(key)
    if known is not None:
        return known
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
        ok = True
    except OSError:
        ok = False
    _writable[key] = ok
    return ok


def _private_tmp_root() -> Path | None:
    """``<tmp>/gpupromote-<uid>``: created 0700, and used only if this user owns it and it is a real
    folder (a shared /tmp must not let another user plant files we would load)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    root = Path(tempfile.gettempdir()) / f"gpupromote-{uid}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != uid) or st.st_mode & 0o022:
        return None
    return root


def fallback_dir(subpath: str) -> Path:
    """A writable folder for ``subpath`` (e.g. ``numba-<tag>``) when the cache root is read-only:
    under the per-user default root, else under ``<tmp>/gpupromote-<uid>``, else (nothing on this
    machine is writable) a temporary folder removed when the process exits."""
    for candidate in (_user_root, _private_tmp_root):   # in order, the second made only if needed
        root = candidate()
        if root is not None and writable(root / subpath):
            return root / subpath
    scratch = Path(tempfile.mkdtemp(prefix="gpupromote-"))
    atexit.register(shutil.rmtree, scratch, True)
    return scratch


def write_atomically(path: Path, data: bytes | str) -> bool:
    """Write ``data`` to ``path`` through a temporary file and a rename, so that no reader ever sees
    half a file; False when the folder cannot be written."""
    return write_error(path, data) is None


def write_error(path: Path, data: bytes | str) -> OSError | None:
    """``write_atomically``, returning None when the file was written, else the OSError that
    stopped it (ENOSPC on a full disk, EISDIR when a directory stands where the file should be,
    EACCES / EROFS...); the temporary file is removed either way."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        return exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        if path.is_dir():   # os.replace would say EISDIR, or (some systems) EEXIST, or even succeed on an empty one
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        os.replace(tmp, path)
        return None
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return exc


# errno -> the cause in words, for the one warning a failed cache write gives
_CAUSES = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
           errno.EISDIR: "a directory stands where the file should be", errno.EROFS: "the file system is read-only",
           errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def why_unwritable(exc: BaseException) -> str:
    """A failed cache write's cause in words, with the system's message: 'the disk is full
    ([Errno 28] No space left on device: ...)'."""
    cause = _CAUSES.get(getattr(exc, "errno", None))
    detail = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OSError) else str(exc)
    return f"{cause} ({detail})" if cause else detail


def warn_once(key, message: str, stacklevel: int = 3, at_caller: bool = False) -> None:
    """One CacheWarning per ``key`` per process; ``at_caller``: attributed to the user's line that
    called into gpupromote (however deep the compile that failed), else to ``stacklevel``."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    if at_caller:
        warn_at_caller(message, CacheWarning)
    else:
        warnings.warn(message, CacheWarning, stacklevel=stacklevel)


def drop_damaged(path, why: BaseException | str) -> None:
    """Delete a damaged or unreadable cache file (if its folder allows) and say so once, naming it.
    The caller then compiles the kernel again."""
    reason = why if isinstance(why, str) else f"{type(why).__name__}: {str(why)[:200]}"
    try:
        os.unlink(path)
        done = "deleted it"
    except FileNotFoundError:
        done = "it is gone"
    except OSError:
        done = "left it in place (read-only), and this process ignores it"
    warn_once(("damaged", str(path)),
              f"gpupromote: the kernel cache file {path} is damaged or unreadable ({reason}); "
              f"{done} and compiled the kernel again", stacklevel=4)
