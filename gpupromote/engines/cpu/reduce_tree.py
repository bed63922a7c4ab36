"""A tree reduction's functions over rows, generated into its module (reduce.py) beside ``elem``,
``comb`` and ``fin``:

    node(args, m, K, l0, l1, stack, buf, lanes, ahead)
                                                  leaves l0 .. l1 of row m, each of LEAF elements in
                                                  LANES lanes, joined by the binary counter's tree
                                                  (kernel/reduce.py's ORDER)
    rows(args, out, K, m0, m1, div, ahead)        whole rows, one after another; ahead > 0: the
                                                  rows of a block of ``ahead`` rows, asking for the
                                                  next block's (program.py)
    parts(args, part, K, m, c0, c1)               the nodes of chunks c0 .. c1 of row m
    merge(part, out, m, div)                      the tree over a row's chunk nodes, finished

Where a function calls another that is not inlined (``terms``, the long vector loop of a math
map), every array it passes would have its reference count taken and dropped around the call: an
atomic instruction, which waits for the stores before it and kept each row's loop from overlapping
the next. So ``rows`` and ``parts`` borrow their arrays (intrinsics.borrowed: the caller holds them
for the whole call) and keep their scratch arrays in their stack frame (intrinsics.scratch), and
where ``node`` calls ``terms`` it is inlined into them. A 4096 x 1024 float32 exp-and-sum
(softmax's) took 2.85 ms, 2.6 now (2.52 with its terms folded from the kept array).

Elsewhere ``node`` is a function of its own, vectorized 256 bits wide (``prefer_256_bit``): its
terms go to ``buf`` as vectors and the fold reads them back 8 lanes (256 bits) at a time, and a
512-bit store read back as two 256-bit halves is not forwarded to the loads (each waits for the
store to reach the cache). A fresh compile had hidden that: Numba links ``node`` into ``rows`` and
optimizes it again there, which kept the terms in registers; but a kernel loaded from the disk
cache calls ``node``'s own compiled code (its strong symbol wins over the linked weak copy), so
every run after the first took the slow round trip (10**7 float16 sum 0.83 ms compiled, 2.15 ms
loaded; a fused row sum of squares 1.3 -> 2.4; row variances 0.85 -> 1.37). With 256-bit vectors
both take 0.72-0.78 ms.
"""
from __future__ import annotations

from ...kernel.reduce import LANES, LEAF, Reduction
from . import tables as _tables

__all__ = ["GROUP", "arg_pass", "tree_lines"]

GROUP = 8   # full leaves whose terms one loop computes (node's buf)

# max / min of a float row as an integer max / min of an order-preserving key of its bits (a
# reduction LLVM vectorizes without fast-math, which a NaN-propagating float compare is not):
# key = bits ^ ((bits >> (w - 1)) & (2**(w-1) - 1)) orders -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN
_KEYS = {32: ("np.int32", "_gpm_as_i32", "_gpm_as_f32"), 64: ("np.int64", "_gpm_as_i64", "_gpm_as_f64")}


def _borrowing(red: Reduction, args: str) -> list[str]:
    """The lines that borrow a function's array arguments (the operands, ``keep``)."""
    arrays = [a for a in args.split(", ") if not a.startswith("s")]
    return [f"    {a} = borrowed({a})" for a in arrays]


def _full(red: Reduction, rowwise) -> list[str]:
    """The operands read element by element (not folded into the kernel, not read once per row)."""
    return [f"x{p.index}" for p in red.params if not p.folded and p.index not in rowwise]


def _prefetching(red: Reduction, rowwise, base: str, count: str, indent: str) -> list[str]:
    """The line asking for the memory the one full operand's row m holds ``count`` elements from
    ``base``, PREFETCH_DISTANCE bytes ahead, or that row m + ahead holds where the caller runs
    blocks of ``ahead`` rows (intrinsics.prefetch_row: why, and what it gains).
    None where two or more operands are read element by element: their streams keep enough
    lines in flight (a fused sum(x * y) of 10**7 float32 reads 46 GB/s without; 12% slower with,
    for the prefetches' own instructions)."""
    full = _full(red, rowwise)
    return [f"{indent}prefetch_row({full[0]}, m, ahead, {base}, {count})"] if len(full) == 1 else []


