"""The CPU engine's source generator: an ir.Kernel becomes the text of a small Python module of
Numba loops (``source(kernel)``; cpu_numba's docstring says what that module holds).

Apart from compiling and launching (``_numba_kernels``) because it is text work only: it imports no
Numba, and the text it writes is what a kernel module is filed (and Numba's disk cache keyed) under.
"""
from __future__ import annotations

import numpy as np

from ...core import dtypes as D
from ...kernel import ir
from ...kernel.math import _library  # noqa: F401 - fills the registry is_straight reads
from ...kernel.math._flatten import INTRINSIC_PREFIX, is_straight
from ...kernel.math.twins import FAST_TWINS, KEYED, SECOND_TWINS, TIE_KEY_LIMIT, TOGETHER
from ...kernel.unary import BINARY, NARROW_ROUNDING, UNARY, narrow_entry
from .plain import MATH_CALL as _MATH_CALL, PLAIN as _PLAIN, plain_conversions as _plain_conversions
from .stream import stream_lines, streams
from .tables import calls_math, math_interleave

__all__ = ["GENERATOR_VERSION", "MAX_STRIDED_NDIM", "source", "as_kernel", "kernel_key", "storage_view", "cast_text",
           "apply_text", "const_text", "np_type_text", "round_to_narrow_text", "NARROW_HELPERS", "let_lines",
           "HELPER_IMPORTS", "jit_line", "lower_lines", "store_text", "vector_width_lines", "has_twins"]

GENERATOR_VERSION = 16  # part of every generated source: bump it to regenerate all kernels

# narrow dtype code -> (widen storage bits to float32, round a float32 / float64 to bits, storage uint)
_NARROW = {
    "f2": ("f16_to_f32", "f32_to_f16", "f64_to_f16", np.uint16),
    "bf": ("bf16_to_f32", "f32_to_bf16", "f64_to_bf16", np.uint16),
    "e4": ("e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3", np.uint8),
    "e5": ("e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2", np.uint8),
}
_REAL_PART = {"c8": D.float32, "c16": D.float64}
MAX_STRIDED_NDIM = 4


# ---------------------------------------------------------------------------------------------
# Source generation: an ir.Kernel becomes a small Python module of njit loops. Values live in
# Numba scalars of their carrier type (float32 for narrow floats); every node is one local.

def _np(d: D.DType) -> str:
    return f"np.{d.numpy.type.__name__}"


def _no_cpu_storage(d: D.DType):
    return TypeError(f"{d.name} has no numpy storage, so the CPU engine has no kernel for it: cast to "
                     f"{'complex64' if d.kind == 'c' else 'float32'} first, or run on a CUDA device")


def _cast(expr: str, src: D.DType, dst: D.DType) -> str:
    """Source converting ``expr`` (a value of ``src`` in its carrier type) to ``dst`` (its carrier
    type), as NumPy / ml_dtypes astype converts."""
    if src is dst:
        return expr
    if src.numpy is None or dst.numpy is None:
        raise _no_cpu_storage(src if src.numpy is None else dst)
    if dst.kind == "b":
        return f"gp_truth({expr})"
    if dst.is_narrow_float:
        widen, from_f32, from_f64, _ = _NARROW[dst.code]
        return f"{widen}({_round_to_narrow(expr, src, from_f32, from_f64)})"
    if src.is_narrow_float and dst is D.float32:
        return expr   # the carrier already is float32
    if src.kind == "c" and dst.kind != "c":
        expr, src = f"({expr}).real", _REAL_PART[src.code]
    if src.kind == "f" and dst.kind in "ui":   # C leaves NaN and out-of-range values undefined (casts.py)
        return f"{'gp_f8toi' if src.code in ('e4', 'e5') else 'gp_ftoi'}({expr}, {_np(dst)}(0))"
    return f"{_np(dst)}({expr})"


