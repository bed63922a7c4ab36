"""The one place that clears every in-memory cache gpupromote keeps of its decisions.

Each cache registers its ``clear`` where it is made (the plan cache in dispatch/api.py and the compiled
path's memo of it, the dispatcher's fast runners and scalar converters, the IR of each plan), so
that ``clear_all()`` cannot miss one. Compiled kernels (backends/) are not decisions: they are
keyed on everything that shapes their machine code and stay valid.
"""
from __future__ import annotations

__all__ = ["register", "clear_all"]

_clearers: list = []


def register(clear):
    """Have ``clear()`` called by every clear_all(); returns ``clear``."""
    _clearers.append(clear)
    return clear


def clear_all() -> None:
    """Empty every registered cache: the next calls resolve, plan and convert anew."""
    for clear in _clearers:
        clear()