def _scratch(acc_np: str) -> list[str]:
    # (sizes as literals: scratch() takes a literal count, and Numba types LEAF * GROUP as an int64)
    return [f"    stack = scratch(STACK, {acc_np})", f"    buf = scratch({LEAF * GROUP}, {acc_np})",
            f"    lanes = scratch(LANES, {acc_np})"]


def _leaf_lines(red: Reduction, args: str, ident: str, rowwise) -> tuple[list[str], list[str]]:
    """(node's lines computing ``v``, a leaf's value, for leaf l; the functions they call)."""
    if red.sequential:
        lines = ["", "", "@_jit", f"def leaf({args}, m, k0, k1):",
                 f"    a = {ident}" if red.combine in ("or", "and") else f"    a = elem({args}, m, k0)",
                 f"    for k in range(k0 + {0 if red.combine in ('or', 'and') else 1}, k1):",
                 f"        a = comb(a, elem({args}, m, k))", "    return a"]
        return [f"        v = leaf({args}, m, l * LEAF, min(l * LEAF + LEAF, K))"], lines
    # the leaf inline: LANES running values, lane j taking element k0 + LANES t + j in order of t,
    # then the lanes' tree. A sum or product of plain numbers folds them as vectors
    # (intrinsics.fold_add / fold_multiply: the same operations as the scalar lanes, which LLVM
    # cannot vectorize); the others as LANES scalars over a fixed-trip loop, into ``lanes``
    lines = []
    fold = f"fold_{red.combine}" if red.combine in ("add", "multiply") and red.acc.kind in "fiu" \
        and not red.acc.is_narrow_float else None
    names = [f"r{j}" for j in range(LANES)]
    pairs = [f"lanes[{j}]" for j in range(LANES)]
    while len(pairs) > 1:
        pairs = [f"comb({a}, {b})" for a, b in zip(pairs[::2], pairs[1::2])]
    tree = f"            v = {pairs[0]}"

    def lanes_fold(term, base):
        """A full leaf's value over ``term`` (its element k, for k from ``base``)."""
        return ([f"            {' = '.join(names)} = {ident}",
                 f"            for t in range(LEAF // {LANES}):", f"                k = {base} + {LANES} * t"]
                + [f"                r{j} = comb(r{j}, {term.format(k=f'k + {j}')})" for j in range(LANES)]
                + [f"            lanes[{j}] = r{j}" for j in range(LANES)] + [tree])

    def buf_fold(base):
        """A full leaf's value over its terms in buf from ``base``."""
        return [f"            v = {fold}(buf, {base})"] if fold is not None else lanes_fold("buf[{k}]", base)
    value = ["        k0 = l * LEAF", "        if k0 + LEAF <= K:"]
    only = red.params[0] if len(red.params) == 1 and not red.params[0].folded else None
    if not red.map.steps() and only is not None and only.dtype == red.acc and fold is not None \
            and only.index not in rowwise:
        # the term is the element itself, of the accumulator's type: fold the row's elements
        value += [f"            prefetch_row(x{only.index}, m, ahead, k0, LEAF)", f"            v = {fold}(x{only.index}[m], k0)"]
    elif not _tables.calls_math(red.map) and (red.map.steps() or fold is not None):
        # plain arithmetic (or a conversion to fold): a leaf's terms, then its lanes
        value += [*_prefetching(red, rowwise, "k0", "LEAF", " " * 12),
                  "            for j in range(LEAF):", f"                buf[j] = elem({args}, m, k0 + j)", *buf_fold("0")]
    elif red.map.steps():
        # math: the terms of up to GROUP full leaves at once (one long vector loop, not GROUP short
        # ones, 10% faster for exp; which terms are computed when changes nothing), at the first
        # leaf of each group. (A cheap term is faster in the fixed 128-trip loop above.)
        # (terms(): the loop in a function of its own, as the row maps' row(): inside node,
        # LLVM reloaded exp's constants on every vector iteration. Its index is unsigned: k0 is
        # an argument there, so a signed k0 + j would be checked for wrapping around, lane by
        # lane, and the loads became gathers, 3x slower)
        # A term that is the kept value itself, of the accumulator's type (softmax's exp), is folded
        # from keep's row, where elem stored it: one store an element instead of two
        kept_terms = fold is not None and red.kept is red.map.value and red.kept.dtype == red.acc
        value += ["            g = (l - l0) & (GROUP - 1)", "            if g == 0:",
                  "                n = (min(l + GROUP, l1, K // LEAF) - l) * LEAF",
                  *_prefetching(red, rowwise, "k0", "n", " " * 16),
                  f"                terms({args}, m, k0, n, buf)",
                  *([f"            v = {fold}(keep[m], k0)"] if kept_terms else buf_fold("g * LEAF"))]
        lines += ["", "", "@_jit", f"def terms({args}, m, k0, n, buf):", "    for j in range(n):",
                  f"        {'' if kept_terms else 'buf[j] = '}elem({args}, m, np.uint64(k0 + j))"]
    else:   # the term is the element itself: read it in the lanes' loop
        value += [*_prefetching(red, rowwise, "k0", "LEAF", " " * 12), *lanes_fold(f"elem({args}, m, {{k}})", "k0")]
    # a partial leaf (a row shorter than LEAF, or its end): its whole groups of LANES as a full
    # leaf's, in LANES scalars (5x faster on short rows than one element at a time), then the
    # few left, each into its lane (lane j takes k0 + LANES t + j, in order of t)
    value += ["        else:", f"            {' = '.join(names)} = {ident}",
              f"            for t in range((K - k0) // {LANES}):", f"                k = k0 + {LANES} * t"]
    value += [f"                r{j} = comb(r{j}, elem({args}, m, k + {j}))" for j in range(LANES)]
    value += [f"            lanes[{j}] = r{j}" for j in range(LANES)]
    value += [f"            for k in range(K - (K - k0) % {LANES}, K):",
              f"                lanes[(k - k0) & {LANES - 1}] = comb(lanes[(k - k0) & {LANES - 1}], elem({args}, m, k))",
              tree]
    return value, lines


