"""Promotion as data: a graph whose least upper bound is the promoted dtype, or an explicit
pair table. Knows no framework; policies build one of these from literal tables.

Nodes are strings: dtype names, or the weak kinds of Python scalars ("i*", "f*", "c*").
"""
from __future__ import annotations

__all__ = ["Lattice", "PairTable", "parse_grid"]


class Lattice:
    """A promotion lattice given as ``{node: [nodes directly above it]}`` (JAX's representation).

    ``join(a, b)`` is the least upper bound: the unique common upper bound that every other
    common upper bound lies above. ``None`` when there is none (a refused promotion). The graph
    is checked when built, as JAX's ``_make_lattice_upper_bounds`` checks it: an edge to an
    unknown node, a cycle, or two nodes with common upper bounds but no single least one raise
    ValueError, so a typo in a policy's table fails at import, not on some call.
    """

    def __init__(self, edges: dict[str, list[str]]):
        for node, above in edges.items():
            unknown = [n for n in above if n not in edges]
            if unknown:
                raise ValueError(f"lattice edge {node} -> {unknown[0]}: {unknown[0]} is not a node of the lattice")
        self.edges = edges
        self.upper = {node: self._closure(node) for node in edges}
        self._joins = {(a, b): self._least(a, b) for a in edges for b in edges}

    def _closure(self, node):
        seen, frontier = {node}, {node}
        while frontier:
            frontier = {above for n in frontier for above in self.edges[n]}
            if node in frontier:
                raise ValueError(f"cycle in the promotion lattice through {node!r}")
            frontier -= seen
            seen |= frontier
        return frozenset(seen)

    def _least(self, a, b):
        common = self.upper[a] & self.upper[b]
        least = [n for n in common if common <= self.upper[n]]
        if common and len(least) != 1:
            raise ValueError(f"{a!r} and {b!r} have no unique least upper bound in the promotion lattice "
                             f"(common upper bounds: {', '.join(sorted(common))})")
        return least[0] if least else None

    def join(self, a: str, b: str) -> str | None:
        return self._joins[a, b]

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
        # why: a cell naming a dtype the table has no row for is a typo in the literal grid
        for (a, b), cell in cells.items():
            if cell is not None and (cell, cell) not in cells:
                raise ValueError(f"pair table cell ({a}, {b}) -> {cell}: {cell} is not a node of the table")
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
        if len(row) != len(cols) + 1:
            raise ValueError(f"grid row {row[0]!r} has {len(row) - 1} cells for {len(cols)} columns")
        a = decode(row[0])
        for b, cell in zip(cols, row[1:]):
            cells[(a, b)] = None if cell == "--" else decode(cell)
    return cells
