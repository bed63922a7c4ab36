"""The CPU engine's reduction kernels: a kernel/reduce.Reduction becomes a small module of Numba
functions (``reduce_source`` shows it), run over rows and, for long rows, over threads.

Every operand is a 2-d view (rows, K): the kept axes flattened into rows, the reduced axes into K,
in C order. The generated functions:

    elem(args, m, k)        the map kernel's value of element k of row m
    comb(a, b)              the combine (argmax / argmin: pairs of value and index)
    fin(a, div)             the finish kernel: the stored value (narrow floats: their bits)
    leaf / node             one leaf of kernel/reduce.LEAF elements in LANES lanes; the binary
                            counter's tree over leaves l0 .. l1 (kernel/reduce.py's ORDER)
    rows(args, out, K, m0, m1, div, ahead) whole rows, one after another (ahead: program.py)
    parts(args, part, K, m, c0, c1)        the nodes of chunks c0 .. c1 of row m (CHUNK_LEAVES leaves)
    merge(part, out, m, div)               the tree over a row's chunk nodes, finished
    scan(args, out, K, m0, m1)             cumsum / cumprod: every prefix, in order
    native(data, M, K)                     rows() on one C-contiguous (M, K) operand, a C entry point
                                           (the compiled dispatcher's: dispatch/fastpath/reduce_op.c)

``run`` picks rows (over threads when there are many rows) or parts + merge (a few long rows over
threads); both give the same bits, because an aligned chunk of leaves is a complete subtree of the
row's fixed tree. The thread count never changes which additions happen, only who does them.
"""
from __future__ import annotations

import threading

import numpy as np
from numba import cfunc, types as _nbtypes
from numba.core import errors as numba_errors

from ...core import dtypes as D
from ...kernel.reduce import CHUNK_LEAVES, LANES, LEAF, STACK, Reduction, empty_of, identity_of
from . import program as _program
from . import tables as _tables
from . import threads as _threads
from .cache import MATH_INTERLEAVE, cached_cfunc, interleaving
from .modules import load_module as _load_module
from .reduce_columns import COLUMN_SHARE, COLUMNS, batched_lines, columns_fit, columns_lines
from .reduce_tree import GROUP, arg_pass, tree_lines
from .plain import PLAIN as _PLAIN, all_plain, plain_params, round_trips
from .source import (HELPER_IMPORTS, NARROW_HELPERS as _NARROW, cast_text as _cast, jit_line, lower_lines as _lower,
                     np_type_text as _np, storage_view, store_text as _store_text)

__all__ = ["reduce_source", "reduction_for", "run", "run_batched"]

GENERATOR_VERSION = 23
_MIN_PER_THREAD = 1 << 16   # elements per thread at least


def _args(red: Reduction) -> str:
    """The operands every generated function takes, in order, then ``keep`` (the array the kept
    value is stored in) for a reduction that keeps one."""
    names = [f"s{p.index}" if p.folded else f"x{p.index}" for p in red.params]
    return ", ".join(names + (["keep"] if red.kept is not None else []))


def _elem_lines(red: Reduction, rowwise=frozenset(), name="elem", index="[m, k]") -> list[str]:
    """``elem(args, m, k)``; ``name="elemt", index="[k, m]"`` gives the same on operands passed
    transposed, (K, rows) (reduce_columns.py's)."""
    # the float16 operands read only by IEEE arithmetic (a sum's terms, fused or not) are widened
    # plainly (source.plain_params): the combine's fadd / fmul quiets a NaN term itself
    quiet_combine = red.combine in ("add", "multiply") and red.acc is D.float32 and not red.scan
    held = {*(() if quiet_combine else (red.map.value,)), *(() if red.kept is None else (red.kept,))}
    plain = plain_params(red.map, held)
    trips = round_trips(red.map, all_plain(red.map, plain))

    def param(p):
        if p.folded:
            return f"s{p.index}"
        e = f"x{p.index}[m]" if p.index in rowwise else f"x{p.index}{index}"
        if p in plain:
            return f"{_PLAIN[p.dtype.code][0]}({e})"
        return f"{_NARROW[p.dtype.code][0]}({e})" if p.dtype.is_narrow_float else e
    names, lines, direct = _lower(red.map, param, "    ", trips)
    value = names[red.map.value] if direct is None else _cast(names[direct], direct.dtype, red.map.out)
    if red.kept is not None:   # (an element may be visited twice: max / min's lanes, then its pass; the same value)
        kept = value if red.kept is red.map.value else names[red.kept]
        lines.append(f"    keep{index} = {_store_text(kept, red.kept.dtype, red.kept.dtype)}")
    return [f"def {name}({_args(red)}, m, k):", "    always_inline()", *lines, f"    return {value}"]