def tree_lines(red: Reduction, args: str, acc_np: str, ident: str, empty: str | None, rowwise=frozenset()) -> list[str]:
    """node, rows, parts and merge (and the leaf or terms function node calls) of a tree reduction;
    ``ident``: its identity's literal, ``empty``: the value of a row of no elements (None: none)."""
    leaf_value, lines = _leaf_lines(red, args, ident, rowwise)
    push = ["        stack[top] = v", "        top += 1",
            "        c = l - l0 + 1   # the binary counter: leaf c joins as many neighbours as c has trailing zeros",
            "        while (c & 1) == 0:", "            top -= 1",
            "            stack[top - 1] = comb(stack[top - 1], stack[top])", "            c >>= 1"]
    return lines + [
        "", "", "@_jit", "def tree_end(stack, top):",
        "    while top > 1:", "        top -= 1", "        stack[top - 1] = comb(stack[top - 1], stack[top])",
        "    return stack[0]",
        "", "", "@_jit", f"def node({args}, m, K, l0, l1, stack, buf, lanes, ahead):",
        *(["    always_inline()"] if any(line.startswith("def terms(") for line in lines) else ["    prefer_256_bit()"]),
        "    top = 0",
        "    for l in range(l0, l1):", *leaf_value, *push,
        "    return tree_end(stack, top)",
        "", "", "@_jit", f"def rows({args}, out, K, m0, m1, div, ahead):",
        *_borrowing(red, args), "    out = borrowed(out)", *_scratch(acc_np),
        "    nl = (K + LEAF - 1) // LEAF",
        *_along(red, rowwise, _logic(red)), "    for m in range(m0, m1):", *_minmax_pass(red, args, rowwise),
        *_logic_pass(red, args, "rows"),
        f"        out[m] = fin(node({args}, m, K, 0, nl, stack, buf, lanes, ahead) if nl else {empty or 'stack[0]'}, div)",
        "", "", "@_jit", f"def parts({args}, part, K, m, c0, c1):",
        *_borrowing(red, args), "    part = borrowed(part)", *_scratch(acc_np),
        "    nl = (K + LEAF - 1) // LEAF",
        *_along(red, rowwise, _logic(red)), "    for c in range(c0, c1):", *_logic_pass(red, args, "parts"),
        f"        part[c] = node({args}, m, K, c * CHUNK, min(c * CHUNK + CHUNK, nl), stack, buf, lanes, 0)",
        "", "", "@_jit", "def merge(part, out, m, div):",
        f"    stack = scratch(STACK, {acc_np})",
        "    top = 0",
        "    l0 = 0",
        "    for l in range(part.shape[0]):",
        "        v = part[l]", *push,
        "    out[m] = fin(tree_end(stack, top), div)"]


PASS_CHUNK = 2048   # elements of a row a vector pass folds before the next (and asks memory ahead for)


