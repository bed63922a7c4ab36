"""gp ops and gp.fuse functions on dask arrays: a lazy graph, one gpupromote kernel per block.

    import dask.array as da
    from distributed import Client

    client = Client(cluster)                         # any scheduler: distributed, threads, dask-cuda
    x = da.from_array(big_float16, chunks=2**24)     # NumPy chunks (CuPy chunks run the CUDA engine)
    y = gp.add(x, 2.5, policy="torch")               # a dask.array.Array; y.dtype is float16 already
    y.compute()                                      # each block: gp.add(block, 2.5, policy="torch")

The op functions (opfunctions.call) and gp.fuse (fuse.Fused.__call__) send a call here when an
operand is a dask collection; it judges that by the operand type's module name, so importing gpupromote never
imports dask. The graph is built with dask's own machinery: ``da.blockwise`` over the operands
aligned as ``da.elemwise`` aligns them (trailing axes matched, size-1 axes broadcast, chunks
unified with ``unify_chunks``; NumPy / CuPy arrays among the operands become one-chunk dask arrays
and are rechunked to match), and NumPy's or CuPy's ``meta`` for the result.

What is decided when the graph is built, on the client:

* the policy: ``policy=``, else the gp.fuse function's own, else the policy current in the building
  thread (``gp.use_policy`` / ``gp.set_policy``). Every task receives the policy *name* as an
  argument, so a worker never reads a policy of its own: a graph built under "torch" computes
  under "torch" on any worker;
* the result dtype and ``_meta``: the plan of the blocks' specs (each dask operand's dtype and
  rank, and whether its chunks are CuPy arrays), exactly what gp.result_type answers for them;
* every check the eager call makes before a launch that does not read data: a promotion the policy
  refuses (PromotionError), a Python scalar out of range (OverflowError), shapes that do not
  broadcast, a dtype the CPU engine has no storage for. These raise here, with the eager message.

What happens when the graph runs: each block is one eager call - ``gp.<op>(*blocks,
policy=name)``, or the gp.fuse function on the blocks, one fused kernel per block - so the values
are the eager ones bit for bit (an elementwise op does not care where a block starts). The
data-dependent checks (an integer division by zero under a raising policy, NumPy's negative integer
power) raise in the task that meets the data, with the eager exception class, and dask re-raises
it on the client. NumPy-policy *warnings* (integer division by zero) are issued on the worker.

Kernels on the workers: the CPU engine compiles each kernel once per process (its memory cache)
and Numba writes it to the package's disk cache (``cpu_numba.KERNEL_DIR``, under
``$GPUPROMOTE_CACHE_DIR``), which every worker of the machine shares: a worker started after the
cache is warm loads the compiled code instead of compiling (``kernel_cache_stats`` counts both).
"""
from __future__ import annotations

import uuid
import weakref
from collections import OrderedDict

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from ..core import dtypes as D
from ..dispatch.api import CURRENT_POLICY, describe, plan_for, spec
from ..dispatch.array import Array
from ..dispatch.eager import call as eager_call, check_cpu_dtypes
from ..dispatch import sanitize as _sanitize
from ..dispatch.fuse_stages import StagedFunction, run_staged
from ..dispatch.operands import broadcast_shapes, shape_error
from ..core.ops import ALIASES, op_named
from ..promotion.policies import get_policy

__all__ = ["call", "call_fused", "kernel_cache_stats", "graph_policy", "refuse_out", "is_cupy"]

_PY_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------------------------------------
# Operands

