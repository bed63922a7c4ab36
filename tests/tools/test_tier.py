"""The lean tier's thinning (tests/support/tier.py) drops cells, never a row or a column of a sweep."""
import pytest

from tests.support import tier


@pytest.mark.parametrize("rows, columns, every", [(7, 9, 3), (32, 25, 3), (5, 2, 3), (10, 1, 2), (1, 17, 3)])
def test_every_row_and_every_column_keeps_a_cell(monkeypatch, rows, columns, every):
    monkeypatch.setattr(tier, "FULL", False)
    grid = [(f"op{r}", f"dtype{c}") for r in range(rows) for c in range(columns)]
    kept = tier.thin(grid, every)
    assert {r for r, _ in kept} == {r for r, _ in grid}
    if rows >= every:
        assert {c for _, c in kept} == {c for _, c in grid}
    # about one cell in `every`, plus one for each row too short to get its turn
    assert len(kept) <= len(grid) // every + rows


def test_a_shift_picks_other_cells_and_the_full_tier_keeps_all(monkeypatch):
    monkeypatch.setattr(tier, "FULL", False)
    grid = [(r, c) for r in range(6) for c in range(6)]
    assert not set(tier.thin(grid, 3)) & set(tier.thin(grid, 3, shift=1))
    monkeypatch.setattr(tier, "FULL", True)
    assert tier.thin(grid, 3) == grid