def _extremes(red: Reduction, args: str, guard: str, rowwise, track: bool = False):
    """The lines that give ``hi`` / ``lo``, the max and min of row m's elements (for floats, of an
    order-preserving integer key of their bits, _KEYS), under ``if <guard>:``; the test that no
    NaN was met (None for integers); and ``decode(v)``, the value of key v. The row goes by chunks
    of PASS_CHUNK elements, each asking for its memory ahead first (_prefetching); with ``track``
    also ``bh`` / ``bl``, the first chunk holding the key hi / lo, and ``bn``, the first holding a
    NaN (K if none). (Each loop's index goes to elem unsigned: from a chunk's start, which LLVM
    cannot prove is not negative, a signed one is checked for wrapping around, and the loop did
    not vectorize: 6.5 ms for a float32 max of 10**7, 1.1 unsigned.)"""
    if red.acc.kind in "iu":
        key = decode = (lambda v: v)
        no_nan = nan_in = None
    else:
        width = 64 if red.acc.code == "f8" else 32
        itype, as_int, as_float = _KEYS[width]
        mask = f"{itype}({(1 << (width - 1)) - 1})"

        # Note: the key is cast back to its width: Numba types int32 ^ int32 as int64, and the loop ran
        # in 64-bit lanes, half the elements a vector (a 4096 x 1024 float32 row max: 0.47 ms)
        def key(v):
            return f"{itype}({as_int}({v}) ^ (({as_int}({v}) >> {itype}({width - 1})) & {mask}))"

        def decode(v):
            return f"{as_float}({itype}({v} ^ (({v} >> {itype}({width - 1})) & {mask})))"
        pinf = 0x7FF0000000000000 if width == 64 else 0x7F800000
        ninf = ((pinf | (1 << (width - 1))) ^ ((1 << (width - 1)) - 1)) - (1 << width)   # the key of -inf, signed
        no_nan = f"(hi <= {itype}({pinf})) & (lo >= {itype}({ninf}))"
        nan_in = f"(h > {itype}({pinf})) | (l < {itype}({ninf}))"
    first = "0" if track else "1"
    lines = [f"        if {guard}:", f"            hi = lo = {key(f'elem({args}, m, 0)')}",
             *(["            bh = bl = 0", "            bn = K"] if track else []),
             f"            for c0 in range({first}, K, {PASS_CHUNK}):", f"                c1 = min(c0 + {PASS_CHUNK}, K)",
             *_prefetching(red, rowwise, "c0", "c1 - c0", " " * 16)]
    if not track:
        return lines + ["                for k in range(c0, c1):",
                        f"                    q = {key(f'elem({args}, m, np.uint64(k))')}",
                        "                    hi = max(hi, q)", "                    lo = min(lo, q)"], no_nan, decode
    lines += [f"                h = l = {key(f'elem({args}, m, c0)')}",
              "                for k in range(c0 + 1, c1):", f"                    q = {key(f'elem({args}, m, np.uint64(k))')}",
              "                    h = max(h, q)", "                    l = min(l, q)",
              "                if h > hi:", "                    hi = h", "                    bh = c0",
              "                if l < lo:", "                    lo = l", "                    bl = c0"]
    if nan_in is not None:
        lines += [f"                if bn == K and ({nan_in}):", "                    bn = c0"]
    return lines, no_nan, decode


def _minmax_pass(red: Reduction, args: str, rowwise) -> list[str]:
    """max / min of a row as one vectorizable pass: the integer max and min of the elements' keys
    (floats; the values themselves for integers). Equal to the sequential pass whenever the result
    is neither a zero (whose sign the tie rule picks) nor a NaN (whose payload the first NaN
    gives) -- equal values are then the same bits -- so only those rows run the pass."""
    if red.combine not in ("max", "min") or red.acc.kind not in "fiu":
        return []
    pick = "hi" if red.combine == "max" else "lo"
    lines, no_nan, decode = _extremes(red, args, "K >= 2", rowwise)
    if no_nan is None:
        return lines + [f"            out[m] = fin({pick}, div)", "            continue"]
    return lines + [f"            if {no_nan} & ({pick} != 0) & ({pick} != -1):",
                    f"                out[m] = fin({decode(pick)}, div)", "                continue"]