def _round_to_narrow(expr: str, src: D.DType, from_f32: str, from_f64: str) -> str:
    """The narrow bit pattern nearest ``expr``: one rounding from float32 or float64 (ints and
    bools through float64, where they are exact up to 2**53)."""
    if src.kind == "c":
        expr, src = f"({expr}).real", _REAL_PART[src.code]
    if src.is_narrow_float or src is D.float32:
        return f"{from_f32}({expr})"
    if src is D.float64:
        return f"{from_f64}({expr})"
    return f"{from_f64}(np.float64({expr}))"


def _apply(node, args) -> str:
    expr = node.expr
    for k in reversed(range(len(args))):   # why: in1 before in10 never matters with <= 3 operands, but be safe
        expr = expr.replace(f"in{k}", args[k])
    d = node.dtype
    return f"bool({expr})" if d.kind == "b" else f"{_np(d)}({expr})"


def _const(node) -> str:
    d = node.dtype
    if d.kind == "b":
        return "True" if node.value else "False"
    return f"{_np(d)}({node.value!r})"


def _inline_math(node, names):
    """The library call a math step makes, as the text of one call of its instructions
    (kernel/math/llvm_binding.py: an intrinsic writing the straight-line function's operations
    into the loop), where that call is straight-line (the float32 and narrow paths). None for every
    other step (float64 and complex keep their helper call)."""
    m = _MATH_CALL.fullmatch(node.expr) if isinstance(node, ir.Apply) else None
    if m is None:
        return None
    helper, code = m.group(1), m.group(2)
    real = UNARY[helper][0] if helper in UNARY else BINARY.get(helper)
    if real is None:
        return None
    operands = [names[a] for a in node.args]
    if code is None and all(a.dtype is D.float64 for a in node.args):
        # a float64 entry point written straight-line (log, tanh ...: the special values selected)
        name = f"gpm_{real}_f64"
        return f"{INTRINSIC_PREFIX}{name}({', '.join(operands)})" if is_straight(name) else None
    if any(a.dtype is not D.float32 for a in node.args):   # a narrow operand too: widened to float32 by a cast
        return None
    if code is None:
        name = f"gpm_{real}_f32"
        return f"{INTRINSIC_PREFIX}{name}({', '.join(operands)})" if is_straight(name) else None
    fast = narrow_entry(real, code) if len(operands) == 1 else None
    if fast is not None and is_straight(fast):      # the format's float32 path: the carrier itself
        return f"{INTRINSIC_PREFIX}{fast}({operands[0]})"
    name = f"gpm_{real}_wide"
    if not is_straight(name):
        return None
    wide = f"{INTRINSIC_PREFIX}{name}({', '.join(f'np.float64({a})' for a in operands)})"
    return f"{_NARROW[code][0]}({INTRINSIC_PREFIX}{NARROW_ROUNDING[code]}({wide}))"   # one rounding, then the float32 carrier


def _twin_of(node, names, table=FAST_TWINS):
    """(twin, rare, operands) for a math step whose entry point has a fast twin in ``table``
    (twins.FAST_TWINS, or SECOND_TWINS): a float32 call of a straight-line entry point, or a float64
    helper call; None otherwise."""
    m = _MATH_CALL.fullmatch(node.expr) if isinstance(node, ir.Apply) else None
    if m is None or m.group(2) is not None:
        return None
    real = UNARY[m.group(1)][0] if m.group(1) in UNARY else BINARY.get(m.group(1))
    dtypes = {a.dtype for a in node.args}
    suffix = "f32" if dtypes == {D.float32} else "f64" if dtypes == {D.float64} else None
    pair = table.get(f"gpm_{real}_{suffix}")
    return None if pair is None else (*pair, ", ".join(names[a] for a in node.args))


def has_twins(kernel) -> bool:
    """Whether ``kernel`` calls a math entry point with a fast twin (and has no checks, whose flags
    a twin's pass would set from values the second pass replaces): its contiguous loop then runs
    in blocks, the twins first (_twin_lines)."""
    if kernel.checks:
        return False
    return _twinned(kernel, FAST_TWINS)