def _fin_lines(red: Reduction) -> list[str]:
    if red.finish is None:
        return ["def fin(a, div):", f"    return {_store_text('a', red.acc, red.out)}"]
    names, lines, direct = _lower(red.finish, lambda p: "a" if p.index == 0 else "div", "    ")
    src = direct if direct is not None else red.finish.value
    value = names[src]
    return ["def fin(a, div):", *lines, f"    return {_store_text(value, src.dtype, red.out)}"]


def _ident(red: Reduction, empty: bool = False) -> str:
    """The identity's literal; ``empty``: the value of a row of no elements (empty_of)."""
    v = (empty_of if empty else identity_of)(red.combine, red.acc)
    if v is None:
        return None
    if red.start == "pos":
        v = complex(0.0, 0.0) if red.acc.kind == "c" else 0.0
    if red.acc.kind == "b":
        return "True" if v else "False"
    if red.acc.kind == "c":
        return f"{_np(red.acc)}(complex({v.real!r}, {v.imag!r}))"
    return f"{_np(red.acc)}({v!r})"


def _comb_lines(red: Reduction) -> list[str]:
    if red.combine in ("argmax", "argmin"):
        acc = red.acc
        better = ("gp_cgt(bv, av)" if red.combine == "argmax" else "gp_clt(bv, av)") if acc.kind == "c" else \
            ("bv > av" if red.combine == "argmax" else "bv < av")
        nan_a = "(av.real != av.real) | (av.imag != av.imag)" if acc.kind == "c" else \
            ("av != av" if acc.kind == "f" else "False")
        nan_b = nan_a.replace("av", "bv")
        return ["def comb(av, ai, bv, bi):",
                "    # the first extreme, the first NaN",
                f"    if {nan_a}:", "        return av, ai",
                f"    if ({nan_b}) or ({better}):", "        return bv, bi",
                "    return av, ai"]
    if red.tie != "last":   # which of two equal values (0.0, -0.0) max / min keep; NaN wins
        gt = ">" if red.combine == "max" else "<"
        keep_a = ("(a == b) & ~np.signbit(a)" if red.combine == "max" else "(a == b) & np.signbit(a)") \
            if red.tie == "signed" else "(a == b)"
        return ["def comb(a, b):", f"    return a if (a {gt} b) | (a != a) | ({keep_a}) else b"]
    expr = red.expr.replace("in0", "a").replace("in1", "b")
    return ["def comb(a, b):", f"    return {_np(red.acc) if red.acc.kind != 'b' else 'bool'}({expr})"]