def arg_pass(red: Reduction, args: str, rowwise=frozenset(), in_loop: bool = False) -> list[str]:
    """argmax / argmin of a real row as vectorizable passes (the sequential comb compares and
    branches on every element, carrying the running value and index: 4.4 ns an element). The
    sequential rule picks the first NaN if there is one, else the first element equal (==, so
    -0.0 and 0.0 alike) to the row's extreme; so: the extreme and whether a NaN occurs (the max /
    min of the elements, of their keys for floats, as _minmax_pass, chunk by chunk, noting the
    first chunk holding the extreme's key and the first holding a NaN), then the least index holding
    it, as a min over selects, in that chunk alone. An extreme that is a zero is looked for from
    the row's start: -0.0 == 0.0 has two keys, and an earlier chunk may hold the other zero. (A long
    row was read twice, the second time from memory: argmax of 10**7 float32 2.27 -> 1.1 ms.)
    Only on rows whose elements are contiguous: down columns (a reduction over a leading axis) each
    pass walks the column again (4096 x 1024 float32 over axis 0: 19 ms in one pass, 52 in two).
    ``in_loop``: the lines in the loop over rows, else the test before it."""
    if red.combine not in ("argmax", "argmin") or red.acc.kind not in "fiu":
        return []
    if not in_loop:
        return _along(red, rowwise)
    pick, chunk = ("hi", "bh") if red.combine == "argmax" else ("lo", "bl")
    value = f"elem({args}, m, np.uint64(k))"

    def first(hit, start, indent):
        return [f"{indent}for k in range({start}, min({start} + {PASS_CHUNK}, K)):",
                f"{indent}    i = min(i, k if {hit} else K)", f"{indent}out[m] = i", f"{indent}continue"]
    lines, no_nan, decode = _extremes(red, args, "along and K >= 2", rowwise, track=True)
    if no_nan is None:
        return lines + ["            i = K", *first(f"{value} == {pick}", chunk, " " * 12)]
    return lines + ["            i = K",
                    f"            if {no_nan}:   # no NaN: the first equal to the extreme",
                    f"                t = {decode(pick)}",
                    f"                s = {chunk} if t != 0 else 0",
                    f"                for k in range(s, K if t == 0 else min(s + {PASS_CHUNK}, K)):",
                    f"                    i = min(i, k if {value} == t else K)",
                    "                out[m] = i", "                continue",
                    *first(f"{value} != {value}", "bn", " " * 12)]   # the first NaN


def _along(red: Reduction, rowwise, wanted: bool = True) -> list[str]:
    """``along``: whether every full operand's rows are contiguous (the vector passes' condition)."""
    if not wanted:
        return []
    full = _full(red, rowwise)
    return [f"    along = {' and '.join(f'{x}.strides[1] == {x}.itemsize' for x in full) or 'True'}"]


def _logic(red: Reduction) -> bool:
    return red.combine in ("or", "and") and red.acc.kind == "b"


# any / all: a row (or a chunk of one) in runs of _RUN elements, each an or that LLVM vectorizes;
# a row stops at the first run that decides it (any: a True; all: a False), as NumPy's do. The
# leaves' sequential pass took 0.48 ns an element (any of 10**7 zeros: 4.8 ms, NumPy 0.15; of random
# bits 4.9 ms, NumPy 2 us). Or and and are exact: any split gives the same answer.
_RUN = 4096


def _logic_pass(red: Reduction, args: str, where: str) -> list[str]:
    if not _logic(red):
        return []
    # (a bool or of bools: LLVM's or-reduction, 0.12 ms for 10**7; a uint8 one widened to int64 by
    # Numba, 0.64 ms)
    # (the index unsigned, as terms()'s: a signed one made the loads gathers, 6 ms for 10**7)
    hit = f"elem({args}, m, np.uint64(k0 + j))"
    hit = hit if red.combine == "or" else f"(not {hit})"
    decided, undecided = ("True", "False") if red.combine == "or" else ("False", "True")
    if where == "parts":   # chunk c of row m: its CHUNK leaves, no early stop (a thread's share)
        return ["        if along:", "            k0 = c * CHUNK * LEAF", "            q = False",
                "            for j in range(min(CHUNK * LEAF, K - k0)):", f"                q = q | {hit}",
                f"            part[c] = {decided} if q else {undecided}", "            continue"]
    return ["        if along:", f"            a = {undecided}",
            f"            for k0 in range(0, K, {_RUN}):", "                q = False",
            f"                for j in range(min({_RUN}, K - k0)):", f"                    q = q | {hit}",
            "                if q:", f"                    a = {decided}", "                    break",
            "            out[m] = fin(a, div)", "            continue"]