def _twinned(kernel, table) -> bool:
    names = {n: f"v{k}" for k, n in enumerate(kernel.steps())} | {p: f"x{p.index}" for p in kernel.params}
    return any(_twin_of(n, names, table) is not None for n in kernel.steps())


def let_lines(names, steps, indent: str, twins: bool = False, table=FAST_TWINS) -> list[str]:
    """The statements of ir.lower's steps, one local each; a float32 or narrow call of a
    straight-line math function is one call of an intrinsic that writes the function's LLVM
    instructions into the loop (kernel/math/llvm_binding.py), so that Numba types and lowers one
    call, not the function's statements: a cold gp.exp(float32) kernel compiles in about 65 ms
    instead of 100. The operations are the library's, in its order: the bits are the helper's
    (tests/engines/test_inline_math.py, tests/kernel/math/test_llvm_binding.py)."""
    lines = []
    for name, node, value in steps:
        twin = _twin_of(node, names, table) if twins else None
        if twin is not None and twin[1] in TOGETHER:   # the value and its key from one call
            lines.append(f"{indent}{name}, key = {INTRINSIC_PREFIX}{TOGETHER[twin[1]]}({twin[2]})")
            lines.append(f"{indent}near = min(near, key)")
            math = name
        elif twin is not None:
            fast, rare, operands = twin
            flag = f"{INTRINSIC_PREFIX}{rare}({operands})"
            lines.append(f"{indent}near = min(near, {flag})" if rare in KEYED else f"{indent}rare |= {flag}")
            math = f"{INTRINSIC_PREFIX}{fast}({operands})"
        else:
            math = _inline_math(node, names)
        if math is not None:
            value = f"{_np(node.dtype)}({math})"
        lines.append(f"{indent}{name} = {value}")
    return lines


# what every generated module imports: the helpers its statements call, the inlined math's names
HELPER_IMPORTS = [f"from gpupromote.engines.cpu.{m} import *  # noqa: F401,F403"
                  for m in ("helpers", "elementwise", "owned_math", "unary", "casts", "inline_math")] + [
                  "from gpupromote.engines.cpu.intrinsics import never_inline, overlaps, prefer_256_bit  # noqa: F401",
                  "from gpupromote.engines.cpu.intrinsics import borrowed, scratch  # noqa: F401",
                  "from gpupromote.engines.cpu.intrinsics import stream_fence, stream_head, stream_store  # noqa: F401"]


def _param_names(kernel):
    return [f"s{p.index}" if p.folded else f"x{p.index}" for p in kernel.params]


def _casts(kernel, round_trips):
    """ir.lower's ``cast`` for ``kernel``: ``_cast``, with the float16 round trips of
    ``round_trips`` (plain.round_trips: step -> "plain" or "same") through the plain conversions or
    left out."""
    if not round_trips:
        return _cast
    # (lower names the k-th step v<k>: a round trip's argument by its name)
    by_arg = {t.arg: way for t, way in round_trips.items()}
    how = {f"v{k}": by_arg[n] for k, n in enumerate(kernel.steps()) if n in by_arg}

    def cast(expr, src, dst):
        way = how.get(expr) if dst.code in _PLAIN and src is D.float32 else None
        if way == "same":
            return expr
        if way == "plain":
            widen, rounding = _PLAIN[dst.code]
            return f"{widen}({rounding}({expr}))"
        return _cast(expr, src, dst)
    return cast


