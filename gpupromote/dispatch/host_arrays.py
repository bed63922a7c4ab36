"""A host gp.Array's call as its storage's: the same operand to promotion (api.describe), and the
storage takes the op functions' fast paths (opfunctions.call, reduce.reduce), whose result is then
wrapped as the general path wraps it (eager.wrap_result).
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core.kinds import Form
from .api import CURRENT_POLICY
from .array import Array
from .operands import SCALAR_TYPES
from ..promotion.policies import get_policy

__all__ = ["host_storages", "forms_agree", "as_host_array"]

_ndarray = np.ndarray


def forms_agree(op, policy) -> bool:
    """Whether the operator form of ``op`` takes and refuses the Python scalars its function form
    does under ``policy``: the forms differ in nothing else (promotion/resolve.py), and only
    where a policy's refusals name one of them (paddle.add(x, 1) raises, x + 1 runs)."""
    table = get_policy(policy or CURRENT_POLICY.get()).scalar_refusals.table
    return not table or ((Form.OPERATOR, op) not in table and (Form.FUNCTION, op) not in table)


def host_storages(args, scalars=True):
    """The arguments with each gp.Array on the host replaced by its numpy storage, where that is the
    same call: every Array's storage is a numpy array of its own dtype (not bit patterns), the
    others are numpy arrays, dtypes (astype's) or, where ``scalars``, Python scalars (for a call
    in the operator form, only where the forms agree: forms_agree). None otherwise, and when no
    Array is among them.

    Why: a host Array and its storage are the same operand to promotion (api.describe), and the
    storage takes the compiled dispatcher: gp.add of two float32[1024] Arrays 20.6 us -> about 1.5.
    The result is wrapped as the general path wraps it (eager.wrap_result)."""
    found = False
    out = []
    for x in args:
        t = type(x)
        if t is Array:
            s = x._storage
            if type(s) is not _ndarray or x._device != "cpu" or s.dtype != x._gp_dtype.numpy:
                return None
            found = True
            out.append(s)
        elif t is _ndarray or t is D.DType or (scalars and t in SCALAR_TYPES):
            out.append(x)
        else:
            return None
    return out if found else None


def as_host_array(result):
    """The result of a call made on the storages, as the call on the Arrays returns it: a numpy
    array wrapped as an Array (its dtype is its storage's: eager.wrap_result's case for host results)."""
    if type(result) is not _ndarray:
        return result
    # (Array's own fields set here: its __init__ asks the storage's device, known here; 0.29 -> 0.2 us)
    wrapped = _new_array(Array)
    wrapped._storage, wrapped._gp_dtype, wrapped._device = result, D.dtype(result.dtype), "cpu"
    return wrapped


_new_array = object.__new__