def reduce_source(red: Reduction, rowwise=frozenset()) -> str:
    """The generated Python/Numba source of a Reduction. ``rowwise``: the operands passed as one
    value per row (1-d (rows,) arrays: constant along the reduced axes, a broadcast mean or max),
    so that every array the inner loop reads is contiguous or row-constant and LLVM vectorizes it."""
    args = _args(red)
    acc_np = "np.bool_" if red.acc.kind == "b" else _np(red.acc)
    listing = "\n".join(f"    {line}" for line in red.text.splitlines())
    lines = [
        f'"""gpupromote CPU reduction kernel (generator v{GENERATOR_VERSION}) of the IR:',
        listing,
        f"operands read once per row: {sorted(rowwise)}",
        'Written by gpupromote.engines.cpu.reduce. Do not edit."""',
        "import numpy as np",
        "from numba import carray",
        "from gpupromote.engines.cpu.cache import cached_njit",
        *HELPER_IMPORTS,
        "from gpupromote.engines.cpu.intrinsics import always_inline, fold_add, fold_multiply  # noqa: F401",
        "from gpupromote.engines.cpu.intrinsics import prefetch_row  # noqa: F401",
        "",
        jit_line(MATH_INTERLEAVE if _tables.calls_math(red.map) else None),
        f"LEAF, LANES, CHUNK, STACK, GROUP, COLUMNS = {LEAF}, {LANES}, {CHUNK_LEAVES}, {STACK}, {GROUP}, {COLUMNS}",
        "", "", "@_jit", *_elem_lines(red, rowwise), "", "", "@_jit", *_comb_lines(red), "", "", "@_jit", *_fin_lines(red),
    ]
    if red.combine in ("argmax", "argmin"):
        lines += _arg_lines(red, args, rowwise)
    elif red.scan:
        lines += ["", "", "@_jit", f"def scan({args}, out, K, m0, m1):",
                  "    for m in range(m0, m1):",
                  f"        a = {_ident(red)}",
                  "        for k in range(K):",
                  f"            a = comb(a, elem({args}, m, k))",
                  *([f"            a = {_cast('a', red.acc, red.narrow)}"] if red.narrow is not None else []),
                  "            out[m, k] = fin(a, 0.0)"]
    else:
        lines += tree_lines(red, args, acc_np, _ident(red), _ident(red, empty=True), rowwise)
    if columns_fit(red):
        lines += ["", "", "@_jit", *_elem_lines(red, rowwise, "elemt", "[k, m]"),
                  *columns_lines(red, args, acc_np, _ident(red)), *batched_lines(red, rowwise)]
    if _has_native(red, rowwise):
        lines += _native_lines(red)
    return "\n".join(lines) + "\n"


def _has_native(red: Reduction, rowwise) -> bool:
    return not red.scan and not rowwise and len(red.params) == 1 and not red.params[0].folded and red.kept is None


def _storage_np(d: D.DType) -> str:
    return f"np.{_NARROW[d.code][3].__name__}" if d.is_narrow_float else _np(d)


def _native_lines(red: Reduction) -> list[str]:
    """``native(data, M, K)``: rows() over all M rows of the operand at ``data[0]`` (C-contiguous,
    M x K elements of its storage type) into the M results at ``data[1]``, dividing by K (mean)."""
    p = red.params[0]
    return ["", "", "def native(data, M, K):",
            f"    x{p.index} = carray(data[0], (M, K), {_storage_np(p.dtype)})",
            f"    out = carray(data[1], (M,), {_storage_np(red.out)})",
            f"    rows(x{p.index}, out, K, 0, M, np.float64(K), 0)"]


def _arg_lines(red: Reduction, args: str, rowwise) -> list[str]:
    return ["", "", "@_jit", f"def rows({args}, out, K, m0, m1, div, ahead):", *arg_pass(red, args, rowwise),
            "    for m in range(m0, m1):", *arg_pass(red, args, rowwise, in_loop=True),
            f"        av = elem({args}, m, 0)",
            "        ai = 0",
            "        for k in range(1, K):",
            f"            av, ai = comb(av, ai, elem({args}, m, k), k)",
            "        out[m] = ai"]


# ---------------------------------------------------------------------------------------------
# Compiling and running

