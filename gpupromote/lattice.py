"""Promotion as data: a graph whose least upper bound is the promoted dtype, or an explicit
pair table. Knows no framework; policies build one of these from literal tables.

Nodes are strings: dtype names, or the weak kinds of Python scalars ("i*", "f*", "c*").
"""
from __future__ import annotations

import functools

__all__ = ["Lattice", "PairTable", "parse_grid"]


class Lattice:
    """A promotion lattice given as ``{node: [nodes directly above it]}`` (JAX's representation).

    ``join(a, b)`` is the least upper bound: the unique common upper bound that every other
    common upper bound lies above. ``None`` when there is none (a refused promotion).
    """

    def __init__(self, edges: dict[str, list[str]]):
        self.edges = edges
        self.upper = {node: self._closure(node) for node in edges}

    def _closure(self, node):
        seen, stack = {node}, [node]
        while stack:
            for above in self.edges.get(stack.pop(), ()):
                if above not in seen:
                    seen.add(above)
                    stack.append(above)
        return frozenset(seen)

    @functools.lru_cache(maxsize=None)
    def join(self, a: str, b: str) -> str | None:
        common = self.upper[a] & self.upper[b]
        least = [n for n in common if common <= self.upper[n]]
        return least[0] if least else None

    def join_all(self, nodes) -> str | None:
        nodes = list(nodes)
        result = nodes[0]
        for node in nodes[1:]:
            result = self.join(result, node)
            if result is None:
                return None
        return result


class PairTable:
    """An explicit ``(a, b) -> result`` table; missing pairs are refused. Not assumed symmetric."""

    def __init__(self, cells: dict[tuple[str, str], str | None]):
        self.cells = cells

    def join(self, a: str, b: str) -> str | None:
        return self.cells.get((a, b))

    def join_all(self, nodes) -> str | None:
        """The least dtype every operand promotes into: for a lattice this is the left fold; for
        NumPy, which is not a lattice, it gives result_type(int8, uint8, float16) == float16 in
        every order, where a fold would give float32."""
        nodes = list(dict.fromkeys(nodes))
        if len(nodes) == 1:
            return nodes[0]
        if len(nodes) == 2:
            return self.join(*nodes)
        candidates = {self.join(a, b) for a in nodes for b in nodes} - {None}
        bounds = [t for t in candidates if all(self.join(n, t) == t for n in nodes)]
        least = [t for t in bounds if all(self.join(t, u) == u for u in bounds)]
        return least[0] if least else None

    def fold(self, nodes) -> str | None:
        """The left fold of ``join`` over ``nodes`` (the n-ary rule of a library that promotes its
        operands two at a time, left to right)."""
        nodes = list(nodes)
        result = nodes[0]
        for node in nodes[1:]:
            result = self.join(result, node)
            if result is None:
                return None
        return result


def parse_grid(text: str, decode) -> dict[tuple[str, str], str | None]:
    """A literal N x N grid (header row of column codes, then one row per code) -> pair cells.
    ``--`` marks a refused pair; ``decode`` maps a code to a dtype name."""
    lines = [ln.split() for ln in text.strip().splitlines() if ln.strip()]
    cols = [decode(c) for c in lines[0]]
    cells = {}
    for row in lines[1:]:
        a = decode(row[0])
        for b, cell in zip(cols, row[1:]):
            cells[(a, b)] = None if cell == "--" else decode(cell)
    return cells
