"""How much of each combinatorial sweep a run takes: GP_TEST_TIER=lean (the default of `make test`) or
full (every case, as before the suite was thinned: `GP_TEST_TIER=full make test`).

Why: a sweep's cost is its kernels. Each distinct kernel is a Numba compile (0.2-2 s on a busy core)
or a g++ build, and stays in the process's memory until it exits (Numba does not free machine code),
so the old sweeps of every op x every dtype pair x every policy made `make test` 25-30 minutes and
4 GB of RSS on a 2-core machine. The lean tier keeps every row and every column of each sweep and
drops cells in a fixed pattern (`thin`): a case that is not run in the lean tier is run by the full
one, never lost, and which cells run is fixed by the order the sweep lists them in, not by a seed.
"""
from __future__ import annotations

import os

TIER = os.environ.get("GP_TEST_TIER", "lean")
if TIER not in ("lean", "full"):
    raise ValueError(f"GP_TEST_TIER={TIER!r}: lean (default) or full")
FULL = TIER == "full"


def thin(items, every: int, row=lambda item: item[0], column=lambda item: item[1:], shift: int = 0) -> list:
    """The items the lean tier runs (all of them in full): rows and columns are numbered in order of
    first appearance, and cell (r, c) runs where (r + c + shift) % every == 0, so each row runs one
    column in ``every`` and each column one row in ``every``, with a different set of columns in the
    next row (``shift``: another set, for a second sweep over the same grid). Every row keeps at least
    one cell."""
    items = list(items)
    if FULL or every <= 1:
        return items
    rows, columns = {}, {}
    for item in items:
        rows.setdefault(row(item), len(rows))
        columns.setdefault(column(item), len(columns))
    kept = [(rows[row(item)] + columns[column(item)] + shift) % every == 0 for item in items]
    covered = {row(item) for item, keep in zip(items, kept) if keep}
    for i, item in enumerate(items):   # a row shorter than ``every`` may miss its turn: keep its first cell
        if row(item) not in covered:
            kept[i] = True
            covered.add(row(item))
    return [item for item, keep in zip(items, kept) if keep]


def count(variable: str, lean: int, full: int) -> int:
    """How many examples a drawn sweep takes: ``$variable`` where set, else ``lean`` or ``full`` by tier."""
    value = os.environ.get(variable)
    return int(value) if value else (full if FULL else lean)
