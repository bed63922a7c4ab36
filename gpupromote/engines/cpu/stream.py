"""The streaming loop of a generated kernel module (``stream``): flat with non-temporal stores
(intrinsics.stream_store), for a contiguous call of plain arithmetic whose bytes would leave the
caches anyway (kernels._Compiled.contiguous decides: kernels.stream_min_bytes; not into an output
the OS has just given, pool.fresh). The store then does
not first read each line it overwrites: 10**7 float32 on a Zen 5 core, one thread, a + b 2.78 ->
2.04-2.18 ms, a + b into float16 2.56 -> 1.77-1.92. Not for kernels that call the math library:
their loops are bound by arithmetic (a float32 tanh's twin loop with streaming stores ran 4.9 ms
instead of 3.8), except one call of a lean float16 entry (tables.calls_lean_only), 5 cycles per
16 elements in the cache and so bound by memory: 10**7 float16 tanh 0.87 -> 0.83 ms.

Apart from source.py because it is one loop's text: source() writes it after the others, from the
element body source.py generates.
"""
from __future__ import annotations

from .tables import calls_lean_only, calls_math

__all__ = ["STREAM_BLOCK", "streams", "stream_lines"]

# the streaming loop's range is a whole number of these elements: more than any vector loop over it
# takes an iteration (64 one-byte lanes, four vectors in flight), so its scalar remainder never runs
STREAM_BLOCK = 256


def streams(kernel) -> bool:
    """Whether ``kernel``'s module has ``stream``: plain arithmetic or one lean float16 entry
    (memory-bound) with no checks, into a real or bool output."""
    return not kernel.checks and (not calls_math(kernel) or calls_lean_only(kernel)) and kernel.out.kind in "biuf"


def stream_lines(kernel, params: str, first: list[str], body: list[str]) -> list[str]:
    """``stream(<params>)``: flat over the elements before out's first 64-byte boundary
    (intrinsics.stream_head) and after the last whole STREAM_BLOCK, the streaming loop between,
    then a store fence. ``first``: the function's first statements (source.vector_width_lines);
    ``body``: one element read from ``y<k>[i]`` and stream-stored into ``d[i]``. Jitted on first
    use, as the strided loops are."""
    arrays = [p.index for p in kernel.params if not p.folded]
    head = ", ".join([f"x{p.index}[:h]" if not p.folded else f"s{p.index}" for p in kernel.params] + ["out[:h]"])
    tail = head.replace("[:h]", "[e:]")
    # why the views y<k>, d of the aligned range, indexed from 0: indexing the arrays with i from h
    # on (which Numba must check for a negative index) made LLVM gather each element
    return ["", "", f"def stream({params}):", *first,
            "    h = stream_head(out)",
            f"    e = h + (out.shape[0] - h) // {STREAM_BLOCK} * {STREAM_BLOCK}",
            f"    flat({head})",
            *[f"    y{k} = x{k}[h:e]" for k in arrays],
            "    d = out[h:e]",
            "    for i in range(d.shape[0]):",
            *body,
            f"    flat({tail})",
            "    stream_fence()"]
