"""The CPU backend: each plan becomes a Numba loop kernel generated from ops.OPS[op].expr.

For a plan the generator writes one small Python module (``source(plan)`` shows it):

* ``flat(x0, s1, ..., out)``: one loop over 1-D operands of the output's length (same-shape
  contiguous inputs are raveled into it); LLVM vectorizes it;
* ``strided1`` .. ``strided4``: nested loops over broadcast / strided / reversed views (the
  dispatcher-side ``_coalesce`` first merges axes and orders them by the output's strides;
  more than 4 remaining axes loop over the leading ones in Python).

Every input is read in its own storage dtype - float16, bfloat16 and float8 arrays as their
uint16 / uint8 bit patterns, widened by the ``_numba_math`` helpers (F16C where the CPU has
it) - converted in registers to ``plan.compute``, the expression evaluated, and the value
written once in ``plan.result`` (narrowed by ``f32_to_f16`` and friends). Folded scalars are
kernel parameters of the compute dtype (``dispatch.fold_scalar`` converted them).

Caches: in memory per ``kernel_key(plan)`` (plan.key and the promoted dtype); on disk by Numba,
which needs a real source file, so each module is filed once as
``<cache>/numba-<tag>/_gpk_<hash of source>.py`` and Numba's compiled code lies beside it. The tag
(``_cache_tag()``) covers what else shapes the machine code: the helper modules' sources, the
package, Python, Numba, llvmlite, NumPy and ml_dtypes versions, and the target CPU. ``<cache>`` is
``$GPUPROMOTE_CACHE_DIR``, else a folder per Python environment under ``$XDG_CACHE_HOME/gpupromote``
(``~/.cache/gpupromote``). Damaged files are dropped and recompiled, read-only folders are read
(backends/_numba_cache.py).
"""
from __future__ import annotations

import hashlib
import itertools
import os
import sys
import types as _pytypes
import weakref
from pathlib import Path

import numpy as np

from ._disk_cache import drop_damaged, warn_once, write_atomically  # noqa: E402
from ._numba_cache import CACHE_ROOT, KERNEL_DIR, READ_DIRS, WRITE_DIR, cache_tag, checked, claim_dir  # noqa: E402
from numba import types  # noqa: E402
from numba.core import errors as numba_errors  # noqa: E402
from numba.extending import overload  # noqa: E402
from numba.np.numpy_support import as_dtype  # noqa: E402

from .. import dtypes as D  # noqa: E402
from ..ops import OPS  # noqa: E402
from . import _numba_math  # noqa: E402,F401  (registers the helpers' overloads)

__all__ = ["BACKEND", "source", "kernel_for", "warmup", "common_plans", "CACHE_ROOT", "KERNEL_DIR"]

GENERATOR_VERSION = 2   # part of every generated source: bump it to regenerate all kernels


def _cache_tag() -> str:
    """The digest every cached kernel is filed under (backends/_numba_cache.py): the sources of the
    helper modules kernels import, the versions of gpupromote, Python, Numba, llvmlite, NumPy and
    ml_dtypes, and the target CPU. Kernels live in ``CACHE_ROOT / f"numba-{_cache_tag()}"``."""
    return cache_tag()


