"""The public op functions (gp.add, gp.where, ...) and their fast paths.

Each op function is a C callable (_fastpath.Op, the compiled dispatcher) in front of a Python
function that stays the fallback and the reference (GPUPROMOTE_PURE_PYTHON=1 uses it alone); the
Python function has a fast path of its own in front of the eager call (eager.call). A call with a
dask array among its operands becomes a lazy dask graph (integrations/dask.py, registered by the
package root through operands.register_lazy and imported when the first such call comes, so that
importing gpupromote never imports dask).
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ..core import caches
from ..core import dtypes as D
from ..core.kinds import Form
from .api import CURRENT_POLICY, cached_plan, clip_form
from ..engines import get_backend
from ..engines.cpu import threads as cpu_threads
from .checks import needs_checks
from . import sanitize as _sanitize
from . import conventions
from .eager import call as _eager_call
from .folding import FOLD_CODES, converter, fold_target
from ..promotion.limits import INT_RANGES
from ..core.ops import ALIASES, OPS, UNARY_OPS
from .astype import make_astype
from .columns import column_kernel
from .rounding import with_decimals
from .array import Array
from .host_arrays import as_host_array, forms_agree, host_storages
from .operands import SCALAR_TYPES, is_dask, is_device, is_numpy_scalar, lazy
from ..promotion.policies import get_policy
from ..promotion.rules import CLIPS
from ..promotion.store import check_store

__all__ = ["OP_FUNCTIONS", "call", "make_op"]

_ndarray = np.ndarray


def call(op: str, args, policy=None, out=None, form=Form.FUNCTION):
    """``op`` on ``args`` under ``policy`` into ``out``: a dask graph when a dask array is among
    them, else the eager call (dispatch.call). ``form``: the function (gp.<op>) or an operator."""
    # (first: host_storages answers None for anything but host Arrays, numpy arrays and scalars, a
    # dask array included, so a gp.Array operator skips the dask tests: 2.4 -> 1.5 us for 1024 float32)
    if out is None and not _sanitize.active_anywhere[0]:
        storages = host_storages(args, form == Form.FUNCTION or forms_agree(op, policy))
        fn = OP_FUNCTIONS.get(op) if storages is not None else None
        if fn is not None:
            return as_host_array(fn(*storages, policy=policy))
    if (out is not None and is_dask(out)) or any(is_dask(x) for x in args):
        return lazy("call")(op, args, policy, out, form)   # a lazy dask graph, one eager call per block
    if _fastpath is not None:
        _bind_device_arrays(args, out)
    return _eager_call(op, args, policy, out, form)


# ---------------------------------------------------------------------------------------------
# Public op functions with a fast path
#
# The fast path caches, per op, (policy, per-argument dtype or Python type, ndim) -> a runner
# bound to one plan and one backend kernel. It covers numpy arrays (of one shape, or shapes that
# broadcast) and Python scalars without out=; a host gp.Array's call is its storage's
# (host_storages); cupy and out= take the full path. A Python scalar's value can change the plan
# (range checks, exact comparisons, 2**63 as uint64): the runner holds the plan of an ordinary
# value and the bounds within which it holds (api.cached_plan), and returns None for a value
# outside them, as it does when it cannot take a call (e.g. a 0-d array): the full path runs.

_INT64 = INT_RANGES["int64"]


def _fast_key(x):
    """The cache key of one argument: the dtype of a numpy array, the type of anything else.

    Keyed by the dtype's value, not its identity: arrays that arrive through pickle
    (multiprocessing, joblib, DataLoader) or carry dtype metadata bring a new dtype object each
    time, equal to the last one; each must find the same runner, not add an entry that keeps its
    dtype alive. (Hashing a dtype costs what id() does.)"""
    t = type(x)
    return x.dtype if t is _ndarray else t


# The runners are few (one per op, policy and argument dtypes or types); the limit only bounds
# what unusual dtypes (structured, datetime, ...) could add to a long-running process.
_FAST_CACHE_LIMIT = 4096


def _fast_plan(op, args, policy, array=_ndarray):
    """(plan, bounds) for the fast paths (the Python runners and the compiled dispatcher): the plan
    of calls like this one and the ((position, lo, hi), ...) its Python ints must lie in; None
    where such calls always take the full path, _MISS where this one does (not remembered).
    ``array``: the one array type the fast path takes (numpy's, or CuPy's for the CUDA entries)."""
    if not all(type(x) is array or type(x) in SCALAR_TYPES or is_numpy_scalar(x) for x in args):
        return None   # gp.Array, arrays of another kind, numpy scalars of no gpupromote dtype, ...
    if any(type(x) is array and not x.dtype.isnative for x in args):
        return None   # the full path converts the byte order
    if any(type(x) is array and x.ndim == 0 for x in args):
        return _MISS   # 0-d arrays fold: not cached, as the key (the dtype) does not say ndim
    if any(type(x) is int and not _INT64[0] <= x <= _INT64[1] for x in args):
        return _MISS   # a plan of its own (PyTorch's uint64 kind), not one for every int
    pol = get_policy(policy)
    if pol.rules.canonical and any((type(x) is array or isinstance(x, np.generic))
                                   and D.dtype(x.dtype).name in pol.rules.canonical for x in args):
        return None   # 64-bit arrays and numpy scalars under JAX x32: the full path casts them first
    cached = cached_plan(op, args, policy, Form.FUNCTION)   # the op functions' own form: gp.maximum(x, 2.0)
    if cached is None:
        return None   # no ordinary scalar value passes here: the full path says why, every time
    plan, bounds = cached
    if plan.exact_exponent:
        return None   # the exponent is folded as an equivalent one (call)
    bounds += tuple((i, *_INT64) for i, x in enumerate(args) if type(x) is int)
    if plan.op in CLIPS and plan.compute.kind in "ui":
        # an int bound outside the integer type: NumPy saturates it (folding.fold_operand), the full path
        bounds += tuple((i, *INT_RANGES[plan.compute.name]) for i, x in enumerate(args) if type(x) is int)
    if needs_checks(plan):
        # Integer division and power check their operands before the launch; with an array
        # first and a Python int second, that check is the int's sign: x // 2, x % 3, x ** 2 pass.
        # (the bounds of the int, from the policy's rules, keep 0 and negative divisors and
        # negative exponents and shift counts out)
        if not (type(args[0]) is array and type(args[1]) is int):
            return None
    for d in (*plan.inputs, plan.result):
        if d.numpy is None:
            return None
    return plan, _merged(bounds)


def _make_runner(op, args, policy):
    found = _fast_plan(op, args, policy)
    if found is None or found is _MISS:
        return found
    plan, bounds = found
    backend = get_backend("cpu")
    make = getattr(backend, "fast_runner", None)
    if make is None:
        return None
    converters = [(converter(plan.inputs[i], fold_target(plan, i)) if f else None)
                  for i, f in enumerate(plan.folded)]
    runner = make(plan, converters)
    if runner is not None and len(args) != 2:
        runner = _arrays_with_dimensions(runner)
    if runner is not None and bounds:
        runner = _within(bounds, runner, len(args))
    return runner


def _arrays_with_dimensions(runner):
    """``runner`` for calls whose arrays all have dimensions; None (the full path, which folds them)
    for a 0-d array. The key of a call is its dtypes, not its ranks: where(cond[n], 1, 2) and
    where(cond[], 1, 2) share one, and the generic runner cannot take a 0-d array."""
    def run(*args):
        for x in args:
            if type(x) is _ndarray and not x.ndim:
                return None
        return runner(*args)
    return run


def _merged(bounds):
    """One (position, lo, hi) per position: the intersection of the ranges given for it."""
    merged = {}
    for i, lo, hi in bounds:
        old_lo, old_hi = merged.get(i, (lo, hi))
        merged[i] = (max(lo, old_lo), min(hi, old_hi))
    return tuple((i, lo, hi) for i, (lo, hi) in sorted(merged.items()))


def _within(bounds, runner, arity):
    """``runner`` for the calls whose Python scalars lie within ``bounds`` ((position, lo, hi),
    ...); None, for the full path, otherwise."""
    if arity == 2 and len(bounds) == 1:  # why: x + 1 and 1 + x, the common cases, in one comparison
        i, lo, hi = bounds[0]
        if i == 1:
            return lambda a, b: runner(a, b) if lo <= b <= hi else None
        return lambda a, b: runner(a, b) if lo <= a <= hi else None

    def run(*args):
        for i, lo, hi in bounds:
            if not lo <= args[i] <= hi:
                return None
        return runner(*args)
    return run


_MISS = object()


def _remember(cache, key, runner):
    if len(cache) >= _FAST_CACHE_LIMIT:
        cache.clear()
    cache[key] = runner


_KEYWORDS_DOC = (
    "\n\nNumPy's ufunc keywords, under every policy (they are the caller's explicit conversions, not "
    "promotion; dispatch/conventions.py, docs/functions.md): dtype= converts the operands to that dtype first "
    "(under `casting`) where the op has no form giving it from them as they are, then the op is resolved as "
    "usual; casting= ('no', 'equiv', 'safe', 'same_kind', 'unsafe') bounds those conversions and the store into "
    "out= (in place of the policy's out= rule); where= (a boolean mask, broadcast) stores the result only where "
    "it is True: out's other elements are kept, and without out= they are zero. out= may be a 1-tuple.")


def make_op(name: str):
    """The public function for op ``name`` (an OPS name; aliases get the same function)."""
    op = OPS.get(name) or UNARY_OPS[name]
    cache: dict = {}
    caches.register(cache.clear)
    get = cache.get
    current = CURRENT_POLICY.get
    sanitizing = _sanitize.active_anywhere

    if op.arity == 1:
        def fn(x, /, *, policy=None, out=None, dtype=None, casting=None, where=True, sanitize=None):
            if sanitize is not None:
                with _sanitize.for_call(sanitize):
                    return fn(x, policy=policy, out=out, dtype=dtype, casting=casting, where=where)
            if dtype is not None or casting is not None or where is not True or type(out) is tuple:
                return conventions.call(name, (x,), policy, out, dtype, casting, where)
            return call(name, (x,), policy, out)
        fn.__doc__ = (f"{name}(x, *, policy=None, out=None, dtype=None, casting=None, where=True): elementwise "
                      f"`{op.expr}`, of the dtype `policy` gives it (gp.result_type(x, op={name!r}); default: the "
                      f"current policy).{_KEYWORDS_DOC}")
        if name == "round":   # np.round(x, decimals): NumPy's composition of multiply, rint, divide
            fn = with_decimals(fn, lambda: OP_FUNCTIONS)
    elif op.arity == 2:
        def fn(a, b, /, *, policy=None, out=None, dtype=None, casting=None, where=True, sanitize=None):
            if sanitize is not None:
                with _sanitize.for_call(sanitize):
                    return fn(a, b, policy=policy, out=out, dtype=dtype, casting=casting, where=where)
            if dtype is not None or casting is not None or where is not True or type(out) is tuple:
                return conventions.call(name, (a, b), policy, out, dtype, casting, where)
            if out is None and not sanitizing[0]:   # (while sanitizing, every call takes the full path)
                # _fast_key, inlined: this line is most of the per-call overhead
                key = (policy or current(), a.dtype if type(a) is _ndarray else type(a),
                       b.dtype if type(b) is _ndarray else type(b))
                runner = get(key, _MISS)
                if runner is _MISS:
                    runner = _make_runner(name, (a, b), key[0])
                    if runner is not _MISS:
                        _remember(cache, key, runner)
                if runner is not None and runner is not _MISS:
                    res = runner(a, b)
                    if res is not None:
                        return res
            return call(name, (a, b), policy, out)
        fn.__doc__ = (f"{name}(a, b, *, policy=None, out=None, dtype=None, casting=None, where=True): elementwise "
                      f"`{op.expr}` with the dtype promotion of `policy` (default: the current policy, see "
                      f"gp.use_policy).{_KEYWORDS_DOC}")
    else:
        def fn(cond, a, b, /, *, policy=None, out=None, dtype=None, casting=None, where=True, sanitize=None):
            if sanitize is not None:
                with _sanitize.for_call(sanitize):
                    return fn(cond, a, b, policy=policy, out=out, dtype=dtype, casting=casting, where=where)
            if dtype is not None or casting is not None or where is not True or type(out) is tuple:
                return conventions.call(name, (cond, a, b), policy, out, dtype, casting, where)
            if out is None and not sanitizing[0]:
                key = (policy or current(), _fast_key(cond), _fast_key(a), _fast_key(b))
                runner = get(key, _MISS)
                if runner is _MISS:
                    runner = _make_runner(name, (cond, a, b), key[0])
                    if runner is not _MISS:
                        _remember(cache, key, runner)
                if runner is not None and runner is not _MISS:
                    res = runner(cond, a, b)
                    if res is not None:
                        return res
            return call(name, (cond, a, b), policy, out)
        fn.__doc__ = (f"{name}(cond, a, b, *, policy=None, out=None, dtype=None, casting=None, where=True): `a` "
                      f"where `cond` else `b`, with the dtype promotion of `policy` (default: the current policy). "
                      f"dtype= converts a and b, never cond.{_KEYWORDS_DOC}")
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "gpupromote"
    fn._fast_cache = cache
    return _compiled_op(name, op.arity, fn)


# ---------------------------------------------------------------------------------------------
# The compiled dispatcher (gpupromote/dispatch/fastpath/: ops.c, entry.c, device.c)
#
# Each op function is a C callable (_fastpath.Op) in front of the Python function above, which
# stays the fallback and the reference (GPUPROMOTE_PURE_PYTHON=1 uses it alone). The C side keeps,
# per (policy, operands' dtypes or Python types, out's dtype or None), an Entry that _make_entry
# builds here, once: the plan (from the same _fast_plan as the Python runners), the kernel's C
# entry point, how each Python scalar is folded, the bounds its ints must lie in, and whether the
# plan's store rules allow out= / in place. A call that fits no entry - another layout, a value
# out of bounds, an overlap, an unusual conversion - runs the Python function, unchanged, so
# both give one result, error and warning (tests/dispatch/test_dispatcher.py). Calls on CuPy arrays get
# entries of their own once a call has brought CuPy's handles (_bind_device_arrays): the plan's
# contiguous kernel, launched from C with one cuLaunchKernel (tests/hostcuda/test_hostcuda_dispatcher.py).
# A call of two arrays where one is a column ((M, K) - (M, 1)) runs that plan's kernel with the
# column folded, a row at a time, where the two plans compute alike (columns.py, fastpath/column.c).


def _load_fastpath():
    if os.environ.get("GPUPROMOTE_PURE_PYTHON"):
        return None
    try:
        from . import _fastpath
    except ImportError:   # no C compiler at install time, or run from a source tree (PYTHONPATH=.)
        return None
    if not hasattr(_fastpath, "Op") or not hasattr(_fastpath, "set_sanitizing"):
        return None   # an extension built from an older source
    _fastpath.bind_ops(CURRENT_POLICY, _ndarray)
    if hasattr(_fastpath, "bind_array"):
        _fastpath.bind_array(Array, D.dtype)   # host gp.Arrays are operands of the compiled ops
    _sanitize.add_sink(_fastpath.set_sanitizing)   # while sanitizing, the compiled path declines every call
    if hasattr(_fastpath, "set_threads"):
        cpu_threads.add_sink(_fastpath.set_threads)   # the C pool splits calls over the CPU engine's threads
    if hasattr(_fastpath, "launch"):
        from ..engines.cuda import rawlaunch
        rawlaunch.set_launch(_fastpath.launch)   # the CUDA reductions launch from C
    return _fastpath


_fastpath = _load_fastpath()


def _store_allowed(plan, inplace: bool) -> bool:
    try:
        check_store(plan, plan.result, inplace=inplace)
    except TypeError:
        return False
    return True


def _make_entry(op, args, policy, out):
    """The compiled dispatcher's Entry for calls like this one, None where they always take the
    Python path, _MISS where this one does."""
    device = _device_array_type is not None and any(type(x) is _device_array_type for x in (*args, out))
    array = _device_array_type if device else _ndarray
    if out is not None and (type(out) is not array or not out.dtype.isnative):
        return None
    found = _fast_plan(op, args, policy, array)
    if found is None or found is _MISS:
        return found
    plan, bounds = found
    if not any(type(x) is array for x in args):
        return None
    if out is not None and (D.dtype(out.dtype) is not plan.result or out.dtype != plan.result.numpy):
        return None   # computed in the result dtype, then cast: the Python path's temporary
    folds = []
    for i, f in enumerate(plan.folded):
        if not f:
            folds.append(None)
            continue
        to = fold_target(plan, i)
        if to.name not in FOLD_CODES:
            return None
        folds.append((FOLD_CODES.get(plan.inputs[i].name, -1), FOLD_CODES[to.name],
                      converter(plan.inputs[i], to)))
    stores = (_store_allowed(plan, False), _store_allowed(plan, True))
    if device:
        return _device_entry(plan, tuple(folds), bounds, stores)
    backend = get_backend("cpu")
    native = getattr(backend, "native_kernel", None)
    kernel = native(plan) if native is not None else None
    if kernel is None:
        return None
    max_n = backend.native_max_n(plan)
    extra = {} if max_n is None else {"max_n": max_n}
    if len(args) == 2 and not any(plan.folded):
        extra["column"] = functools.partial(column_kernel, _fast_plan, op, plan, tuple(x.dtype for x in args))
    return _fastpath.Entry(kernel.address, kernel, plan.result.numpy, backend.alloc, backend.pool_min_bytes,
                           tuple(folds), bounds, *stores, **extra)


# The C type of the kernel parameter a folded scalar's carrier (fastpath/fastpath.h's Slot) fills, per
# fold target: float16 and bfloat16 travel as the float32 that holds them exactly, a complex
# scalar as its two parts.
_CARRIER_CTYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
                   "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
                   "uint64": "unsigned long long", "float32": "float", "float64": "double", "complex64": "float",
                   "complex128": "double", "float16": "float", "bfloat16": "float"}


def _device_entry(plan, folds, bounds, stores):
    """The Entry of calls on CuPy arrays: the plan's contiguous kernel, launched from C."""
    backend = get_backend("cuda")
    stored = [d for d, f in zip(plan.inputs, plan.folded) if not f] + [plan.result]
    if any(backend.storage_dtype(d) != d.numpy for d in stored):
        return None   # bit-pattern storage (bfloat16 on a CuPy without it): a gp.Array result
    launch = backend.native_launch(plan)
    if launch is None:
        return None
    for i, f in enumerate(plan.folded):
        to = fold_target(plan, i) if f else None
        if f and launch.scalars[i] != (_CARRIER_CTYPES[to.name], to.kind == "c"):
            return None   # a parameter type the carrier does not fill
    cp, _ = backend.device_handles()
    return _fastpath.Entry(0, launch.kernel, plan.result.numpy, cp.empty, 0, folds, bounds, *stores,
                           launch=(launch.address, launch.function, launch.device, launch.width, launch.block,
                                   launch.max_blocks, launch.itemsizes, launch.aligns, launch.out_align,
                                   tuple(int(bool(s and s[1])) for s in launch.scalars)))


