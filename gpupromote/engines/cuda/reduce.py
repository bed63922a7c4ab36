"""CUDA C++ for a kernel/reduce.Reduction: the same order of combination as the CPU engine's
(engines/cpu/reduce.py), so that both give the same bits. Pure text, like source.py.

Every thread works alone (no shared memory, no atomics, nothing that depends on the grid):

    <name>_parts(M, K, nc, cl, cols, part, operands...)
                                                grid-stride over (row m, part c): the node of the
                                                cl leaves c*cl .. of row m (cl a power of two;
                                                leaves of LEAF elements, the binary counter's tree
                                                over them), stored in part[m * nc + c]; run() gives
                                                the sequential combines one leaf a thread (cl = 1)
    <name>_fold(M, n, src, dst)                 grid-stride over (row m, group g): the tree of the
                                                aligned group of FOLD nodes src[m*n + g*FOLD ..],
                                                stored in dst[m * ceil(n/FOLD) + g]; run() folds a
                                                row of more than FOLD nodes until FOLD are left
    <name>_merge(M, nc, div, part, y)           grid-stride over rows: the counter's tree over the
                                                row's nodes, finished, stored in y[m]
    <name>_rows(M, K, div, y, operands...)      argmax / argmin: one row per thread, in order
    <name>_scan(M, K, y, operands...)           cumsum / cumprod: one row per thread, in order

An operand is ``const char* x<i>, long long x<i>_sm, long long x<i>_sk`` (its data, and the byte
strides of the (rows, K) view); a folded one ``<carrier type> s<i>``. The tree above aligned chunks
is the tree of the whole row (kernel/reduce.py), so the grid never changes the result; the same
holds one level up: FOLD is a power of two, so an aligned group of FOLD chunk nodes is a complete
subtree of the counter's tree, and the counter over the groups' trees (the last group's own
counter tree included) is the counter over the nodes. Folding is for speed: one thread merging a
row's 4,883 nodes (10^7 elements) in a dependent chain of loads took ~0.5 ms on an H200.
"""
from __future__ import annotations

import re

from ...kernel import ir
from ...kernel.reduce import CHUNK_LEAVES, LANES, LEAF, STACK, Reduction, empty_of, identity_of
from .rawlaunch import BLOCK, Launches, scalar_format
from .source import (LOADS, STORE_FUNCTIONS, apply_text, cast_text, compute_ctype, const_text, prologue,
                     round_to_narrow_text, storage_ctype)

__all__ = ["reduction_name", "reduction_code", "reduction_source", "kernel_names", "chunks", "fold_levels", "run"]

FOLD = 32                  # nodes a _fold thread combines: a power of two (an aligned group is a complete subtree)


def reduction_name(red: Reduction) -> str:
    label = re.sub(r"\W", "_", red.label)[:24]
    return f"gp_red_{label}_{red.digest}"


def kernel_names(red: Reduction) -> list[str]:
    n = reduction_name(red)
    if red.combine in ("argmax", "argmin"):
        return [f"{n}_rows"]
    if red.scan:
        return [f"{n}_scan"]
    if not red.sequential:
        return [f"{n}_lanes", f"{n}_leaves", f"{n}_fold", f"{n}_merge"]
    return [f"{n}_parts", f"{n}_fold", f"{n}_merge"]


def _acc_c(red: Reduction) -> str:
    return compute_ctype(red.acc)


def _ident(red: Reduction, empty: bool = False) -> str | None:
    """The identity's C literal; ``empty``: the value of a row of no elements (empty_of)."""
    v = (empty_of if empty else identity_of)(red.combine, red.acc)
    if v is None:
        return None
    if red.start == "pos":
        v = complex(0.0, 0.0) if red.acc.kind == "c" else 0.0
    acc, c = red.acc, _acc_c(red)
    if acc.kind == "b":
        return "true" if v else "false"
    if acc.kind == "c":
        part = "double" if acc.code == "c16" else "float"
        return f"{c}(({part}){v.real!r}, ({part}){v.imag!r})"
    if acc.kind == "f":
        return f"(({c}){v!r})"
    return f"(({c}){v})"