def _body(kernel, index: str, indent: str, src: str = "x", dst: str = "out", twins: bool = False,
          table=FAST_TWINS, stream: bool = False) -> list[str]:
    """One element: every step of the DAG once, the store and the checks. ``src``/``dst``: the
    names of the input arrays (``src`` + parameter number) and the output; ``twins``: the math
    calls with a fast twin in ``table`` call it (and flag their rare inputs in ``rare``);
    ``stream``: the store a streaming one (intrinsics.stream_store)."""
    plain_params, plain_store, round_trips = _plain_conversions(kernel, ir.direct_store(kernel))

    def param(p):
        if p.folded:
            return f"s{p.index}"
        elem = f"{src}{p.index}[{index}]"
        if p in plain_params:
            return f"{_PLAIN[p.dtype.code][0]}({elem})"
        return f"{_NARROW[p.dtype.code][0]}({elem})" if p.dtype.is_narrow_float else elem

    names, steps, direct = ir.lower(kernel, param, _casts(kernel, round_trips), _apply, _const)
    lines = let_lines(names, steps, indent, twins, table)
    out = kernel.out
    if out.numpy is None:
        raise _no_cpu_storage(out)
    if out.is_narrow_float:
        _, from_f32, from_f64, _ = _NARROW[out.code]
        from_f32 = _PLAIN[out.code][1] if plain_store else from_f32
        src = direct if direct is not None else kernel.value
        stored = _round_to_narrow(names[src], src.dtype, from_f32, from_f64)
    else:
        stored = names[kernel.value]
    lines.append(f"{indent}stream_store({dst}, {index}, {stored})" if stream else f"{indent}{dst}[{index}] = {stored}")
    # why: each check ORed into a local and stored once after the loop (_flag_lines): a conditional
    # store inside the loop keeps LLVM from vectorizing it
    lines += [f"{indent}c{k} |= {names[check.cond]}" for k, check in enumerate(kernel.checks)]
    return lines


def _flag_lines(kernel, where: str) -> list[str]:
    """The check accumulators: cleared before the loops (``where`` "before"), stored after them."""
    if where == "before":
        return [f"    c{k} = False" for k in range(len(kernel.checks))]
    return [line for k in range(len(kernel.checks)) for line in (f"    if c{k}:", f"        flags[{k}] = 1")]


def vector_width_lines(kernel) -> list[str]:
    """The first statement of a generated function over ``kernel``'s elements: 256-bit vectors
    (intrinsics.prefer_256_bit) for plain arithmetic, which is memory-bound; none for a kernel
    that calls the math library, whose double-precision paths use the 512-bit registers."""
    return [] if calls_math(kernel) else ["    prefer_256_bit()"]


def jit_line(interleave: int | None) -> str:
    """The generated module's ``_jit`` decorator: its loops compiled with ``interleave`` vectors in
    flight (tables.math_interleave: a kernel that calls the math library), None for LLVM's choice."""
    option = f", interleave={interleave}" if interleave else ""
    return f"_jit = cached_njit(nogil=True, error_model='numpy', boundscheck=False, no_cfunc_wrapper=True{option})"


def source(kernel) -> str:
    """The generated Python/Numba source of an ir.Kernel (or of a Plan's one-node kernel): print
    it to read or debug a kernel."""
    kernel = as_kernel(kernel)
    first = vector_width_lines(kernel)
    params = ", ".join(_param_names(kernel) + ["out"] + (["flags"] if kernel.checks else []))
    listing = "\n".join(f"    {line}" for line in kernel.text.splitlines())
    lines = [
        f'"""gpupromote CPU kernel (generator v{GENERATOR_VERSION}) of the IR:',
        listing,
        'Written once by gpupromote.engines.cpu.engine and imported from here so that Numba can cache',
        'the compiled code on disk. Do not edit."""',
        "import numpy as np",
        "from numba import carray",
        "from gpupromote.engines.cpu.cache import cached_njit",
        *HELPER_IMPORTS,
        "",
        "# error_model='numpy': float x / 0 is inf or nan, never a ZeroDivisionError. Cached in the",
        "# tag folder beside this file, where a damaged cache file is dropped, not fatal.",
        jit_line(math_interleave(kernel)),
        "",
        "",
        "@_jit",
        f"def flat({params}):",
        *first,
        *_flag_lines(kernel, "before"),
        "    for i in range(out.shape[0]):",
        *_body(kernel, "i", "        "),
        *_flag_lines(kernel, "after"),
        *(_twin_lines(kernel) if has_twins(kernel) else []),
    ]
    for nd in range(1, MAX_STRIDED_NDIM + 1):
        idx = ", ".join(f"i{d}" for d in range(nd))
        # Not decorated here: _Compiled.strided() jits it on first use (a cheaper module import).
        lines += ["", "", f"def strided{nd}({params}):", *first, *_flag_lines(kernel, "before")]
        for d in range(nd):
            lines.append(f"{'    ' * (d + 1)}for i{d} in range(out.shape[{d}]):")
        lines += _body(kernel, idx, "    " * (nd + 1))
        lines += _flag_lines(kernel, "after")
    for nd in range(1, MAX_STRIDED_NDIM + 1):
        lines += _buffered_lines(kernel, nd, params)
    if not kernel.checks:
        lines += _native_lines(kernel)
    if streams(kernel):
        lines += stream_lines(kernel, params, first, _body(kernel, "i", "        ", src="y", dst="d", stream=True))
    return "\n".join(lines) + "\n"