def is_cupy(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


def _not_supported(x):
    return TypeError(f"gpupromote on dask: {type(x).__module__}.{type(x).__name__} is not a dask.array.Array; "
                     f"pass dask arrays (da.from_array(...), da.asarray(...)) mixed with NumPy / CuPy arrays "
                     f"and Python scalars")


def _block_spec(x):
    """What promotion sees of ``x``'s blocks: a gp.spec of a dask array's dtype, rank and device
    (from its meta), or the operand itself (NumPy / CuPy arrays, Python scalars, NumPy scalars),
    which describes its blocks exactly: an elementwise op's blocks keep their operands' ranks."""
    if isinstance(x, da.Array):
        device = "cuda" if is_cupy(x._meta) else "cpu"
        return spec(D.dtype(x.dtype), ndim=x.ndim, device=device)
    if type(x).__module__.split(".")[0] == "dask":
        raise _not_supported(x)
    describe(x)   # anything else the eager call would refuse is refused here, with its message
    return x


def _block_operand(x):
    """The blockwise argument for ``x`` and its index (None: passed whole to every block, as
    elemwise passes scalars): dask arrays and arrays with dimensions are split into blocks; Python
    scalars, NumPy scalars and 0-d arrays go to each block as they are (a 0-d NumPy array stays a
    0-d array, which the policies treat apart from a Python scalar)."""
    if isinstance(x, da.Array):
        return x, tuple(range(x.ndim))[::-1]
    storage = x.storage if isinstance(x, Array) else None
    if storage is not None:   # gp.Array: its storage, when that holds the logical dtype
        if D.dtype(storage.dtype) is not x.dtype:
            raise TypeError(f"gpupromote on dask: a gp.Array of {x.dtype.name} stored as {storage.dtype} cannot be "
                            f"split into dask blocks; pass its data as a dask array of a dtype that holds it")
        x = storage
    if type(x) in _PY_SCALARS or getattr(x, "ndim", 0) == 0:
        return x, None
    return x, tuple(range(x.ndim))[::-1]


def graph_policy(policy, default=None) -> str:
    name = policy or default or CURRENT_POLICY.get()
    get_policy(name)   # an unknown name raises now, on the client, not in every task
    return name


def _layout(label, operands):
    """(blockwise argument pairs, output rank) for ``operands``, after checking that they
    broadcast (unknown dimensions, NaN in dask, are left to dask)."""
    pairs, shapes = [], []
    for x in operands:
        arg, index = _block_operand(x)
        pairs += [arg, index]
        if index is not None:
            shapes.append(tuple(arg.shape))
    if all(n == n for s in shapes for n in s):   # no NaN dimension
        try:
            broadcast_shapes(*shapes)
        except ValueError:
            raise shape_error(label, shapes) from None
    return pairs, max((len(s) for s in shapes), default=0)


def _meta(result: D.DType, ndim: int, operands, device: bool):
    """An empty block of the result: a CuPy array (in the CUDA engine's storage dtype) when any
    operand's blocks live on a GPU, else a NumPy array (ml_dtypes for bfloat16 and float8)."""
    if not device:
        return np.empty((0,) * ndim, result.numpy)
    from ..engines.cuda.engine import storage_dtype
    blocks = (x._meta if isinstance(x, da.Array) else _block_operand(x)[0] for x in operands)
    template = next((b for b in blocks if is_cupy(b)), None)
    if template is None:   # a device operand that is not a CuPy array (a torch tensor, say): a CuPy meta all the same
        import cupy
        template = cupy.empty(())
    return meta_from_array(template, ndim=ndim, dtype=storage_dtype(result))


def refuse_out(label, out):
    if out is not None:
        raise TypeError(f"{label}: out= is not supported with dask arrays (a dask array is an immutable graph); "
                        f"use the returned array, or store it with da.store(result, target)")


# ---------------------------------------------------------------------------------------------
# gp.<op>

def _run_op(*blocks, op, policy, form, sanitize=None):
    """One block of a gp op: the eager call under the policy the graph was built with, in the form it
    was written (and gp.sanitize's action, when the graph was built inside it: a worker thread has
    its own context)."""
    if sanitize is None:
        return eager_call(op, blocks, policy, form=form)
    with _sanitize.sanitize(sanitize):
        return eager_call(op, blocks, policy, form=form)


def call(op: str, args, policy=None, out=None, form="function"):
    """``gp.<op>(*args, policy=policy)`` (``form``: or an operator) with a dask array among ``args``:
    a lazy dask array (see the module). Refusals that do not depend on the data raise now."""
    op = op_named(ALIASES.get(op, op)).name
    refuse_out(op, out)
    name = graph_policy(policy)
    specs = [_block_spec(x) for x in args]
    plan = plan_for(op, specs, name, form)
    device = any(not describe(s).host for s in specs if type(s) not in _PY_SCALARS)
    if not device:
        check_cpu_dtypes(plan)
    pairs, ndim = _layout(op, args)
    meta = _meta(plan.result, ndim, args, device)
    return da.blockwise(_run_op, tuple(range(ndim))[::-1], *pairs, dtype=meta.dtype, meta=meta,
                        token=f"gp-{op}", op=op, policy=name, form=form, sanitize=_sanitize.current())


# ---------------------------------------------------------------------------------------------
# gp.fuse functions

# Each gp.fuse function gets a key when it first meets dask; a worker keeps one Fused per key, so
# that its traces (and their kernels) are made once per process, not once per deserialized task.
_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ON_THIS_PROCESS: OrderedDict = OrderedDict()
_MAX_ON_THIS_PROCESS = 256


def _fused_on_this_process(key, fused_type, fn, fused_policy):
    fused = _ON_THIS_PROCESS.get(key)
    if fused is None:
        fused = _ON_THIS_PROCESS[key] = fused_type(fn, fused_policy)
        if len(_ON_THIS_PROCESS) > _MAX_ON_THIS_PROCESS:
            _ON_THIS_PROCESS.popitem(last=False)
    return fused


def _fused_task(key, fused_type, fn, fused_policy, policy, sanitize=None):
    return _FusedBlocks(_fused_on_this_process(key, fused_type, fn, fused_policy), key, policy, sanitize)


class _FusedBlocks:
    """The task function of a gp.fuse function over dask blocks: the fused function under the
    policy fixed at graph construction. Pickled as its key, the fused class, the user's function and the policies."""

    def __init__(self, fused, key, policy, sanitize=None):
        self.fused, self.key, self.policy, self.sanitize = fused, key, policy, sanitize

    def __call__(self, *blocks):
        if self.sanitize is None:
            return self.fused(*blocks, policy=self.policy)
        with _sanitize.sanitize(self.sanitize):
            return self.fused(*blocks, policy=self.policy)

    def __reduce__(self):
        # the class travels by reference (gpupromote.dispatch.fuse.Fused), so this module never imports fuse,
        # which imports it
        return _fused_task, (self.key, type(self.fused), self.fused.fn, self.fused.policy, self.policy, self.sanitize)

    def __dask_tokenize__(self):
        return ("gpupromote.dispatch.fuse", self.key, self.policy, self.sanitize)


def call_fused(fused, args, out=None, policy=None):
    """A gp.fuse function called with a dask array among ``args``: one fused kernel per block."""
    label = getattr(fused.fn, "__name__", "fn")
    refuse_out(f"gp.fuse({label})", out)
    name = graph_policy(policy, fused.policy)
    specs = [_block_spec(x) for x in args]
    try:
        trace = fused._trace_for(name, specs)   # every step resolved now: a refused promotion raises here
    except StagedFunction:
        # a reduction inside: the function's stages (dispatch/fuse_stages.py) on the dask arrays, each a
        # graph - a fused chain per block, a tree reduction (integrations/dask_reduce.py) - built now
        return run_staged(fused, name, list(args), None)
    if trace.result_dtype is None:
        # The result is not computed by gp ops (an argument as it came, a constant): what the eager
        # call returns is the function's own result, and with dask operands that is a dask graph.
        from ..dispatch.api import use_policy
        with use_policy(name):
            return fused.fn(*args)
    pairs, ndim = _layout(f"gp.fuse({label})", args)
    meta = _meta(trace.result_dtype, ndim, args, not trace.host)
    key = _KEYS.get(fused)
    if key is None:
        key = _KEYS[fused] = uuid.uuid4().hex
    return da.blockwise(_FusedBlocks(fused, key, name, _sanitize.current()), tuple(range(ndim))[::-1], *pairs, dtype=meta.dtype,
                        meta=meta, token=f"gp-fuse-{label.strip('<>')}")


# ---------------------------------------------------------------------------------------------
# Workers

def kernel_cache_stats() -> dict:
    """This process's CPU kernels and how Numba got their machine code: ``compiled`` (a disk-cache
    miss: compiled here) and ``loaded`` (read from the disk cache), counted per kernel entry point
    and signature; ``kernel_dir`` is the disk cache. ``client.run(gpupromote.integrations.dask.kernel_cache_stats)``
    asks every worker."""
    from ..engines.cpu import engine as cpu_numba
    return {**cpu_numba.compile_stats(), "kernel_dir": str(cpu_numba.KERNEL_DIR)}