def _functor(red: Reduction, fname: str) -> str:
    members = []
    for p in red.params:
        if p.folded:
            members.append(f"  {compute_ctype(p.dtype)} s{p.index};")
        else:
            members.append(f"  const char* x{p.index}; long long x{p.index}_sm, x{p.index}_sk;")
    if red.kept is not None:
        members.append("  char* keep; long long keep_sm, keep_sk;")

    def param(p):
        if p.folded:
            return f"s{p.index}"
        e = f"*reinterpret_cast<const {storage_ctype(p.dtype)}*>(x{p.index} + m * x{p.index}_sm + k * x{p.index}_sk)"
        load = LOADS[p.dtype.code]
        return f"{load}({e})" if load else f"({e})"

    names, steps, direct = ir.lower(red.map, param, cast_text, apply_text, const_text)
    lets = [f"    const {compute_ctype(node.dtype)} {name} = {value};" for name, node, value in steps]
    value = names[red.map.value] if direct is None else cast_text(names[direct], direct.dtype, red.map.out)
    if red.kept is not None:   # (the engines store the same value: an element visited twice writes it twice)
        kept = value if red.kept is red.map.value else names[red.kept]
        lets.append(f"    *reinterpret_cast<{storage_ctype(red.kept.dtype)}*>(keep + m * keep_sm + k * keep_sk) = "
                    f"{_stored_text(kept, red.kept.dtype, red.kept.dtype)};")
    acc = _acc_c(red)
    expr = red.expr.replace("in0", "a").replace("in1", "b")
    if red.tie != "last":   # which of two equal values (0.0, -0.0) max / min keep; NaN wins
        gt = ">" if red.combine == "max" else "<"
        keep_a = ("(a == b && !signbit(a))" if red.combine == "max" else "(a == b && signbit(a))") \
            if red.tie == "signed" else "(a == b)"
        expr = f"(a {gt} b || a != a || {keep_a}) ? a : b"
    lines = [f"struct {fname} {{", *members,
             f"  GP_DEV {acc} elem(long long m, long long k) const {{", *lets, f"    return {value};", "  }",
             f"  GP_DEV static {acc} comb({acc} a, {acc} b) {{ return ({acc})({expr}); }}"]
    out = red.out
    if red.combine not in ("argmax", "argmin"):
        if red.finish is None:
            fin_lets, src, src_name = [], red.acc, "a"
        else:
            fnames, fsteps, fdirect = ir.lower(red.finish, lambda p: "a" if p.index == 0 else "div",
                                               cast_text, apply_text, const_text)
            fin_lets = [f"    const {compute_ctype(node.dtype)} {name} = {value};" for name, node, value in fsteps]
            node = fdirect if fdirect is not None else red.finish.value
            src, src_name = node.dtype, fnames[node]
        stored = _stored_text(src_name, src, out)
        lines += [f"  GP_DEV static {storage_ctype(out)} fin({acc} a, double div) {{", *fin_lets,
                  f"    return {stored};", "  }"]
    lines.append("};")
    return "\n".join(lines) + "\n"


def _stored_text(name: str, src, out) -> str:
    """The storage value of ``name`` (of dtype ``src``) stored as ``out``."""
    if out.code in ("f2", "bf", "e4", "e5"):
        return round_to_narrow_text(name, src, out)
    if out.code in STORE_FUNCTIONS:
        return f"{STORE_FUNCTIONS[out.code]}({cast_text(name, src, out)})"
    return f"({storage_ctype(out)})({cast_text(name, src, out)})"


def _operand_params(red: Reduction) -> tuple[list[str], str]:
    decls, inits = [], []
    for p in red.params:
        if p.folded:
            decls.append(f"{compute_ctype(p.dtype)} s{p.index}")
            inits.append(f"s{p.index}")
        else:
            decls += [f"const char* __restrict__ x{p.index}", f"long long x{p.index}_sm", f"long long x{p.index}_sk"]
            inits += [f"x{p.index}", f"x{p.index}_sm", f"x{p.index}_sk"]
    if red.kept is not None:
        decls += ["char* __restrict__ keep", "long long keep_sm", "long long keep_sk"]
        inits += ["keep", "keep_sm", "keep_sk"]
    return decls, "{" + ", ".join(inits) + "}"