# elements a buffered kernel copies in and out at a time (a few KiB per operand: stays in L1)
BUFFER_ELEMENTS = 1024
# the longest call of a kernel with fast twins that takes flat (and the compiled dispatcher's native
# entry, which has no twins either) rather than blocks
TWIN_BLOCKS_AFTER = 4 * BUFFER_ELEMENTS


def _buffered_lines(kernel, nd: int, params: str) -> list[str]:
    """``buffered<nd>``: the strided loop for kernels that call the math library. A strided or
    broadcast operand keeps LLVM from vectorising the element loop, and a math function run one
    element at a time costs several times its vector speed; so each stretch of the innermost axis
    is copied into contiguous buffers, computed by ``flat`` (vectorised; with fast twins, by the
    twins' passes: one block), and copied out, as NumPy's buffered iterator does. Kernels without
    math calls keep strided<nd> (a copy costs more than their arithmetic). Same element order, same
    bits."""
    arrays = [p for p in kernel.params if not p.folded]
    outer = [f"i{d}" for d in range(nd - 1)]
    lines = ["", "", f"def buffered{nd}({params}):"]
    for p in arrays:
        lines.append(f"    b{p.index} = np.empty({BUFFER_ELEMENTS}, x{p.index}.dtype)")
    lines.append(f"    bo = np.empty({BUFFER_ELEMENTS}, out.dtype)")
    for d, i in enumerate(outer):
        lines.append(f"{'    ' * (d + 1)}for {i} in range(out.shape[{d}]):")
    ind = "    " * nd
    last = nd - 1
    lines += [f"{ind}for j in range(0, out.shape[{last}], {BUFFER_ELEMENTS}):",
              f"{ind}    m = min({BUFFER_ELEMENTS}, out.shape[{last}] - j)"]
    # why: a view of the stretch, indexed by the loop variable alone; indexing the array with
    # j + k instead (which Numba must check for a negative index) made the copies 5x slower
    at = ", ".join([*outer, "j:j + m"])
    for p in arrays:
        lines += [f"{ind}    r{p.index} = x{p.index}[{at}]",
                  f"{ind}    for k in range(m):", f"{ind}        b{p.index}[k] = r{p.index}[k]"]
    call = [f"b{p.index}[:m]" if not p.folded else f"s{p.index}" for p in kernel.params]
    call += ["bo[:m]"] + (["flags"] if kernel.checks else [])
    if has_twins(kernel):   # the stretch is one block of the twins' passes (the buffers share no memory)
        lines += _passes(kernel, ", ".join(call), f"{ind}    ")
    else:
        lines += [f"{ind}    flat({', '.join(call)})"]
    lines += [f"{ind}    ro = out[{at}]",
              f"{ind}    for k in range(m):", f"{ind}        ro[k] = bo[k]"]
    return lines


def _storage_np(d: D.DType) -> str:
    """The numpy type an array of ``d`` is read and written as (narrow floats: their bits)."""
    return f"np.{_NARROW[d.code][3].__name__}" if d.is_narrow_float else _np(d)


