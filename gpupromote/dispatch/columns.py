"""The compiled dispatcher's column operands: a call of two arrays where one holds a value per row,
(M, K) op (M, 1) (x - x.max(axis=-1, keepdims=True)), runs in C as the plan's kernel with that
operand folded, once per row (fastpath/column.c). This module makes that kernel for an entry, the
first time such a call comes (the Entry's ``column`` maker), where it computes what the array
plan does.
"""
from __future__ import annotations

import numpy as np

from ..engines import get_backend
from .folding import FOLD_CODES, converter, fold_target

__all__ = ["column_kernel"]


def _computes(plan):
    """What a plan's kernel values depend on, its folding apart."""
    return (plan.result, plan.compute, plan.inputs, plan.promoted, plan.flush_subnormals, plan.int_division,
            plan.exact_exponent, plan.values)


def column_kernel(fast_plan, op, plan, dtypes, col):
    """(address, keep, src code, to code, converter) of the native kernel of ``op`` with operand
    ``col`` a numpy scalar of its dtype, folded, and the other an array; None where that plan is not
    ``plan`` in what it computes (a zero-dim operand can promote otherwise: PyTorch's float32 minus
    a float64 scalar tensor is float32, minus a float64 (M, 1) tensor float64), where it is not the
    fast paths' (``fast_plan``: opfunctions._fast_plan), or where its scalar has no carrier."""
    sample = [np.empty(1, d) for d in dtypes]
    sample[col] = np.zeros((), dtypes[col])[()]
    found = fast_plan(op, sample, plan.policy)
    if not isinstance(found, tuple) or found[1]:
        return None   # no fast plan, or bounds on a value: the Python path
    folded = found[0]
    if _computes(folded) != _computes(plan) or list(folded.folded) != [i == col for i in range(len(dtypes))]:
        return None
    src, to = folded.inputs[col], fold_target(folded, col)
    kernel = get_backend("cpu").native_kernel(folded)
    if kernel is None or to.name not in FOLD_CODES or src.name not in FOLD_CODES:
        return None
    return kernel.address, kernel, FOLD_CODES[src.name], FOLD_CODES[to.name], converter(src, to)