def _node(red: Reduction, fname: str, nname: str) -> str:
    acc, ident = _acc_c(red), _ident(red)
    lines = [f"GP_DEV {acc} {nname}(const {fname}& f, long long m, long long K, long long l0, long long l1) {{",
             f"  {acc} stack[{STACK}];", "  int top = 0;",
             "  for (long long l = l0; l < l1; ++l) {",
             f"    const long long k0 = l * {LEAF};",
             f"    const long long k1 = k0 + {LEAF} < K ? k0 + {LEAF} : K;"]
    if red.sequential:
        if red.combine in ("or", "and"):
            lines += [f"    {acc} v = {ident};", "    for (long long k = k0; k < k1; ++k) v = f.comb(v, f.elem(m, k));"]
        else:
            lines += [f"    {acc} v = f.elem(m, k0);", "    for (long long k = k0 + 1; k < k1; ++k) v = f.comb(v, f.elem(m, k));"]
    else:
        lanes = [f"r{j}" for j in range(LANES)]
        lines += [f"    {acc} {', '.join(f'{r} = {ident}' for r in lanes)};",
                  f"    if (k1 - k0 == {LEAF}) {{",
                  f"      for (int t = 0; t < {LEAF // LANES}; ++t) {{",
                  f"        const long long k = k0 + {LANES} * t;",
                  *(f"        r{j} = f.comb(r{j}, f.elem(m, k + {j}));" for j in range(LANES)),
                  "      }", "    } else {",
                  "      for (long long k = k0; k < k1; ++k) {",
                  f"        const {acc} e = f.elem(m, k);",
                  f"        switch ((int)((k - k0) & {LANES - 1})) {{",
                  *(f"          case {j}: r{j} = f.comb(r{j}, e); break;" for j in range(LANES)),
                  "        }", "      }", "    }",
                  f"    const {acc} v = f.comb(f.comb(f.comb(r0, r1), f.comb(r2, r3)), f.comb(f.comb(r4, r5), f.comb(r6, r7)));"]
    lines += ["    stack[top++] = v;",
              "    // the binary counter: leaf c joins as many complete neighbours as c has trailing zeros",
              "    for (long long c = l - l0 + 1; (c & 1) == 0; c >>= 1) {",
              "      --top; stack[top - 1] = f.comb(stack[top - 1], stack[top]);", "    }",
              "  }",
              "  while (top > 1) { --top; stack[top - 1] = f.comb(stack[top - 1], stack[top]); }",
              "  return stack[0];", "}"]
    return "\n".join(lines) + "\n"