class _Compiled:
    def __init__(self, red: Reduction, rowwise=frozenset()):
        self.red = red
        self.source = reduce_source(red, rowwise)
        self.module = _load_module(self.source)
        self.views = [None if p.folded else storage_view(p.dtype) for p in red.params]
        self.out_view = storage_view(red.out)
        self.acc_np = np.dtype(np.bool_) if red.acc.kind == "b" else red.acc.numpy
        self._native = None

    def native(self):
        """The module's ``native`` compiled as a C function (or loaded from the disk cache), on
        first use; None for reductions without one (scans, more than one operand)."""
        if self._native is None and hasattr(self.module, "native"):
            with _lock:
                if self._native is None:
                    make = cfunc if getattr(self.module, "__gp_in_memory__", False) else cached_cfunc
                    with interleaving(MATH_INTERLEAVE if _tables.calls_math(self.red.map) else None):
                        self._native = make(_NATIVE_SIGNATURE, error_model="numpy", boundscheck=False)(self.module.native)
        return self._native


_compiled: dict = {}
_lock = threading.RLock()
# native(data, M, K): void(char **data, int64 M, int64 K) in C (gp_reduce_kernel in dispatch/fastpath/fastpath.h)
_NATIVE_SIGNATURE = _nbtypes.void(_nbtypes.CPointer(_nbtypes.voidptr), _nbtypes.int64, _nbtypes.int64)


def reduction_for(red: Reduction, rowwise=frozenset()) -> _Compiled:
    key = (red, rowwise)
    c = _compiled.get(key)
    if c is None:
        with _lock:
            c = _compiled.get(key)
            if c is None:
                c = _compiled[key] = _Compiled(red, rowwise)
    return c


def run(red: Reduction, args, out, K: int, div: float = 0.0, keep=None):
    """Evaluate ``red`` over ``args`` (2-d (rows, K) views, or folded scalars) into ``out``: 1-d
    (rows,) for a reduction, 2-d (rows, K) for a scan. ``keep``: the (rows, K) array the kept
    value goes to, for a reduction that keeps one."""
    if (keep is None) != (red.kept is None):
        raise ValueError(f"reduction {red.label}: keep= is the array for its kept value, and only for one that keeps one")
    rowwise = frozenset(i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim == 2 and a.shape[1] > 1
                        and a.strides[1] == 0 and not red.scan)
    if rowwise:
        args = [a[:, 0] if i in rowwise else a for i, a in enumerate(args)]
    c = reduction_for(red, rowwise)
    args = _storage_args(args, c)
    if keep is not None:
        view = storage_view(red.kept.dtype)
        args = [*args, keep if view is None else keep.view(view)]
    o = out if c.out_view is None else out.view(c.out_view)
    M = o.shape[0]
    mod = c.module
    try:
        if red.scan:
            _program.spoil()
            _over_rows(lambda m0, m1: mod.scan(*args, o, K, m0, m1), M, K)
            return out
        transposed = _transposed(args, rowwise) if columns_fit(red) and M > 1 and K > 1 else None
        if transposed is not None:
            # threads take whole runs of columns: a narrower share reads part of each cache line
            _program.spoil()
            _over_rows(lambda m0, m1: mod.cols(*transposed, o, K, m0, m1, div), M, K, min_rows=COLUMN_SHARE)
            return out
        if M == 1 and not red.combine.startswith("arg") and K >= 2 * _MIN_PER_THREAD and _threads.thread_count() > 1:
            _program.spoil()
            _long_row(mod, c, args, o, K, div)
            return out
        # (a staged gp.fuse call's recording: the launch, its output and kept value written)
        _program.note(mod.rows, [*args, o, K, _program.ROW0, _program.ROW1, div, _program.AHEAD], M, M * K,
                      (len(args), len(args) - 1) if keep is not None else (len(args),))
        _over_rows(lambda m0, m1: mod.rows(*args, o, K, m0, m1, div, 0), M, K)
    except numba_errors.NumbaError as exc:
        raise _no_kernel(red, exc) from None
    return out


