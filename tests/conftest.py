"""Test-session setup, done before any test module imports gpupromote.

The suite compiles its kernels into a cache of its own, one per checkout (``.cache/`` at the top
of the repository, git-ignored), never the user's ``~/.cache/gpupromote``: the tests damage and
rewrite cache files (in temporary copies), and a warm cache survives from one ``make test`` to the
next, which keeps CI time down. ``GP_TEST_CACHE_DIR`` puts it elsewhere (a CI cache folder).
"""
import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_CACHE = Path(os.environ.get("GP_TEST_CACHE_DIR") or _ROOT / ".cache")

os.environ["GPUPROMOTE_CACHE_DIR"] = str(_CACHE / "gpupromote")
os.environ["CUPY_CACHE_DIR"] = str(_CACHE / "cupy")