def reduction_code(red: Reduction) -> str:
    """The functor and the extern "C" kernels of one Reduction, without the #includes."""
    name = reduction_name(red)
    fname = f"{name}_f"
    decls, init = _operand_params(red)
    acc, out = _acc_c(red), storage_ctype(red.out)
    header = "".join(f"// {line}\n" for line in red.text.splitlines())
    code = [header, _functor(red, fname)]
    grid = ["  const long long stride = (long long)blockDim.x * (long long)gridDim.x;",
            "  const long long start = (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;"]
    if red.combine in ("argmax", "argmin"):
        better = ("gp_cgt(b, a)" if red.combine == "argmax" else "gp_clt(b, a)") if red.acc.kind == "c" else \
            ("b > a" if red.combine == "argmax" else "b < a")
        nan = {"c": "({0}.real() != {0}.real() || {0}.imag() != {0}.imag())", "f": "({0} != {0})"}.get(red.acc.kind, "false")
        code.append("\n".join([
            f'extern "C" __global__ void {name}_rows(long long M, long long K, double div, long long* __restrict__ y, '
            f'{", ".join(decls)}) {{',
            f"  const {fname} f = {init};", *grid,
            "  for (long long m = start; m < M; m += stride) {",
            f"    {acc} a = f.elem(m, 0); long long ai = 0;",
            "    for (long long k = 1; k < K; ++k) {",
            f"      const {acc} b = f.elem(m, k);",
            "      // the first extreme, the first NaN",
            f"      if (!{nan.format('a')} && ({nan.format('b')} || {better})) {{ a = b; ai = k; }}",
            "    }", "    y[m] = ai;", "  }", "}", ""]))
        return "".join(code)
    if red.scan:
        code.append("\n".join([
            f'extern "C" __global__ void {name}_scan(long long M, long long K, {out}* __restrict__ y, {", ".join(decls)}) {{',
            f"  const {fname} f = {init};", *grid,
            "  for (long long m = start; m < M; m += stride) {",
            f"    {acc} a = {_ident(red)};",
            "    for (long long k = 0; k < K; ++k) {",
            "      a = f.comb(a, f.elem(m, k));",
            *([f"      a = {cast_text('a', red.acc, red.narrow)};"] if red.narrow is not None else []),
            "      y[m * K + k] = f.fin(a, 0.0);", "    }",
            "  }", "}", ""]))
        return "".join(code)
    code.append(_node(red, fname, f"{name}_node"))
    if not red.sequential:
        code.append(_lane_kernels(red, name, fname, decls, init, grid))
    code.append("\n".join([
        f'extern "C" __global__ void {name}_parts(long long M, long long K, long long nc, long long cl, long long cols, '
        f'{acc}* __restrict__ part, {", ".join(decls)}) {{',
        f"  const {fname} f = {init};", *grid,
        f"  const long long nl = (K + {LEAF - 1}) / {LEAF};",
        "  for (long long i = start; i < M * nc; i += stride) {",
        "    const long long m = cols ? i % M : i / nc, c = cols ? i / M : i % nc;   // cols: as in _lanes",
        "    const long long l1 = (c + 1) * cl < nl ? (c + 1) * cl : nl;",
        f"    part[m * nc + c] = {name}_node(f, m, K, c * cl, l1);",
        "  }", "}", "",
        f"GP_DEV {acc} {name}_tree(const {acc}* __restrict__ s, long long n) {{   // n >= 1 nodes",
        f"  {acc} stack[{STACK}]; int top = 0;",
        "  for (long long l = 0; l < n; ++l) {",
        "    stack[top++] = s[l];",
        "    for (long long c = l + 1; (c & 1) == 0; c >>= 1) {",
        f"      --top; stack[top - 1] = {fname}::comb(stack[top - 1], stack[top]);", "    }",
        "  }",
        f"  while (top > 1) {{ --top; stack[top - 1] = {fname}::comb(stack[top - 1], stack[top]); }}",
        "  return stack[0];", "}", "",
        f'extern "C" __global__ void {name}_fold(long long M, long long n, const {acc}* __restrict__ src, '
        f'{acc}* __restrict__ dst) {{',
        *grid,
        f"  const long long ng = (n + {FOLD - 1}) / {FOLD};",
        "  for (long long i = start; i < M * ng; i += stride) {",
        f"    const {acc}* s = src + (i / ng) * n + (i % ng) * {FOLD};",
        f"    const long long cnt = n - (i % ng) * {FOLD};",
        f"    if (cnt >= {FOLD}) {{   // the complete subtree, its loads issued together",
        f"      {acc} v[{FOLD}];",
        f"#pragma unroll\n      for (int j = 0; j < {FOLD}; ++j) v[j] = s[j];",
        f"#pragma unroll\n      for (int w = 1; w < {FOLD}; w *= 2)",
        f"#pragma unroll\n        for (int j = 0; j < {FOLD}; j += 2 * w) v[j] = {fname}::comb(v[j], v[j + w]);",
        "      dst[i] = v[0];",
        f"    }} else {{ dst[i] = {name}_tree(s, cnt); }}",
        "  }", "}", "",
        f'extern "C" __global__ void {name}_merge(long long M, long long nc, double div, const {acc}* __restrict__ part, '
        f'{out}* __restrict__ y) {{',
        *grid,
        "  for (long long m = start; m < M; m += stride) {",
        f"    y[m] = {fname}::fin(nc ? {name}_tree(part + m * nc, nc) : {_ident(red, empty=True) or 'part[0]'}, div);",
        "  }", "}", ""]))
    return "".join(code)