def run_batched(red: Reduction, args, out, K: int, batches: int, div: float = 0.0):
    """``red`` over ``batches`` batches as columns (reduce_columns.py ``colsb``): array operands
    (B, K, M2) C-contiguous, 1-d ones (B * M2,) one value per result, or folded scalars; ``out``
    (B * M2,). For the reduced axes between kept ones, which ``run``'s (rows, K) views would copy."""
    rowwise = frozenset(i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim == 1)
    _program.spoil()
    c = reduction_for(red, rowwise)
    args = _storage_args(args, c)
    o = out if c.out_view is None else out.view(c.out_view)
    M2 = o.shape[0] // batches
    parts = min(_threads.thread_count(), batches, max(1, (o.shape[0] * K) // _MIN_PER_THREAD))
    try:
        _threads.run_ranges(lambda b0, b1: c.module.colsb(*args, o, K, M2, b0, b1, div),
                            _threads.split_range(batches, parts) if parts > 1 else [(0, batches)])
    except numba_errors.NumbaError as exc:
        raise _no_kernel(red, exc) from None
    return out


def _storage_args(args, c: _Compiled):
    """The array operands viewed as the kernel reads them (narrow floats as their bits)."""
    return [a if v is None or not isinstance(a, np.ndarray) else a.view(v) for a, v in zip(args, c.views)]


def _no_kernel(red: Reduction, exc) -> TypeError:
    return TypeError(f"the CPU engine has no reduction kernel for {red.label} on "
                     f"{[p.dtype.name for p in red.params]} ({str(exc).splitlines()[0][:200]}):\n{red.text}")


def _transposed(args, rowwise):
    """The operands as (K, rows) C-contiguous arrays when every (rows, K) one is the transpose of
    a C-contiguous array (the reduced axes lead, the kept ones follow: reduce_columns.py), else
    None. Folded scalars and rowwise operands pass as they are."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and i not in rowwise:
            t = a.T
            if not t.flags.c_contiguous:
                return None
            a = t
        out.append(a)
    return out


# Below this many elements run() uses one thread and one call of the rows loop (_over_rows, _long_row).
ONE_CALL_MAX = 2 * _MIN_PER_THREAD - 1


def one_call(red: Reduction):
    """``call(x2, out, K, div)``: run() for one (M, K) array operand of at most ONE_CALL_MAX elements,
    without run()'s per-call decisions (what dispatch/reduce.py's cached whole-array calls use)."""
    c = reduction_for(red)
    view, out_view = c.views[0], c.out_view

    def call(x2, out, K, div):
        x2, o = x2 if view is None else x2.view(view), out if out_view is None else out.view(out_view)
        if _program.active():   # (a staged gp.fuse call's recording; the check alone on tiny calls)
            _program.note(c.module.rows, [x2, o, K, _program.ROW0, _program.ROW1, div, _program.AHEAD], x2.shape[0],
                          x2.size, (1,))
        try:
            c.module.rows(x2, o, K, 0, x2.shape[0], div, 0)
        except numba_errors.NumbaError:
            run(red, [x2], out, K, div)   # raises the TypeError that names the kernel
    return call


def _over_rows(fn, M: int, K: int, min_rows: int = 1):
    threads = _threads.thread_count()
    parts = min(threads, max(1, M // min_rows), max(1, (M * max(K, 1)) // _MIN_PER_THREAD))
    _threads.run_ranges(fn, _threads.split_range(M, parts) if parts > 1 else [(0, M)])


def _long_row(mod, c, args, o, K, div):
    """One long row: its chunk nodes over threads, then the tree above them here."""
    nl = -(-K // LEAF)
    nc = -(-nl // CHUNK_LEAVES)
    part = np.empty(nc, c.acc_np)
    parts = min(_threads.thread_count(), max(1, K // _MIN_PER_THREAD), nc)
    _threads.run_ranges(lambda c0, c1: mod.parts(*args, part, K, 0, c0, c1), _threads.split_range(nc, parts))
    mod.merge(part, o, 0, div)
