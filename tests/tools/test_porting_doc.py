"""docs/porting.md runs as written: its ``>>>`` examples through doctest, each printed table and
explanation compared with what the code prints now (the page cannot drift from gp.compare)."""
from __future__ import annotations

import doctest
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "porting.md"


def test_porting_page_examples_print_what_the_page_shows():
    results = doctest.testfile(str(PAGE), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE,
                               raise_on_error=False, verbose=False, report=True)
    assert results.attempted >= 10, "the page lost its examples"
    assert results.failed == 0, f"{results.failed} example(s) of docs/porting.md print something else (see above)"