def _native_lines(kernel) -> list[str]:
    """``native(data, n)``: the kernel's C entry point (a Numba cfunc, compiled by
    _Compiled.native), which the compiled dispatcher (gpupromote/dispatch/fastpath/entry.c) calls with raw
    pointers and no Python object in between: ``data[k]`` is the address of element 0 of
    parameter k (of its value, in its carrier type, for a folded scalar), ``data[len(params)]``
    that of the output; every array is contiguous; ``n`` >= 1 elements."""
    # Note: contiguous arrays only: a second, strided loop doubled the compile time (~190 ms
    # instead of ~100); strided and broadcast layouts take the Python path and its strided kernels.
    params = kernel.params
    nout = len(params)
    lines = ["", "", "def native(data, n):", *vector_width_lines(kernel)]
    for p in params:
        if p.folded:
            carrier = "np.float32" if p.dtype.is_narrow_float else _np(p.dtype)
            lines.append(f"    s{p.index} = carray(data[{p.index}], (1,), {carrier})[0]")
        else:
            lines.append(f"    x{p.index} = carray(data[{p.index}], (n,), {_storage_np(p.dtype)})")
    lines.append(f"    out = carray(data[{nout}], (n,), {_storage_np(kernel.out)})")
    # Note: no twins here (engine.native_max_n keeps the calls long enough to gain from them on the
    # Python path's blocks): the twins' passes would triple a cold small call's compile
    lines.append("    for i in range(n):")
    lines += _body(kernel, "i", "        ")
    return lines


def _twin_lines(kernel) -> list[str]:
    """``blocks``: the contiguous loop of a kernel with fast twins (has_twins), for calls longer than
    TWIN_BLOCKS_AFTER elements (shorter ones take flat, which compiles in a third of the time: a
    fused GELU's first small call 630 -> 100 ms), in blocks of BUFFER_ELEMENTS: each block computed
    with the twins (``twin_pass``), which flag the inputs only the entry points answer; where one
    was flagged, the block computed again with the entry points (``entry_pass``). Every element is
    the entry points' result (a twin equals its entry point wherever rare is false), in any
    blocking. The passes write the output directly, or, where it shares memory with an input (in
    place), a buffer copied out after the block, so that a second pass reads the inputs. sin of
    10^7 float32: 47 -> 19 ms, one thread (no table gathers)."""
    arrays = [p for p in kernel.params if not p.folded]
    args = _block_args(kernel)
    params = ", ".join(_param_names(kernel) + ["out"])
    # Note: the arrays borrowed (intrinsics.borrowed): a block's views passed to the passes, which are
    # not inlined, had their reference counts taken and dropped around each call (12 of a block's 18
    # calls), each an atomic that waits for the block's stores (float32 tanh of 10**7 with out=, one
    # Zen 5 thread: 4.11 -> 4.05 ms, medians of four alternating runs, within the noise)
    lines = ["", "", "@_jit", f"def blocks({params}):",
             *[f"    x{p.index} = borrowed(x{p.index})" for p in arrays], "    out = borrowed(out)",
             f"    bo = scratch({BUFFER_ELEMENTS}, {_storage_np(kernel.out)})",
             f"    alias = {' or '.join(f'overlaps(x{p.index}, out)' for p in arrays) or 'False'}",
             f"    for j in range(0, out.shape[0], {BUFFER_ELEMENTS}):",
             f"        m = min({BUFFER_ELEMENTS}, out.shape[0] - j)"]
    lines += [f"        y{p.index} = x{p.index}[j:j + m]" for p in arrays]
    # Note: the passes are functions of their own: inside the loop over blocks LLVM kept fewer of
    # the math's constants in registers (float32 log of 10^7: 7.37 -> 6.72 ms; tanh 8.90 -> 8.66),
    # for about 100 ms more of a first long call's compile (a fused GELU 470 -> 620 ms, once per
    # machine: the disk cache keeps it)
    return lines + ["        d = bo[:m] if alias else out[j:j + m]",
                    *_passes(kernel, f"{args}, d", "        "),
                    "        if alias:",
                    "            ro = out[j:j + m]",
                    "            for k in range(m):",
                    "                ro[k] = d[k]",
                    *_twin_pass_lines(kernel)]