_device_array_type = None   # CuPy's ndarray, once a call brought one (bind_device)
_device_module = None


def _bind_device_arrays(args, out):
    """Hand CuPy's handles to the compiled dispatcher when a call brings a CuPy array (of a CuPy
    module it does not hold yet: the host test tier swaps it), so later calls launch from C."""
    global _device_array_type, _device_module
    for x in (*args, out):
        t = type(x)
        if t is _ndarray or t in SCALAR_TYPES or x is None or t is _device_array_type or not is_device(x):
            continue
        try:
            cp, handles = get_backend("cuda").device_handles()
        except Exception:  # noqa: BLE001 - no CuPy: the call says so in its own words
            return
        if t is handles[0] and cp is not _device_module:
            _fastpath.bind_device(*handles)
            _device_array_type, _device_module = t, cp
            caches.clear_all()   # entries made for another CuPy's kernels
        return


def _entry_maker(name, cache):
    def make(key, args, policy, out):
        try:
            entry = _make_entry(name, args, policy, out)
        except Exception:  # noqa: BLE001 - the Python path meets it again and raises it in its words
            return False
        if entry is _MISS:
            return False
        _remember(cache, key, entry)
        return entry
    return make


def _compiled_op(name, arity, fn):
    """``fn`` (the Python op function) behind the compiled dispatcher, where it was built."""
    if _fastpath is None:
        return fn
    cache: dict = {}
    caches.register(cache.clear)   # (its memo in C is cleared by _fastpath.forget, registered by dispatch/api.py)
    return _fastpath.Op(name, arity, fn, _entry_maker(name, cache), cache)


