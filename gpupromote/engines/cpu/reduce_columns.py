"""Reductions over leading axes: ``cols(args, out, K, m0, m1, div)``, generated into every tree
reduction's module (reduce.py) beside ``rows``.

A sum over axis 0 of a C-contiguous (K, M) array is M rows of K elements each M elements apart
in memory: ``rows`` walks each of them down a column, one cache line per element, 50 to 100
times slower than NumPy. ``cols`` takes the operands transposed, (K, rows) and C-contiguous, and
computes COLUMNS results at once: for each k in order it updates the running values of those
columns from one contiguous run of row k, a loop LLVM vectorizes across the columns.

Over axes between kept ones ((B, T, C) over T), ``colsb`` runs ``cols`` batch by batch on the
array viewed as (B, K, M2), where the (rows, K) view would be a copy.

Every column goes through exactly the operations ``rows`` does for it (the same leaves, the same
lane of each element, the same binary counter over the leaves, the same tree at the end), so the
results are the same bits; only the interleaving of independent columns differs.
"""
from __future__ import annotations

from ...kernel.reduce import LANES, Reduction

__all__ = ["COLUMNS", "COLUMN_SHARE", "batched_lines", "columns_lines", "columns_fit"]

# results computed together: long runs of each row are read faster ((4096, 1024) float32 over axis
# 0, one thread: 1.2-1.5 ms in blocks of 256 columns, 0.9-1.2 ms of 512, 0.8-0.9 ms of 1024), and
# (LANES + log2 leaves) x COLUMNS running values still stay in L2
COLUMNS = 1024
# the running values' rows are this many elements longer than the block: rows exactly 4 KB apart
# alias with the operand's rows in the load / store queues (a loop of the same shape: 0.83 -> 0.63 ms)
_PAD = 24
# the fewest columns a thread takes: (100000, 64) float32 over axis 0 took 1.25 ms on one thread and
# 2.05 ms split in two halves of 32 (each thread reading half of every cache line)
COLUMN_SHARE = 256


def columns_fit(red: Reduction) -> bool:
    """Whether ``red``'s module has ``cols``: tree reductions that keep no chain (scans, argmax /
    argmin and kept chains run as rows)."""
    return not red.scan and not red.combine.startswith("arg") and red.kept is None


def batched_lines(red: Reduction, rowwise) -> list[str]:
    """``colsb(args, out, K, M2, b0, b1, div)``: cols over batches b0 .. b1 of operands (B, K, M2)
    (the reduced axes between kept ones, as in (B, T, C) over T), each batch's M2 results in turn;
    rowwise operands are 1-d, one value per result."""
    names = [f"s{p.index}" if p.folded else f"x{p.index}" for p in red.params]
    batch = [n if p.folded else (f"{n}[b * M2:(b + 1) * M2]" if p.index in rowwise else f"{n}[b]")
             for n, p in zip(names, red.params)]
    return ["", "", "@_jit", f"def colsb({', '.join(names)}, out, K, M2, b0, b1, div):",
            "    for b in range(b0, b1):",
            f"        cols({', '.join(batch)}, out[b * M2:(b + 1) * M2], K, 0, M2, div)"]


def columns_lines(red: Reduction, args: str, acc_np: str, ident) -> list[str]:
    """The ``cols`` function; ``elemt(args, m, k)`` (reduce._elem_lines on transposed operands)
    gives the term of result m at k. Result m is passed as a uint64: from a signed index Numba
    makes a wraparound select that LLVM could not see through, and the loads were gathers (9 ms
    for the sum over axis 0 of (4096, 1024) float32, 1 ms without)."""
    each = "            for i in range(nb):"

    def merge(a, b):
        return f"comb({a}, {b})"
    if red.sequential:
        # leaf value: the first element (or the identity, for or / and), then each one in order
        first, start = (ident, "k0") if red.combine in ("or", "and") else (f"elemt({args}, np.uint64(b0 + i), k0)", "k0 + 1")
        leaf = [each, f"                v[i] = {first}",
                f"            for k in range({start}, k1):", "    " + each,
                f"                    v[i] = comb(v[i], elemt({args}, np.uint64(b0 + i), k))"]
    else:
        pairs = [f"lanes[{j}, i]" for j in range(LANES)]
        while len(pairs) > 1:
            pairs = [merge(a, b) for a, b in zip(pairs[::2], pairs[1::2])]
        leaf = [f"            for j in range({LANES}):", "    " + each, f"                    lanes[j, i] = {ident}",
                "            for k in range(k0, k1):", f"                j = (k - k0) & {LANES - 1}", "    " + each,
                f"                    lanes[j, i] = comb(lanes[j, i], elemt({args}, np.uint64(b0 + i), k))",
                each, f"                v[i] = {pairs[0]}"]
    return ["", "", "@_jit", f"def cols({args}, out, K, m0, m1, div):",
            "    nl = (K + LEAF - 1) // LEAF",
            "    depth = 2",
            "    while (1 << (depth - 2)) < nl:   # the binary counter holds at most log2(nl) + 1 nodes",
            "        depth += 1",
            "    width = min(COLUMNS, m1 - m0)",
            f"    lanes = np.empty(({LANES}, width + {_PAD}), {acc_np})",
            f"    stack = np.empty((depth, width + {_PAD}), {acc_np})",
            f"    v = np.empty(width, {acc_np})",
            "    for b0 in range(m0, m1, width):",
            "        nb = min(width, m1 - b0)",
            "        top = 0",
            "        for l in range(nl):",
            "            k0 = l * LEAF",
            "            k1 = min(k0 + LEAF, K)",
            *leaf,
            each, "                stack[top, i] = v[i]",
            "            top += 1",
            "            c = l + 1   # the binary counter, as in node()",
            "            while (c & 1) == 0:",
            "                top -= 1",
            "    " + each, "                    stack[top - 1, i] = comb(stack[top - 1, i], stack[top, i])",
            "                c >>= 1",
            "        while top > 1:",
            "            top -= 1",
            each, "                stack[top - 1, i] = comb(stack[top - 1, i], stack[top, i])",
            "        for i in range(nb):",
            "            out[b0 + i] = fin(stack[0, i], div)"]
