"""gp.sum, prod, mean, var, std, max, min, any, all, argmax, argmin, cumsum, cumprod of dask arrays:
dask's own tree reduction, gpupromote kernels per block.

    x = da.from_array(big_float16, chunks=2**20)
    s = gp.sum(x, policy="torch")       # a dask.array.Array; s.dtype is float16 already
    s.compute()                         # partial sums in float32 per block, combined in float32, one cast

dispatch/reduce.reduce sends a reduction here when its operand is a dask collection (through
dispatch/operands.register_lazy, which the package root fills: importing gpupromote never imports
dask). The graph is dask's: ``da.reduction`` (chunk, combine, aggregate) for the reductions,
``da.map_blocks`` then ``da.reduction`` over (value, index) partials for argmax / argmin, and
``da.cumreduction`` for the scans.

Decided when the graph is built, on the client: the policy (``policy=``, else the current one),
the plan (dispatch/reduce.reduction_plan, the resolver's: a refused reduction raises here, with the
eager message), the axes (an axis out of range raises here), the result dtype and ``_meta``. Every
task receives the operand's dtype, rank, ``dtype=`` and the policy *name*, and resolves the same
cached plan on its worker.

Precision: a partial is kept in the dtype the eager kernel accumulates in (the Reduction's
accumulator: float32 for a float16 sum under torch), combined in it, and rounded to the result
dtype once, at the end, by the eager kernel's own finish (the cast; mean's division by the count,
carried with the partial sums; var's and std's division by N - ddof and sqrt). var / std carry
(count, mean, M2) per block (the eager kernels' two passes over the block), combined by Chan's
formula with gp ops under the graph's policy. argmax / argmin carry (value, global index); the
combine keeps the extreme value and, among equal ones, the smallest index (the eager "first").

Same bits as the eager call: max, min, any, all, argmax, argmin and integer sums and products (exact
combines). A float sum, product or mean is the same bits when the blocks follow the kernel's fixed
tree (kernel/reduce.py): one reduced axis split in blocks of 128 * 2**j elements but the last (the
kernel's leaves of 128, an aligned complete subtree each) - partials are combined 8 at a time
(``_SPLIT_EVERY``), and the kernel's 8 lanes combine 8 partials as its tree does. Other layouts
associate the additions otherwise: the same sum up to rounding. var / std round otherwise (Chan's
update), and so do float scans (each block's scan, then the carry added).
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import dask.array as da
from dask.array.reductions import cumreduction
import numpy as np
from dask.array.core import _concatenate2
from dask.core import flatten
from dask.utils import deepmap

from ..core import caches
from ..core import dtypes as D
from ..dispatch import functions as gp
from ..dispatch.reduce import REDUCTION_FUNCTIONS, default_ddof, normalize_axes, reduction_layout, \
    reduction_plan, run_reduction
from ..engines.cpu import reduce as cpu_reduce
from ..kernel.reduce import reduction_of
from .dask import is_cupy, graph_policy, refuse_out

__all__ = ["reduce"]

_SCANS = ("cumsum", "cumprod")
_ARGS = ("argmax", "argmin")
_MOMENTS = ("var", "std")
# dask's tree combines this many partials per step along one reduced axis: the kernel's 8 lanes
# add 8 values as its balanced tree does, so aligned blocks give the eager bits (module docstring)
_SPLIT_EVERY = 8


# ---------------------------------------------------------------------------------------------
# Plans: resolved on the client and again (cached) on each worker, from the policy's name

_steps: dict = {}
caches.register(_steps.clear)


def _plans(key):
    """(plan, chunk, merge, final) for ``key`` = (op, operand dtype, rank, dtype=, policy name):
    the eager plan; a block's partial (the plan, stored in the accumulator); partials merged (read
    and stored in the accumulator, not rounded through a narrow float: they are no operand's
    values); partials finished (the eager finish: cast, mean's division)."""
    steps = _steps.get(key)
    if steps is None:
        op, xdt, ndim, dtype, name = key
        plan = reduction_plan(op, D.dtype(xdt), ndim, None if dtype is None else D.dtype(dtype), name)
        if op in _MOMENTS or op in _ARGS:
            steps = (plan, None, None, None)
        else:
            red = reduction_of(plan)
            acc = plan.result if red.narrow is not None else red.acc   # a scan rounded at each step stays rounded
            partial_op = "sum" if op == "mean" else op
            chunk = replace(plan, op=partial_op, result=acc)
            merge = replace(plan, op=partial_op, inputs=(acc,), result=acc, promoted=None)
            final = replace(plan, inputs=(acc,), promoted=None)
            if op in ("max", "min"):
                # a block's max is one of its elements: kept in the operand's dtype (exact), it is merged
                # by the eager kernel itself, whose tie rule for 0.0 and -0.0 depends on that dtype
                chunk = merge = replace(plan, result=plan.inputs[0])
                final = plan
            steps = (plan, chunk, merge, final)
        _steps[key] = steps
    return steps


def _run(plan, block, axes, stage="main", divisor=None, along=None):
    """``plan``'s Reduction (``stage``) of ``block`` over ``axes``, keeping them (size 1); ``along``:
    a second operand of the result's shape (var's mean), read across each row."""
    layout = reduction_layout(block.shape, axes, True, "sum")
    arrays = [layout.rows(np.asarray(block))]
    if along is not None:
        arrays.append(np.broadcast_to(np.asarray(along).reshape(layout.M)[:, None], (layout.M, layout.K)))
    return run_reduction(plan.op, reduction_of(plan, stage), plan, arrays, layout, divisor=divisor)


def _drop(result, axes, keepdims):
    if keepdims:
        return result
    return result.reshape(tuple(n for d, n in enumerate(result.shape) if d not in axes))


def _count(block, axes) -> int:
    return math.prod(block.shape[d] for d in axes)


# ---------------------------------------------------------------------------------------------
# sum, prod, max, min, any, all: partials in the accumulator

def _tree_chunk(block, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return block
    return _run(_plans(key)[1], block, axis)


def _tree_combine(parts, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return parts
    return _run(_plans(key)[2], parts, axis)


def _tree_aggregate(parts, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return parts
    return _drop(_run(_plans(key)[3], parts, axis), axis, keepdims)


# mean: (count, sum) partials

def _mean_chunk(block, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return block
    return {"n": _count(block, axis), "s": _run(_plans(key)[1], block, axis)}


def _leaves(nested):
    """The partials of a combine step in the blocks' order (one partial comes alone, not in a list)."""
    return [nested] if isinstance(nested, dict) else list(flatten(nested))


def _mean_merge(pairs, axis):
    n = sum(p["n"] for p in _leaves(pairs))
    return n, _concatenate2(deepmap(lambda p: p["s"], pairs), axes=axis)


def _mean_combine(pairs, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return pairs
    n, sums = _mean_merge(pairs, axis)
    return {"n": n, "s": _run(_plans(key)[2], sums, axis)}


def _mean_aggregate(pairs, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return pairs
    n, sums = _mean_merge(pairs, axis)
    return _drop(_run(_plans(key)[3], sums, axis, divisor=n), axis, keepdims)


# var, std: (count, mean, M2) partials, Chan's update

def _moment_chunk(block, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return block
    plan = _plans(key)[0]
    mean = _run(plan, block, axis, "mean")
    return {"n": _count(block, axis), "mean": mean, "m2": _run(plan, block, axis, "m2", along=mean)}


def _as(value, like):
    return np.asarray(value, dtype=like.dtype)   # a 0-d array of the partial's dtype: no policy promotes it


def _squared_magnitude(delta, policy):
    if delta.dtype.kind == "c":
        re, im = gp.real(delta, policy=policy), gp.imag(delta, policy=policy)
        return gp.add(gp.multiply(re, re, policy=policy), gp.multiply(im, im, policy=policy), policy=policy)
    return gp.multiply(delta, delta, policy=policy)


def _moment_merge(triples, key):
    """Chan, Golub and LeVeque's update, pair by pair in the blocks' order, with gp ops under the
    graph's policy: n = na + nb, mean = ma + d * nb / n, M2 = M2a + M2b + |d|**2 * na * nb / n."""
    policy = key[4]
    leaves = _leaves(triples)
    n, mean, m2 = leaves[0]["n"], leaves[0]["mean"], leaves[0]["m2"]
    for other in leaves[1:]:
        nb = other["n"]
        total = n + nb
        if nb:
            delta = gp.subtract(other["mean"], mean, policy=policy)
            mean = gp.add(mean, gp.multiply(delta, _as(nb / total, mean), policy=policy), policy=policy)
            spread = gp.multiply(_squared_magnitude(delta, policy), _as(n * nb / total, m2), policy=policy)
            m2 = gp.add(gp.add(m2, other["m2"], policy=policy), spread, policy=policy)
        n = total
    return {"n": n, "mean": mean, "m2": m2}


def _moment_combine(triples, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return triples
    return _moment_merge(triples, key)


def _moment_aggregate(triples, axis, keepdims, key, ddof, computing_meta=False):
    if computing_meta:
        return triples
    merged = _moment_merge(triples, key)
    # the eager main stage's finish alone: M2 / (N - ddof), sqrt for std, the cast to the result
    return _drop(_run(_plans(key)[0], merged["m2"], axis, "m2_finish", divisor=max(merged["n"] - ddof, 0)),
                 axis, keepdims)


# argmax, argmin: (value, global index) partials

def _arg_fields(dtype):
    return np.dtype([("vals", dtype), ("arg", np.int64)])


def _arg_chunk(block, key, whole, block_info=None):
    """A block's extreme and its index in the whole array (flat for axis=None)."""
    op, policy, axis = key[0], key[4], key[5]
    info = block_info[0]
    starts = [lo for lo, _ in info["array-location"]]
    fn = REDUCTION_FUNCTIONS[op]
    out = np.empty((1,) * block.ndim if whole else tuple(1 if d == axis else n for d, n in enumerate(block.shape)),
                   _arg_fields(block.dtype))
    if whole:
        local = np.unravel_index(int(fn(block, policy=policy)), block.shape)
        out["vals"] = block[local]
        out["arg"] = np.ravel_multi_index(tuple(s + i for s, i in zip(starts, local)), info["shape"])
    else:
        local = np.asarray(fn(block, axis=axis, keepdims=True, policy=policy)).astype(np.int64)
        out["vals"] = np.take_along_axis(block, local, axis)
        out["arg"] = local + starts[axis]
    return out


def _arg_pick(parts, axis, key):
    """Per row of ``parts`` over ``axis``: the extreme value (gp.argmax / argmin of the values,
    under the policy: its NaN and tie rules) and the smallest index holding it."""
    op, policy = key[0], key[4]
    shape = tuple(1 if d in axis else n for d, n in enumerate(parts.shape))
    if len(axis) > 1:   # axis=None over several dimensions: the partials in one row
        parts = parts.reshape(-1)
        along = 0
    else:
        (along,) = axis
    vals, args = parts["vals"], parts["arg"]
    pick = np.asarray(REDUCTION_FUNCTIONS[op](vals, axis=along, keepdims=True, policy=policy)).astype(np.int64)
    best = np.take_along_axis(vals, pick, along)
    tied = (vals == best) | ((vals != vals) & (best != best))   # NaN ties NaN: the first NaN
    out = np.empty(shape, parts.dtype)
    out["vals"] = best.reshape(shape)
    out["arg"] = np.where(tied, args, np.iinfo(np.int64).max).min(axis=along, keepdims=True).reshape(shape)
    return out


def _arg_identity(block, axis, keepdims, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type, which it casts to the result's
        return np.empty((0,) * block.ndim, np.int64)
    return block


def _arg_combine(parts, axis, keepdims, key, computing_meta=False):
    if computing_meta:   # dask's look at the partials' type: no kernel runs
        return parts
    return _arg_pick(parts, axis, key)


def _arg_aggregate(parts, axis, keepdims, key, result, computing_meta=False):
    if computing_meta:
        return parts
    return _drop(_arg_pick(parts, axis, key)["arg"].astype(result), axis, keepdims)


# ---------------------------------------------------------------------------------------------
# cumsum, cumprod: each block's scan in the accumulator, the carry added with a gp op

class _ScanBlocks:
    """The task function of a block's scan (a class: dask names the layer by ``__name__``)."""

    def __init__(self, key):
        self.key, self.__name__ = key, f"gp-{key[0]}"

    def __call__(self, block, axis):
        chunk = _plans(self.key)[1]
        moved = np.moveaxis(np.asarray(block), axis, -1)
        K = moved.shape[-1]
        M = math.prod(moved.shape[:-1])
        result = np.empty(moved.shape, chunk.result.numpy)
        if result.size:
            cpu_reduce.run(reduction_of(chunk), [moved.reshape(M, K)], result.reshape(M, K), K)
        return np.moveaxis(result, -1, axis)

    def __dask_tokenize__(self):
        return ("gpupromote.dask_reduce.scan", self.key)


def _carry(total, block, key):
    fn = gp.add if key[0] == "cumsum" else gp.multiply
    return fn(total, block, policy=key[4])


def _cast(block, dtype):
    # Note: the accumulator's values to the result dtype by NumPy's cast (round to nearest even, as
    # the eager kernel's final cast of a float; integers and bools keep their values)
    return block.astype(dtype, copy=False)


def _scan(op, x, axis, key, plan):
    if axis is not None:
        normalize_axes(axis, x.ndim, op)
    (_, chunk, _, _) = _plans(key)
    acc = chunk.result.numpy
    ident = 0 if op == "cumsum" else 1
    scanned = cumreduction(_ScanBlocks(key), partial(_carry, key=key), ident, x, axis=axis, dtype=acc)
    if acc == plan.result.numpy:
        return scanned
    return scanned.map_blocks(_cast, plan.result.numpy, dtype=plan.result.numpy,
                              meta=np.empty((0,) * scanned.ndim, plan.result.numpy))


# ---------------------------------------------------------------------------------------------
# The entry point

def reduce(op, x, axis=None, keepdims=False, dtype=None, ddof=None, out=None, policy=None):
    """``gp.<op>(x, ...)`` with ``x`` a dask array: a lazy dask array (see the module). What does
    not read data raises now: the policy's refusal, an axis out of range, out=."""
    refuse_out(f"gp.{op}", out)
    if not isinstance(x, da.Array):
        raise TypeError(f"gp.{op}: {type(x).__module__}.{type(x).__name__} is not a dask.array.Array; reduce "
                        f"a dask array (da.from_array(...), da.asarray(...))")
    if is_cupy(x._meta):
        raise TypeError(f"gp.{op}: reductions of dask arrays with CuPy blocks are not supported yet; reduce "
                        f"x.map_blocks(cupy.asnumpy), or compute the CuPy array and call gp.{op} on it")
    name = graph_policy(policy)
    if x.ndim == 0:   # one element: reduced as the eager call reduces it, its (1, 1) view
        normalize_axes(axis, 0, op)
        x, axis = x.reshape(1), None
    xdt = D.dtype(x.dtype)
    plan = reduction_plan(op, xdt, x.ndim, dtype, name)   # the resolver's: a refused reduction raises here
    for d in (xdt, plan.result):
        if d.numpy is None:
            raise TypeError(f"gp.{op}: {d.name} has no numpy storage, so it has no CPU kernel")
    key = (op, xdt.name, x.ndim, None if dtype is None else D.dtype(dtype).name, name)
    result = plan.result.numpy
    if op in _SCANS:
        return _scan(op, x, axis, key, plan)
    axes = reduction_layout(tuple(0 if n != n else n for n in x.shape), axis, keepdims, op).axes
    meta = np.empty((0,) * (x.ndim if keepdims else x.ndim - len(axes)), result)
    common = dict(axis=axes, keepdims=keepdims, dtype=result, meta=meta, split_every=_SPLIT_EVERY,
                  name=f"gp-{op}")
    if op in _ARGS:
        whole = axis is None and x.ndim != 1
        arg_key = key + (None if whole else axes[0],)
        fields = _arg_fields(x.dtype)
        partials = x.map_blocks(_arg_chunk, arg_key, whole, dtype=fields, meta=np.empty((0,) * x.ndim, fields),
                                chunks=tuple((1,) * len(c) if d in axes else c for d, c in enumerate(x.chunks)))
        return da.reduction(partials, _arg_identity, partial(_arg_aggregate, key=arg_key, result=result),
                            combine=partial(_arg_combine, key=arg_key), **common)
    if op == "mean":
        return da.reduction(x, partial(_mean_chunk, key=key), partial(_mean_aggregate, key=key),
                            combine=partial(_mean_combine, key=key), concatenate=False, **common)
    if op in _MOMENTS:
        d = default_ddof(name) if ddof is None else ddof
        return da.reduction(x, partial(_moment_chunk, key=key), partial(_moment_aggregate, key=key, ddof=d),
                            combine=partial(_moment_combine, key=key), concatenate=False, **common)
    return da.reduction(x, partial(_tree_chunk, key=key), partial(_tree_aggregate, key=key),
                        combine=partial(_tree_combine, key=key), **common)