def _lane_kernels(red: Reduction, name, fname, decls, init, grid) -> str:
    """The coalesced schedule of the same order: ``_lanes``, one thread per (row, leaf, lane) (a
    warp reads four leaves' eight lanes side by side), then ``_leaves``, one thread per (row,
    chunk): each leaf's lanes combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), the leaves by the
    binary counter; ``_merge`` as for the other reductions."""
    acc = _acc_c(red)
    return "\n".join([
        f'extern "C" __global__ void {name}_lanes(long long M, long long K, long long cols, {acc}* __restrict__ lanes, '
        f'{", ".join(decls)}) {{',
        f"  const {fname} f = {init};", *grid,
        f"  const long long nl = (K + {LEAF - 1}) / {LEAF};",
        f"  for (long long i = start; i < M * nl * {LANES}; i += stride) {{",
        "    // cols: neighbouring threads take neighbouring results (operands whose rows are next to each",
        "    // other in memory: a reduction over leading axes), else neighbouring lanes of one row",
        f"    const long long m = cols ? i % M : i / (nl * {LANES}), r = cols ? i / M : i % (nl * {LANES});",
        f"    const long long l = r / {LANES}, j = r % {LANES};",
        f"    const long long k0 = l * {LEAF}, k1 = k0 + {LEAF} < K ? k0 + {LEAF} : K;",
        f"    {acc} a = {_ident(red)};",
        f"    for (long long k = k0 + j; k < k1; k += {LANES}) a = f.comb(a, f.elem(m, k));",
        f"    lanes[(m * nl + l) * {LANES} + j] = a;", "  }", "}", "",
        f'extern "C" __global__ void {name}_leaves(long long M, long long K, long long nc, {acc}* __restrict__ part, '
        f'const {acc}* __restrict__ lanes) {{',
        *grid,
        f"  const long long nl = (K + {LEAF - 1}) / {LEAF};",
        "  for (long long i = start; i < M * nc; i += stride) {",
        "    const long long m = i / nc, c = i % nc;",
        f"    const long long l0 = c * {CHUNK_LEAVES}, l1 = l0 + {CHUNK_LEAVES} < nl ? l0 + {CHUNK_LEAVES} : nl;",
        f"    {acc} stack[{STACK}]; int top = 0;",
        "    for (long long l = l0; l < l1; ++l) {",
        f"      const {acc}* r = lanes + (m * nl + l) * {LANES};",
        f"      stack[top++] = {fname}::comb({fname}::comb({fname}::comb(r[0], r[1]), {fname}::comb(r[2], r[3])), "
        f"{fname}::comb({fname}::comb(r[4], r[5]), {fname}::comb(r[6], r[7])));",
        "      for (long long b = l - l0 + 1; (b & 1) == 0; b >>= 1) {",
        f"        --top; stack[top - 1] = {fname}::comb(stack[top - 1], stack[top]);", "      }",
        "    }",
        f"    while (top > 1) {{ --top; stack[top - 1] = {fname}::comb(stack[top - 1], stack[top]); }}",
        f"    part[i] = top ? stack[0] : {_ident(red)};",
        "  }", "}", ""])


def _kernels_of(red: Reduction):
    return [red.map] + ([red.finish] if red.finish is not None else [])


def reduction_source(reds) -> str:
    """One translation unit holding the kernels of one or several Reductions."""
    reds = [reds] if isinstance(reds, Reduction) else list(reds)
    kernels = [k for r in reds for k in _kernels_of(r)]
    any_complex = any(d.kind == "c" for k in kernels for d in k.dtypes())
    seen, parts = set(), []
    for r in reds:
        name = reduction_name(r)   # (equal IR under two labels: two names, both defined)
        if name not in seen:
            seen.add(name)
            parts.append(reduction_code(r))
    return prologue(kernels, any_complex) + "\n".join(parts)