def compiled_reduction(name, fn, make):
    """``fn`` (a Python reduction function) behind the compiled dispatcher's ReduceOp
    (fastpath/reduce_op.c), whose maker ``make(policy, x, last_axis, keepdims)`` gives the
    ReduceEntry of a key or None; ``fn`` itself where the extension was not built."""
    if _fastpath is None or not hasattr(_fastpath, "ReduceOp"):
        return fn
    return _fastpath.ReduceOp(name, fn, make)


def reduce_entry(address, keep, result, max_n):
    """The compiled dispatcher's ReduceEntry: a reduction's native(data, M, K) at ``address``
    (``keep`` owns it), its result dtype, the most elements a call runs there."""
    return _fastpath.ReduceEntry(address, keep, result, max_n)


def _one_sided_clip(name):
    def fn(x, bound, /, *, policy=None, out=None):
        return call(name, (x, bound), policy, out)
    fn.__name__ = fn.__qualname__ = name
    return _compiled_op(name, 2, fn)


def _make_clip():
    one_sided = {"_clip_min": _one_sided_clip("_clip_min"), "_clip_max": _one_sided_clip("_clip_max")}

    def clip(x, lo=None, hi=None, /, *, policy=None, out=None, dtype=None, casting=None, where=True, sanitize=None):
        if sanitize is not None:
            with _sanitize.for_call(sanitize):
                return clip(x, lo, hi, policy=policy, out=out, dtype=dtype, casting=casting, where=where)
        if dtype is not None or casting is not None or where is not True or type(out) is tuple:
            return conventions.call("clip", (x, lo, hi), policy, out, dtype, casting, where)
        op, args = clip_form("clip", (x, lo, hi))
        if op in one_sided:   # a bound left out: the two-operand op, compiled too
            return one_sided[op](*args, policy=policy, out=out)
        return call(op, args, policy, out)
    clip.__doc__ = ("clip(x, lo=None, hi=None, *, policy=None, out=None, dtype=None, casting=None, where=True): x "
                    "limited to [lo, hi] elementwise (np.clip, torch.clamp, jnp.clip, tf.clip_by_value); x and the "
                    "bounds promote together as `policy` promotes them (gp.result_type(x, lo, hi, op='clip')). A "
                    "bound may be None." + _KEYWORDS_DOC)
    clip.__module__ = "gpupromote"
    return _compiled_op("clip", 3, clip)   # (with a bound left out, the compiled side hands the call to clip)


OP_FUNCTIONS = {name: make_op(name) for name in (*OPS, *UNARY_OPS)}
OP_FUNCTIONS["clip"] = _make_clip()
OP_FUNCTIONS["astype"] = make_astype(call)
# (the reductions' names resolve dtypes only, until they have kernels: no function for them yet)
OP_FUNCTIONS.update({alias: OP_FUNCTIONS[target] for alias, target in ALIASES.items() if target in OP_FUNCTIONS})
conventions.bind(OP_FUNCTIONS)   # the keyword path (dtype=, casting=, where=) calls the op functions