# name -> (widen bits to float32, narrow float32, narrow float64, storage uint dtype)
_NARROW = {
    "float16": ("f16_to_f32", "f32_to_f16", "f64_to_f16", np.uint16),
    "bfloat16": ("bf16_to_f32", "f32_to_bf16", "f64_to_bf16", np.uint16),
    "float8_e4m3fn": ("e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3", np.uint8),
    "float8_e5m2": ("e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2", np.uint8),
}
_NARROW_TAG = {"float16": "f16", "bfloat16": "bf16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
_ORDERING = ("less", "less_equal", "greater", "greater_equal")
_MAX_STRIDED_NDIM = 4


# ---------------------------------------------------------------------------------------------
# Compiled helpers the generated kernels need beyond _numba_math (overloads: inlined, typed per
# argument type, cached as part of each kernel).

def gpc_divide(a, b):
    """NumPy's complex division (Smith's algorithm with a reciprocal); Numba's differs by an ulp."""
    raise NotImplementedError("only callable from compiled kernels")


@overload(gpc_divide, jit_options={"error_model": "numpy"})
def _ov_gpc_divide(a, b):
    if not isinstance(a, types.Complex) or a != b:
        return None
    ftype, ctype = as_dtype(a.underlying_float).type, as_dtype(a).type
    zero, one = ftype(0), ftype(1)

    def impl(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        abs_br, abs_bi = abs(br), abs(bi)
        if abs_br >= abs_bi:
            if abs_br == zero and abs_bi == zero:
                return ctype(complex(ar / abs_br, ai / abs_bi))   # complex inf / nan, as numpy
            rat = bi / br
            scl = one / (br + bi * rat)
            return ctype(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
        rat = br / bi
        scl = one / (bi + br * rat)
        return ctype(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))
    return impl


def _complex_order(name, strict, greater):
    def public(a, b):
        raise NotImplementedError("only callable from compiled kernels")
    public.__name__ = public.__qualname__ = name

    @overload(public, jit_options={"error_model": "numpy"})
    def _ov(a, b):
        if not isinstance(a, types.Complex) or a != b:
            return None

        # numpy's CLT/CLE/CGT/CGE: lexicographic; a NaN imaginary part only counts on ties
        if greater and strict:
            return lambda a, b: ((a.real > b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag > b.imag))
        if greater:
            return lambda a, b: ((a.real > b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag >= b.imag))
        if strict:
            return lambda a, b: ((a.real < b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag < b.imag))
        return lambda a, b: ((a.real < b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
            ((a.real == b.real) & (a.imag <= b.imag))
    return public


gpc_less = _complex_order("gpc_less", True, False)
gpc_less_equal = _complex_order("gpc_less_equal", False, False)
gpc_greater = _complex_order("gpc_greater", True, True)
gpc_greater_equal = _complex_order("gpc_greater_equal", False, True)


def _narrow_nextafter(tag):
    widen, narrow = getattr(_numba_math, f"{tag}_to_f32"), getattr(_numba_math, f"f32_to_{tag}")
    sign = 0x80 if tag.startswith("e") else 0x8000
    storage = np.uint8 if tag.startswith("e") else np.uint16
    nan = np.float32(np.nan)

    def public(a, b):
        raise NotImplementedError("only callable from compiled kernels")
    public.__name__ = public.__qualname__ = f"gpn_nextafter_{tag}"

    @overload(public, jit_options={"error_model": "numpy"})
    def _ov(a, b):
        if a != types.float32 or b != types.float32:
            return None

        def impl(a, b):
            # a and b hold exact narrow values (widened): step a's bit pattern by one toward b,
            # as numpy's npy_half_nextafter and ml_dtypes' nextafter do; a NaN operand gives
            # their canonical NaN, positive whatever the operands' signs.
            if (a != a) | (b != b):
                return nan
            if a == b:
                return b
            if a == 0:
                bits = 1 | (sign if b < 0 else 0)
            else:
                bits = np.int64(narrow(a))
                bits = bits + 1 if (a < b) == (a > 0) else bits - 1
            return widen(storage(bits))
        return impl
    return public


def gpf_ftz(x):
    """Flush a subnormal to a zero of its sign (XLA runs with FTZ/DAZ: JAX's semantics)."""
    raise NotImplementedError("only callable from compiled kernels")


@overload(gpf_ftz, jit_options={"error_model": "numpy"})
def _ov_gpf_ftz(x):
    if isinstance(x, types.Float):
        tiny, zero = as_dtype(x).type(np.finfo(as_dtype(x)).tiny), as_dtype(x).type(0)
        return lambda x: x if (abs(x) >= tiny) | (x != x) else np.copysign(zero, x)
    if isinstance(x, types.Complex):
        ftype, ctype = as_dtype(x.underlying_float).type, as_dtype(x).type
        tiny, zero = ftype(np.finfo(ftype).tiny), ftype(0)

        def impl(x):
            re, im = x.real, x.imag
            re = re if (abs(re) >= tiny) | (re != re) else np.copysign(zero, re)
            im = im if (abs(im) >= tiny) | (im != im) else np.copysign(zero, im)
            return ctype(complex(re, im))
        return impl
    return lambda x: x


gpn_nextafter_f16 = _narrow_nextafter("f16")
gpn_nextafter_bf16 = _narrow_nextafter("bf16")
gpn_nextafter_e4m3 = _narrow_nextafter("e4m3")
gpn_nextafter_e5m2 = _narrow_nextafter("e5m2")


# ---------------------------------------------------------------------------------------------
# Source generation

def _np(d: D.DType) -> str:
    return f"np.{d.numpy.type.__name__}"


def _convert(expr: str, src: D.DType, dst: D.DType) -> str:
    """Source converting ``expr`` (a value of ``src``; not a narrow float) to ``dst`` (not narrow)."""
    if src is dst:
        return expr
    if dst.kind == "b":
        return f"({expr} != 0)"
    if src.kind == "c" and dst.kind != "c":
        return f"{_np(dst)}(({expr}).real)"
    return f"{_np(dst)}({expr})"


def _read(elem: str, src: D.DType, dst: D.DType, via: D.DType | None = None) -> str:
    """Source reading a stored element of ``src`` as ``dst`` (the compute dtype, or bool).

    ``via``: the promoted dtype. When it is a narrow float the frameworks cast each input to it
    before computing in float32 (NumPy's loop dtype, PyTorch's common dtype), which rounds: int8
    100 is 96 in float8_e4m3fn, int16 257 is 256 in bfloat16. So the value goes through it."""
    if via is not None and via is not src and via.name in _NARROW and not _exact_in(src, via):
        widen, _, f64_to, _ = _NARROW[via.name]
        wide = _read(elem, src, D.float64)
        return _convert(f"{widen}({f64_to}({wide}))", D.float32, dst)
    if src.name in _NARROW:
        return _convert(f"{_NARROW[src.name][0]}({elem})", D.float32, dst)
    return _convert(elem, src, dst)


def _exact_in(src: D.DType, via: D.DType) -> bool:
    """Whether every value of ``src`` is exact in the narrow float ``via`` (no rounding step)."""
    if src.kind == "b":
        return True
    return src.name in ("int8", "uint8") and via.name in ("float16", "bfloat16")


def _write(expr: str, compute: D.DType, result: D.DType) -> str:
    """Source turning ``expr`` (a value of ``compute``, or bool for predicates) into the stored
    element of ``result``. Numba widens small ints (int8 + int8 is int64), so ints are cast back."""
    if result.name in _NARROW:
        _, f32, f64, _ = _NARROW[result.name]
        if compute is D.float32:
            return f"{f32}({expr})"
        if compute is D.float64:
            return f"{f64}({expr})"
        return f"{f64}({_convert(expr, compute, D.float64)})"
    if result.kind == "b":
        return f"bool({expr})"
    if compute.kind == "c" and result.kind != "c":
        return f"{_np(result)}(({expr}).real)"
    return f"{_np(result)}({expr})"


def _expression(plan) -> str:
    """The op's kernel expression for this plan's compute dtype (ops.py gives the generic one)."""
    op, c = plan.op, plan.compute
    expr = OPS[op].expr
    if c.kind == "b":
        # NumPy's bool loops are logical: True + True is True (or), True * False is False (and)
        expr = {"add": "in0 | in1", "multiply": "in0 & in1"}.get(op, expr)
    elif c.kind == "c":
        if op == "true_divide":
            expr = "gpc_divide(in0, in1)"
        elif op in _ORDERING:
            expr = f"gpc_{op}(in0, in1)"
    elif _int_division(plan) == "xla":
        expr = expr.replace("gp_floor_divide(", "gp_floor_divide_xla(").replace("gp_remainder(", "gp_remainder_xla(")
    if op == "nextafter" and plan.result.name in _NARROW:
        # why: the step is one ulp of the narrow result type, not of the float32 compute type
        expr = f"gpn_nextafter_{_NARROW_TAG[plan.result.name]}(in0, in1)"
    return expr


def _via(plan):
    """The promoted dtype when inputs are rounded through it (a narrow float), else None."""
    promoted = getattr(plan, "promoted", None)
    return promoted if promoted is not None and promoted.name in _NARROW else None


def _int_division(plan):
    """The integer-division semantics when the kernel depends on them, else None."""
    if plan.op in ("floor_divide", "remainder") and plan.compute.kind in "ui":
        return "xla" if plan.int_division == "xla" else "numpy"
    return None


# Ops XLA lowers to bit operations (select, sign-bit and integer steps): FTZ/DAZ do not touch them,
# so jnp.where / copysign / nextafter keep subnormals (observed, JAX 0.10.2 on the CPU).
_BITWISE_FLOAT_OPS = ("where", "copysign", "nextafter")


def _ftz(plan) -> bool:
    """Subnormals flushed to zero (a Plan flag for JAX / XLA; False where the Plan has none)."""
    return (bool(getattr(plan, "flush_subnormals", False)) and plan.compute.kind in "fc"
            and plan.op not in _BITWISE_FLOAT_OPS)


def kernel_key(plan):
    """What the generated code depends on: plans of different policies that compute the same
    thing share one kernel (numpy's and torch's float32 add are one)."""
    via = _via(plan)
    return (plan.op, tuple(d.name for d in plan.inputs), plan.folded, plan.compute.name, plan.result.name,
            via.name if via is not None else None, _int_division(plan), _ftz(plan))


def _params(plan):
    return [f"s{i}" if f else f"x{i}" for i, f in enumerate(plan.folded)] + ["out"]


def _body(plan, index: str, indent: str) -> list[str]:
    lines, ftz = [], _ftz(plan)
    for i, (src, folded) in enumerate(zip(plan.inputs, plan.folded)):
        cond = plan.op == "where" and i == 0
        via = None if cond else _via(plan)
        read = f"s{i}" if folded else _read(f"x{i}[{index}]", src, D.bool if cond else plan.compute, via)
        lines.append(f"{indent}in{i} = " + (f"gpf_ftz({read})" if ftz and not cond else read))
    expr = _expression(plan)
    if ftz and plan.result.kind in "fc":
        expr = f"gpf_ftz({expr})"
    lines.append(f"{indent}out[{index}] = {_write(expr, plan.compute, plan.result)}")
    return lines


def source(plan) -> str:
    """The generated Python/Numba source for ``plan`` (readable: print it to debug a kernel)."""
    params = ", ".join(_params(plan))
    op, inputs, folded, compute, result, via, division, ftz = kernel_key(plan)
    lines = [
        f'"""gpupromote CPU kernel (generator v{GENERATOR_VERSION}), generated for:',
        f"    op={op} inputs={list(inputs)} folded={list(folded)}",
        f"    compute={compute} result={result}" + (f" inputs rounded through {via}" if via else "")
        + (f" integer division: {division}" if division else "") + (" subnormals flushed" if ftz else ""),
        'Written once by gpupromote.backends.cpu_numba and imported from here so that Numba can cache',
        'the compiled code on disk. Do not edit."""',
        "import numpy as np",
        "from numba import njit",
        "from gpupromote.backends._numba_math import *  # noqa: F401,F403",
        "from gpupromote.backends.cpu_numba import (gpc_divide, gpc_less, gpc_less_equal, gpc_greater,  # noqa",
        "    gpc_greater_equal, gpn_nextafter_f16, gpn_nextafter_bf16, gpn_nextafter_e4m3, gpn_nextafter_e5m2, gpf_ftz)",
        "",
        "# error_model='numpy': float x / 0 is inf or nan, never a ZeroDivisionError",
        "_jit = njit(cache=True, nogil=True, error_model='numpy', boundscheck=False)",
        "",
        "",
        "@_jit",
        f"def flat({params}):",
        "    for i in range(out.shape[0]):",
        *_body(plan, "i", "        "),
    ]
    for nd in range(1, _MAX_STRIDED_NDIM + 1):
        idx = ", ".join(f"i{d}" for d in range(nd))
        # Not decorated here: Kernel.strided() jits it on first use (a cheaper module import).
        lines += ["", "", f"def strided{nd}({params}):"]
        for d in range(nd):
            lines.append(f"{'    ' * (d + 1)}for i{d} in range(out.shape[{d}]):")
        lines += _body(plan, idx, "    " * (nd + 1))
    return "\n".join(lines) + "\n"


def _load_module(src: str):
    """The module for ``src``, executed from the in-memory text and filed as
    ``<kernel dir>/_gpk_<hash>.py``, the file Numba's disk cache is keyed on (written once,
    atomically; a copy that differs from ``src`` is damaged and is written again)."""
    name = "_gpk_" + hashlib.sha1(src.encode()).hexdigest()[:24]
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    path = _module_file(name, src)
    claim_dir(path.parent)
    mod = _pytypes.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod
    try:
        # why: compiled from `src`, not read back: a damaged file can never become the code that runs
        exec(compile(src, str(path), "exec"), mod.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    _check_caches(mod)
    return mod


def _module_file(name: str, src: str) -> Path:
    """Where the kernel module ``name`` lives: the first folder of READ_DIRS holding an intact copy;
    else it is written (again) to WRITE_DIR."""
    for folder in READ_DIRS:
        path = folder / f"{name}.py"
        try:
            with open(path, encoding="utf-8") as f:
                on_disk = f.read()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            drop_damaged(path, exc)
            continue
        if on_disk == src:
            return path
        drop_damaged(path, f"{len(on_disk)} characters where the generated module has {len(src)}, "
                           "or other text")
    path = WRITE_DIR / f"{name}.py"
    if WRITE_DIR != KERNEL_DIR:
        warn_once(("unwritable", str(KERNEL_DIR)),
                  f"gpupromote: the kernel cache {KERNEL_DIR} cannot be written; it is read, and new kernels "
                  f"are cached in {WRITE_DIR}")
    # a concurrent writer writes the same text, and the rename is atomic: any winner is right
    if not write_atomically(path, src):
        raise OSError(f"gpupromote: cannot write the kernel module {path}")
    return path


def _check_caches(mod) -> None:
    """Numba functions of a kernel module get the checked disk cache (backends/_numba_cache.py):
    ``flat`` now, the strided variants when ``Kernel.strided`` jits them through ``mod._jit``."""
    from numba.core.dispatcher import Dispatcher
    for value in list(vars(mod).values()):
        if isinstance(value, Dispatcher) and value.py_func.__module__ == mod.__name__:
            checked(value)
    jit = getattr(mod, "_jit", None)
    if jit is not None:
        mod._jit = lambda fn: checked(jit(fn))


# ---------------------------------------------------------------------------------------------
# Kernels and launching

def _coalesce(ins, out):
    """Views of ``ins`` (already broadcast to out.shape) and ``out`` with the fewest axes: size-1
    axes dropped, axes ordered by the output's strides (largest first, so the inner loop walks
    memory in order), reversed where the output's stride is negative, and adjacent axes merged
    where every operand allows it."""
    arrays = [out, *ins]
    shape = out.shape
    keep = [d for d in range(out.ndim) if shape[d] != 1]
    if len(keep) != out.ndim:
        sel = tuple(slice(None) if shape[d] != 1 else 0 for d in range(out.ndim))
        arrays = [a[sel] for a in arrays]
    o = arrays[0]
    order = sorted(range(o.ndim), key=lambda d: -abs(o.strides[d]))
    if order != list(range(o.ndim)):
        arrays = [a.transpose(order) for a in arrays]
    o = arrays[0]
    if any(s < 0 for s in o.strides):
        flip = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in o.strides)
        arrays = [a[flip] for a in arrays]
    o = arrays[0]
    new_shape = list(o.shape[:1])
    new_strides = [list(a.strides[:1]) for a in arrays]
    for d in range(1, o.ndim):
        n = o.shape[d]
        if all(st[-1] == a.strides[d] * n for st, a in zip(new_strides, arrays)):
            new_shape[-1] *= n
            for st, a in zip(new_strides, arrays):
                st[-1] = a.strides[d]
        else:
            new_shape.append(n)
            for st, a in zip(new_strides, arrays):
                st.append(a.strides[d])
    if len(new_shape) != o.ndim:
        arrays = [np.lib.stride_tricks.as_strided(a, tuple(new_shape), tuple(st), writeable=(i == 0))
                  for i, (a, st) in enumerate(zip(arrays, new_strides))]
    return arrays[1:], arrays[0]


class Kernel:
    """The compiled functions of one plan, and how to call them on arrays of any layout."""

    def __init__(self, plan):
        self.plan = plan
        self.source = source(plan)
        self.module = _load_module(self.source)
        self.flat = self.module.flat
        self._strided = {}
        self._caller_plan = plan
        self.arrays = [i for i, f in enumerate(plan.folded) if not f]
        self.views = [None if f else _storage_view(d) for d, f in zip(plan.inputs, plan.folded)]
        self.out_view = _storage_view(plan.result)

    def strided(self, ndim):
        fn = self._strided.get(ndim)
        if fn is None:
            fn = self._strided[ndim] = self.module._jit(getattr(self.module, f"strided{ndim}"))
        return fn

    def __call__(self, args, out, plan=None):
        # plan: the caller's (kernels are shared between policies), for error messages
        self._caller_plan = plan or self.plan
        args = list(args)
        for i in self.arrays:
            v = self.views[i]
            if v is not None:
                args[i] = args[i].view(v)
        o = out if self.out_view is None else out.view(self.out_view)
        shape = o.shape
        arrays = [args[i] for i in self.arrays]
        if all(a.shape == shape for a in arrays):
            if o.ndim == 1:
                return _launch(self, self.flat, args, o)
            if all(a.flags.c_contiguous for a in arrays) and o.flags.c_contiguous:
                for i in self.arrays:
                    args[i] = args[i].reshape(-1)
                return _launch(self, self.flat, args, o.reshape(-1))
        if o.ndim == 0:
            for i in self.arrays:
                args[i] = args[i].reshape(1)
            return _launch(self, self.flat, args, o.reshape(1))
        ins = [np.broadcast_to(a, shape) for a in arrays]
        ins, o = _coalesce(ins, o)
        for i, a in zip(self.arrays, ins):
            args[i] = a
        if o.ndim <= _MAX_STRIDED_NDIM:
            return _launch(self, self.strided(o.ndim), args, o)
        fn, lead = self.strided(_MAX_STRIDED_NDIM), o.ndim - _MAX_STRIDED_NDIM
        for idx in itertools.product(*(range(n) for n in o.shape[:lead])):
            sub = list(args)
            for i in self.arrays:
                sub[i] = args[i][idx]
            _launch(self, fn, sub, o[idx])


def _storage_view(d: D.DType):
    narrow = _NARROW.get(d.name)
    return None if narrow is None else np.dtype(narrow[3])


def _launch(kernel, fn, args, out):
    try:
        fn(*args, out)
    except numba_errors.NumbaError as exc:
        raise _no_kernel(getattr(kernel, "_caller_plan", kernel.plan), exc) from None


def _no_kernel(plan, exc):
    """A Numba compile failure as the clear TypeError users see (never a raw Numba traceback)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    why = next((ln for ln in lines if "TypingError:" in ln or "unsupported" in ln), lines[0] if lines else "")
    return TypeError(f"policy {plan.policy!r}, {plan.op}: the CPU engine has no kernel for inputs "
                     f"{[d.name for d in plan.inputs]} computed in {plan.compute.name} -> {plan.result.name} "
                     f"({why[:200]}). Print gp.backends.cpu_numba.source(plan) for the generated code")


_kernels: dict = {}


def kernel_for(plan) -> Kernel:
    """The kernel for ``plan`` (memory cache by kernel_key(plan); compiled lazily per layout)."""
    key = kernel_key(plan)
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = Kernel(plan)
    return k


# ---------------------------------------------------------------------------------------------
# Output buffers
#
# A fresh output of 10**7 float64 costs as much as the arithmetic: the kernel (the OS) zeroes
# every new page on first touch. Large outputs therefore come from a small pool of buffers that
# earlier results gave back when they died, the way CuPy's memory pool works on the GPU. A
# buffer goes back only when nothing else refers to it: any view of a result keeps the result's
# base buffer referenced, so a view never sees its memory reused. GPUPROMOTE_CPU_POOL_MB sets
# the most memory kept (default 256; 0 turns the pool off).

_POOL_MIN_BYTES = 1 << 22          # 4 MiB: below it, np.empty is cheap (and NumPy caches)


def _pool_cap_from_environment() -> int:
    """GPUPROMOTE_CPU_POOL_MB in bytes (default 256 MiB); a value that is not a whole number >= 0
    is an error naming the variable, raised by the first op."""
    text = os.environ.get("GPUPROMOTE_CPU_POOL_MB", "256")
    try:
        mib = int(text.strip())
    except ValueError:
        mib = -1
    if mib < 0:
        raise ValueError(f"GPUPROMOTE_CPU_POOL_MB={text!r} is not a whole number of MiB >= 0: set it to the "
                         f"most memory the CPU output pool may keep, e.g. 256 (the default), or 0 to turn it off")
    return mib << 20


_POOL_CAP = _pool_cap_from_environment()
_pool: dict = {}                   # nbytes -> [uint8 buffers]
_pool_bytes = [0]


def _refs_in_finalizer():
    """How many references a buffer has inside its finalizer when nothing else holds it (the
    finalizer's bookkeeping; measured rather than assumed, it differs between Pythons)."""
    seen = []
    raw = np.empty(1, np.uint8)
    out = raw.view(np.uint8)
    weakref.finalize(out, lambda r: seen.append(sys.getrefcount(r)), raw)
    del raw, out
    return seen[0] if seen else 0


_FINALIZER_REFS = _refs_in_finalizer()


def _give_back(raw):
    if sys.getrefcount(raw) > _FINALIZER_REFS or _pool_bytes[0] + raw.nbytes > _POOL_CAP:
        return
    if not raw.flags.writeable:
        return   # why: made read-only through a view's .base: it cannot be an output again
    _pool.setdefault(raw.nbytes, []).append(raw)
    _pool_bytes[0] += raw.nbytes


def alloc(shape, dtype):
    """A new (uninitialized) output array; large ones reuse a pooled buffer."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < _POOL_MIN_BYTES or not _POOL_CAP:
        return np.empty(shape, dtype)
    raw = None
    bucket = _pool.get(nbytes)
    if bucket:
        try:
            raw = bucket.pop()
            _pool_bytes[0] -= nbytes
        except IndexError:   # another thread took the last one
            raw = None
    if raw is None:
        raw = np.empty(nbytes, np.uint8)
    out = raw.view(dtype).reshape(shape)
    weakref.finalize(out, _give_back, raw)
    return out


def _nd_same_shape(flat, a, b, v0, v1, vo, res_np):
    """Same-shape C-contiguous n-d arrays: one flat loop over raveled views (else None)."""
    shape = a.shape
    if b.shape != shape or not shape or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    out = alloc(shape, res_np)
    a, b, o = a.reshape(-1), b.reshape(-1), out.reshape(-1)
    flat(a if v0 is None else a.view(v0), b if v1 is None else b.view(v1), o if vo is None else o.view(vo))
    return out


def _fast_runner(plan, converters):
    """A callable for dispatch's fast path: (args...) -> a new result array, or None when the
    call needs the general path (shapes differ, non-contiguous n-d arrays)."""
    # Every kernel call below sits in a try block (free in CPython 3.11 until it raises) so that
    # a compile failure reads as a TypeError, never as a Numba traceback.
    k = kernel_for(plan)
    flat, res_np, vo = k.flat, plan.result.numpy, k.out_view
    small, np_empty = _POOL_MIN_BYTES // res_np.itemsize, np.empty

    def empty(shape, dtype):   # 1-element calls must not pay for the pool's bookkeeping
        return np_empty(shape, dtype) if shape[0] < small else alloc(shape, dtype)
    if len(converters) == 2:
        (c0, c1), (v0, v1) = converters, k.views
        if c0 is None and c1 is None:
            if v0 is None and v1 is None and vo is None:
                def run(a, b):   # the common case, kept to the fewest Python operations
                    shape = a.shape
                    try:
                        if len(shape) == 1 and b.shape == shape:
                            out = np_empty(shape, res_np) if shape[0] < small else alloc(shape, res_np)
                            flat(a, b, out)
                            return out
                        return _nd_same_shape(flat, a, b, None, None, None, res_np)
                    except numba_errors.NumbaError as exc:
                        raise _no_kernel(plan, exc) from None
                return run

            def run(a, b):
                shape = a.shape
                try:
                    if len(shape) == 1 and b.shape == shape:
                        out = empty(shape, res_np)
                        flat(a if v0 is None else a.view(v0), b if v1 is None else b.view(v1),
                             out if vo is None else out.view(vo))
                        return out
                    return _nd_same_shape(flat, a, b, v0, v1, vo, res_np)
                except numba_errors.NumbaError as exc:
                    raise _no_kernel(plan, exc) from None
            return run
        if c0 is None or c1 is None:
            arr_first = c0 is None
            conv, va = (c1, v0) if arr_first else (c0, v1)

            def run(a, b):
                x, s = (a, b) if arr_first else (b, a)
                if x.ndim != 1:
                    if x.ndim == 0 or not x.flags.c_contiguous:
                        return None
                    out = empty(x.shape, res_np)
                    x, o = x.reshape(-1), out.reshape(-1)
                else:
                    out = o = empty(x.shape, res_np)
                if va is not None:
                    x = x.view(va)
                if vo is not None:
                    o = o.view(vo)
                try:
                    if arr_first:
                        flat(x, conv(s), o)
                    else:
                        flat(conv(s), x, o)
                except numba_errors.NumbaError as exc:
                    raise _no_kernel(plan, exc) from None
                return out
            return run
        return None

    def run(*args):
        shape = None
        kargs = []
        for x, conv in zip(args, converters):
            if conv is None:
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return None
                kargs.append(x)
            else:
                kargs.append(conv(x))
        if shape is None or (len(shape) != 1 and not all(a.flags.c_contiguous for a, c in zip(kargs, converters)
                                                          if c is None)):
            return None
        out = empty(shape, res_np)
        k(kargs, out)
        return out
    return run


class _CpuBackend:
    name = "cpu"

    def empty(self, shape, dtype: D.DType):
        if dtype.numpy is None:
            raise TypeError(f"{dtype.name} has no numpy storage: no CPU array can hold it")
        return alloc(shape, dtype.numpy)

    def run(self, plan, args, out):
        kernel_for(plan)(args, out, plan)

    def copyto(self, dst, src):
        np.copyto(dst, src, casting="unsafe")

    def asarray(self, x):
        return np.asarray(x)

    fast_runner = staticmethod(_fast_runner)


BACKEND = _CpuBackend()


# ---------------------------------------------------------------------------------------------
# Warm-up: compile a policy's common kernels ahead of time

_WARM_OPS = ("add", "subtract", "multiply", "true_divide", "maximum", "minimum", "equal", "less", "where")
_WARM_DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_WARM_PAIRS = (("int8", "float32"), ("int32", "float32"), ("int64", "float64"), ("float16", "float32"),
               ("bfloat16", "float32"), ("int32", "int64"), ("uint8", "int32"), ("float32", "float64"))


def common_plans(policy: str):
    """The plans ``warmup`` compiles: same-dtype pairs, common mixed pairs (both orders) and
    array-with-Python-scalar forms of the main ops; plans the policy refuses are skipped."""
    from ..api import spec
    from ..resolve import resolve
    from ..api import describe
    pairs = [(d, d) for d in _WARM_DTYPES] + list(_WARM_PAIRS) + [(b, a) for a, b in _WARM_PAIRS]
    seen, plans = set(), []
    for op in _WARM_OPS:
        combos = []
        for a, b in pairs:
            combos.append((spec(a), spec(b)))
        for d in _WARM_DTYPES:
            combos += [(spec(d), 2), (spec(d), 2.5)]
        for combo in combos:
            args = (spec("bool"), *combo) if op == "where" else combo
            try:
                plan = resolve(policy, op, [describe(x) for x in args])
            except (TypeError, ValueError, OverflowError):
                continue
            if kernel_key(plan) in seen or any(d.numpy is None for d in (*plan.inputs, plan.result)):
                continue
            seen.add(kernel_key(plan))
            plans.append(plan)
    return plans


def warmup(policy: str, progress=None, plans=None) -> int:
    """Compile (or load from the disk cache) the flat kernels of ``plans`` (default:
    ``common_plans(policy)``). ``progress(done, total, plan)`` is called after each one.
    Returns the number of kernels."""
    plans = common_plans(policy) if plans is None else plans
    for n, plan in enumerate(plans, 1):
        k = kernel_for(plan)
        args = []
        for d, f in zip(plan.inputs, plan.folded):
            target = D.bool if plan.op == "where" and not args else plan.compute
            args.append(target.numpy.type(1) if f else np.ones(4, d.numpy))
        out = np.empty(4, plan.result.numpy)
        k(args, out)
        if progress is not None:
            progress(n, len(plans), plan)
    return len(plans)


def _cmd_warmup(args) -> int:
    """``python -m gpupromote warmup --policy P``: compile with a progress bar."""
    import time

    from ..policies import get_policy
    get_policy(args.policy)   # an unknown policy is an error, not "0 kernels ready"
    width, start = 30, time.perf_counter()

    def bar(done, total, plan):
        filled = width * done // total
        label = f"{plan.op}({', '.join(d.name for d in plan.inputs)}) -> {plan.result.name}"
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:50]:<50}")
        sys.stderr.flush()

    n = warmup(args.policy, progress=bar)
    sys.stderr.write("\n")
    print(f"{n} kernels ready for policy {args.policy!r} in {time.perf_counter() - start:.1f} s "
          f"(cache: {WRITE_DIR})")
    return 0