def chunks(K: int) -> int:
    """The chunk nodes of a row of K elements (the parts kernel's nc)."""
    return -(-(-(-K // LEAF)) // CHUNK_LEAVES)


def fold_levels(nc: int) -> list[int]:
    """The node counts of a row that _fold reduces, in turn (each fold leaves ceil(n / FOLD)),
    until at most FOLD nodes are left for _merge."""
    levels = []
    while nc > FOLD:
        levels.append(nc)
        nc = -(-nc // FOLD)
    return levels



# ---------------------------------------------------------------------------------------------
# Launching (CuPy arrays)

_loaded: dict = {}
_by_id: dict = {}    # (id(red), device) -> (red, (module, name)): the hot path, no hashing of red


def _module(red: Reduction, device_id: int):
    """(the module holding red's kernels on device_id, their name prefix)."""
    hit = _by_id.get((id(red), device_id))
    if hit is not None and hit[0] is red:   # why: the entry holds red, so its id is not reused
        return hit[1]
    name = reduction_name(red)
    key = (name, device_id)   # (the label is part of the kernels' names)
    mod = _loaded.get(key)
    if mod is None:
        from .modules import load_module
        src = reduction_source(red)
        mod = _loaded[key] = load_module(src, "cupy/complex.cuh" in src, device_id)[0]
    if len(_by_id) > 4096:
        _by_id.clear()
    _by_id[(id(red), device_id)] = (red, (mod, name))
    return mod, name


def _columns(args, red: Reduction) -> bool:
    """Whether the first array operand's rows lie closer together than its elements along K (a
    reduction over leading axes): the kernels then give neighbouring threads neighbouring rows, so
    that a warp's loads are coalesced. Which thread computes what changes no result."""
    for a, p in zip(args, red.params):
        if not p.folded:
            sm, sk = (a[1], a[2]) if isinstance(a, tuple) else a.strides
            return 0 < abs(sm) < abs(sk)
    return False


def _grid(n: int) -> int:
    return max(1, min(-(-n // BLOCK), 1 << 20))


def run(red: Reduction, args, out, K: int, div: float = 0.0, device_id: int = 0, keep=None, fast: bool = True):
    """``red`` over ``args`` on the current device into ``out`` (a contiguous CuPy array of the
    result's storage: (rows,) for a reduction, (rows, K) for a scan). An array operand is a
    (rows, K) CuPy view, or (array, row stride, K stride) in bytes (a stride 0 broadcasts it);
    a folded operand is its value. The grid never changes the result (the module docstring).
    ``keep``: where the kept value goes (its storage, as an operand is given), for a reduction that keeps one.
    ``fast=False``: every launch through CuPy (rawlaunch.py), for the tests of both launchers."""
    ops, fmt = [], ""
    for a, p in zip(args, red.params):
        if p.folded:
            code = scalar_format(compute_ctype(p.dtype))
            fast = fast and code is not None   # (a complex value: CuPy packs it)
            ops.append(a)   # already of its carrier type (dispatch/folding.fold_operand)
            fmt += code or "O"
        elif isinstance(a, tuple):
            ops += a
            fmt += "Qqq"
        else:
            ops += [a, a.strides[0], a.strides[1]]
            fmt += "Qqq"
    if (keep is None) != (red.kept is None):
        raise ValueError(f"reduction {red.label}: keep= is the array for its kept value, and only for one that keeps one")
    if keep is not None:   # (rows, K) view, or (array, row stride, K stride) in bytes as an operand
        ops += keep if isinstance(keep, tuple) else [keep, keep.strides[0], keep.strides[1]]
        fmt += "Qqq"
    M = out.shape[0]
    if out.size == 0:
        return out
    mod, name = _module(red, device_id)
    launch = Launches(mod, device_id, fast)
    if red.combine in ("argmax", "argmin"):
        # the kernel stores int64 (Reduction.out); a policy's int32 index (JAX) is converted after
        index = out if out.dtype.itemsize == 8 else launch.cp.empty(M, "int64")
        launch(f"{name}_rows", _grid(M), "qqdQ" + fmt, M, K, div, index, *ops)
        if index is not out:
            out[...] = index
    elif red.scan:
        launch(f"{name}_scan", _grid(M), "qqQ" + fmt, M, K, out, *ops)
    elif K == 0:   # empty rows: the merge of no nodes (the identity, finished); no operand is read
        launch(f"{name}_merge", _grid(M), "qqdQQ", M, 0, div, launch.scratch([1], red.acc.numpy)[0], out)
    else:
        cols = int(_columns(args, red))
        # the sequential combines (max, min, or, and: one pass per leaf) take a leaf a thread, the
        # others their chunks of lanes; either way the nodes' counter tree is the row's
        nl = -(-K // LEAF)
        nc = nl if red.sequential else chunks(K)
        levels = fold_levels(nc)
        nlanes = 0 if red.sequential else M * nl * LANES
        part, lanes, *folds = launch.scratch([M * nc, nlanes] + [M * -(-n // FOLD) for n in levels], red.acc.numpy)
        if red.sequential:
            launch(f"{name}_parts", _grid(M * nc), "qqqqqQ" + fmt, M, K, nc, 1, cols, part, *ops)
        else:
            launch(f"{name}_lanes", _grid(nlanes), "qqqQ" + fmt, M, K, cols, lanes, *ops)
            launch(f"{name}_leaves", _grid(M * nc), "qqqQQ", M, K, nc, part, lanes)
        for n, dst in zip(levels, folds):
            nc = -(-n // FOLD)
            launch(f"{name}_fold", _grid(M * nc), "qqQQ", M, n, part, dst)
            part = dst
        launch(f"{name}_merge", _grid(M), "qqdQQ", M, nc, div, part, out)
    return out