def _passes(kernel, call: str, ind: str) -> list[str]:
    """A block through the twins' pass, and where it flagged an input, the second twins' pass if the
    kernel has any (twins.SECOND_TWINS), and where that flagged one too, the entry points' pass."""
    if not _twinned(kernel, SECOND_TWINS):
        return [f"{ind}if twin_pass({call}):", f"{ind}    entry_pass({call})"]
    return [f"{ind}if twin_pass({call}):", f"{ind}    if second_pass({call}):", f"{ind}        entry_pass({call})"]


def _block_args(kernel) -> str:
    return ", ".join(f"s{p.index}" if p.folded else f"y{p.index}" for p in kernel.params)


def _twin_pass_lines(kernel) -> list[str]:
    """The two passes over a block of a kernel with fast twins (_twin_lines), functions of their own
    and never inlined (the Note in _twin_lines). ``twin_pass`` returns whether an input was flagged
    (``rare``, or for a keyed twin the smallest key ``near``: twins.KEYED)."""
    args = _block_args(kernel)
    return ["", "", "@_jit", f"def twin_pass({args}, d):", "    never_inline()",
            "    rare = False", "    near = np.uint64(0xFFFFFFFFFFFFFFFF)", "    for k in range(d.shape[0]):",
            *_body(kernel, "k", " " * 8, src="y", dst="d", twins=True),
            f"    return rare or near <= {TIE_KEY_LIMIT}",
            *(["", "", "@_jit", f"def second_pass({args}, d):", "    never_inline()",
               "    rare = False", "    near = np.uint64(0xFFFFFFFFFFFFFFFF)", "    for k in range(d.shape[0]):",
               *_body(kernel, "k", " " * 8, src="y", dst="d", twins=True, table=SECOND_TWINS),
               f"    return rare or near <= {TIE_KEY_LIMIT}"] if _twinned(kernel, SECOND_TWINS) else []),
            "", "", "@_jit", f"def entry_pass({args}, d):", "    never_inline()", "    for k in range(d.shape[0]):",
            *_body(kernel, "k", " " * 8, src="y", dst="d")]


def as_kernel(k) -> ir.Kernel:
    """An ir.Kernel, or the one-node kernel of a Plan."""
    return k if isinstance(k, ir.Kernel) else ir.from_plan(k)


def kernel_key(plan):
    """What the generated code depends on: the IR kernel (equal for plans of different policies
    that compute the same thing: numpy's and torch's float32 add are one)."""
    return as_kernel(plan)


# The text builders the reduction generator (engines/cpu/reduce.py) shares with this one.
cast_text, apply_text, const_text, np_type_text, round_to_narrow_text, NARROW_HELPERS = (
    _cast, _apply, _const, _np, _round_to_narrow, _NARROW)


def lower_lines(kernel, param, indent, round_trips=None):
    """(names, statements, direct): ir.lower's steps of ``kernel`` as the statements of a loop body
    at ``indent`` (let_lines), for the generators of whole functions around a kernel (the
    reductions' terms and finishes, the row maps); ``round_trips``: plain.round_trips' casts."""
    names, steps, direct = ir.lower(kernel, param, _casts(kernel, round_trips), _apply, _const)
    return names, let_lines(names, steps, indent), direct


def store_text(value_name: str, src: D.DType, out: D.DType, plain: bool = False) -> str:
    """``value_name`` (of ``src``, in its carrier type) as ``out``'s storage value (narrow floats:
    their bits, rounded once; ``plain``: plain.plain_conversions' plain store)."""
    if out.is_narrow_float:
        _, from_f32, from_f64, _ = _NARROW[out.code]
        return _round_to_narrow(value_name, src, _PLAIN[out.code][1] if plain else from_f32, from_f64)
    return _cast(value_name, src, out)


def storage_view(d: D.DType):
    """The numpy dtype kernels view an array of ``d`` as (narrow floats: their bits); None: as it is."""
    narrow = _NARROW.get(d.code)
    return None if narrow is None else np.dtype(narrow[3])
