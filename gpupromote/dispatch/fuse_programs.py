"""gp.fuse of a function with reductions, replayed: the first call of a key on NumPy arrays runs
the stages (fuse_stages.py) with the CPU engine recording its kernel launches, and the calls after
it replay them (engines/cpu/program.py) without running the function again. A small call (at most
fuse.STAGED_EAGER_MAX elements an array) runs eagerly the first time its key is met, is recorded the
second time and replayed from the third."""
from __future__ import annotations

import numpy as np

from ..engines.cpu import program as _cpu_program, threads as _cpu_threads
from . import sanitize as _sanitize
from .fuse_stages import run_staged
from .fuse_trace import PY_SCALARS

__all__ = ["run_recorded", "run_small", "SMALL_REPLAY_MIN_LAUNCHES"]

_MAX_PROGRAMS = 64
SMALL_REPLAY_MIN_LAUNCHES = 3


def run_small(fused, policy, args, captured, eager):
    """A small call on NumPy arrays: its recorded program where there is one; else ``eager()`` (the
    eager calls, faster than the stages on small arrays) the first time a key is met, and the
    stages, recorded, the second time (a softmax of 16 x 1024 float32, one thread: 60 us eagerly,
    39 us replayed). A program of fewer than SMALL_REPLAY_MIN_LAUNCHES launches is not replayed on
    small calls: replaying costs about 20 us of Python before its kernels, the eager calls a few
    microseconds an op (``gp.sum(x * x)`` of 1 x 1024: 11 us eagerly, 22 us replayed)."""
    key = _program_key(policy, args, captured) if _sanitize.current() is None else None
    if key is None:
        return eager()
    programs = fused.__dict__.setdefault("_programs", {})
    program = programs.get(key)
    if program:
        return program(args)
    if program is None:
        _file(programs, key, 0)   # seen once
        return eager()
    if program is False:
        return eager()
    result = _record(fused, policy, args, programs, key)
    if programs.get(key) and len(programs[key].launches) < SMALL_REPLAY_MIN_LAUNCHES:
        programs[key] = False
    return result


def run_recorded(fused, policy, args, out, captured):
    """``fused.fn(*args)`` under ``policy`` into ``out``: the recorded program of the call's key
    (_program_key) where there is one, else the stages (recording them, the first time a key is met).
    An ``out=`` of the result's own shape and dtype (a C-contiguous NumPy array sharing no memory
    with the arguments) takes the program too, which writes the result into it; any other ``out=``
    runs the stages, whose rules for it (casts, refusals) are gp.fuse's."""
    key = _program_key(policy, args, captured) if _sanitize.current() is None else None
    if key is None or (out is not None and not _separate(out, args)):
        return run_staged(fused, policy, args, out)
    programs = fused.__dict__.setdefault("_programs", {})
    program = programs.get(key)
    if program:
        if out is None:
            return program(args)
        if program.result.shape == out.shape and program.result.dtype == out.dtype \
                and program.whole_result is not None:
            return program(args, into=out)
        return run_staged(fused, policy, args, out)
    if program is False:
        return run_staged(fused, policy, args, out)
    result = _record(fused, policy, args, programs, key)
    if out is None:
        return result
    if result.shape == out.shape and result.dtype == out.dtype:
        np.copyto(out, result)   # (what the stages write into an out= of the result's dtype and shape)
        return out
    return run_staged(fused, policy, args, out)


def _separate(out, args) -> bool:
    """Whether ``out`` is a C-contiguous NumPy array sharing no memory with the array arguments."""
    return (type(out) is np.ndarray and out.flags.c_contiguous and out.flags.writeable
            and not any(isinstance(a, np.ndarray) and np.may_share_memory(a, out) for a in args))


def _record(fused, policy, args, programs, key):
    """The stages on ``args`` (no ``out=``), their launches recorded and filed under ``key``: the
    Program, or False where the recording is not kept."""
    with _cpu_program.recording() as box:
        result = run_staged(fused, policy, args, None)
    steps = box[0] if box else None
    _file(programs, key, (steps is not None and _cpu_program.build(steps, args, result)) or False)
    return result


def _file(programs, key, value):
    """programs[key] = value, the whole dict dropped first at _MAX_PROGRAMS keys."""
    if len(programs) >= _MAX_PROGRAMS:
        programs.clear()
    programs[key] = value


def _program_key(policy, args, captured):
    """What a recorded program is kept under: the policy, what ``fn`` captures (``captured``), each
    array's shape, dtype and writability, each Python scalar's type and exact value; None where a call is not
    recorded (an argument of another kind, 0-d, not C-contiguous; arguments that share memory; a
    captured array, whose contents a launch may have taken as a value). Whether threads split the
    call is part of it: one long row runs otherwise over threads, which a recording does not replay."""
    if any(t not in PY_SCALARS and not issubclass(t, np.generic) for _, t, _ in captured):
        return None
    key = [policy, captured, _cpu_threads.thread_count() > 1]
    arrays = []
    for a in args:
        if type(a) is np.ndarray and a.ndim:
            flags = a.flags
            if not flags.c_contiguous:
                return None
            key.append((a.shape, a.dtype, flags.writeable))
            arrays.append(a)
        elif type(a) in PY_SCALARS:
            key.append((type(a), repr(a)))
        else:
            return None
    if len(arrays) > 1:   # (an address costs __array_interface__'s dict: only where two may overlap)
        spans = sorted((a.__array_interface__["data"][0], a.nbytes) for a in arrays)
        if any(lo + n > next_lo for (lo, n), (next_lo, _) in zip(spans, spans[1:])):
            return None   # arguments that share memory: a launch's view of one would be a view of another
    return tuple(key)
