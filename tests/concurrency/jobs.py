"""The cold kernels the concurrency tier races for: each job is one kernel no other job uses (a
binary op on the compiled dispatcher, the same on the Python path, a unary op, a fused chain),
on inputs made once and only read. ``run(job)`` returns its result as (dtype, shape, bytes), the
form results are compared in (bit for bit).

Imported by the child processes of tests/concurrency/test_cold_kernels.py (``python -m
tests.concurrency.child``), each with a cache folder of its own, so that every kernel is cold.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import gpupromote as gp

N = 257   # not a multiple of any vector width: every kernel runs its tail too


def _inputs():
    rng = np.random.default_rng(25)
    f = rng.standard_normal(N) * 10
    i = rng.integers(-100, 100, N)
    m = (rng.standard_normal(N - 5)).reshape(12, 21)
    return {
        "i8": i.astype(np.int8), "i16": i.astype(np.int16), "i32": i.astype(np.int32), "i64": i.astype(np.int64),
        "u8": np.abs(i).astype(np.uint8), "u16": np.abs(i).astype(np.uint16), "u32": np.abs(i).astype(np.uint32),
        "f16": f.astype(np.float16), "bf16": f.astype(ml_dtypes.bfloat16), "f32": f.astype(np.float32),
        "f64": f, "pos32": np.abs(f).astype(np.float32) + 1, "cond": i > 0,
        "m32": m.astype(np.float32), "row32": m[0].astype(np.float32), "m64": m,
        "nz32": np.where(i == 0, 7, i).astype(np.int32),
    }


X = _inputs()


def _fused():
    return {
        "fuse a*b+c": gp.fuse(lambda a, b, c: a * b + c),
        "fuse sqrt(a*a+b*b)": gp.fuse(lambda a, b: gp.sqrt(a * a + b * b)),
        "fuse exp(-a)+1": gp.fuse(lambda a: gp.exp(-a) + 1),
    }


F = _fused()

# label -> a call; every label compiles a kernel of its own
JOBS = {
    "add i8 u16 (compiled)": lambda: gp.add(X["i8"], X["u16"]),
    "subtract f16 i32 (compiled)": lambda: gp.subtract(X["f16"], X["i32"]),
    "multiply bf16 f32 (compiled)": lambda: gp.multiply(X["bf16"], X["f32"]),
    "true_divide i16 u8 (compiled)": lambda: gp.true_divide(X["i16"], X["u8"]),
    "power f32 2.5 (compiled, folded)": lambda: gp.power(X["pos32"], 2.5),
    "less f16 i64 (compiled)": lambda: gp.less(X["f16"], X["i64"]),
    "bitwise_xor u8 i16 (compiled)": lambda: gp.bitwise_xor(X["u8"], X["i16"]),
    "maximum f32 f64 reversed (Python path)": lambda: gp.maximum(X["f32"][::-1], X["f64"]),
    "add u32 i8 (Python path)": lambda: gp.add.__wrapped__(X["u32"], X["i8"]),
    "floor_divide i32 torch (checks)": lambda: gp.floor_divide(X["i32"], X["nz32"], policy="torch"),
    "where cond i8 f32": lambda: gp.where(X["cond"], X["i8"], X["f32"]),
    "hypot 2-d by row (strided)": lambda: gp.hypot(X["m32"], X["row32"]),
    "arctan2 f64 i8": lambda: gp.arctan2(X["f64"], X["i8"]),
    "exp f32 (unary)": lambda: gp.exp(X["f32"]),
    "sqrt i16 (unary)": lambda: gp.sqrt(X["u16"]),
    "exp f16 (unary)": lambda: gp.exp(X["f16"]),
    "sin f64 transposed (unary, strided)": lambda: gp.sin(X["m64"].T),
    "fuse a*b+c": lambda: F["fuse a*b+c"](X["f32"], X["i16"], X["f64"]),
    "fuse sqrt(a*a+b*b)": lambda: F["fuse sqrt(a*a+b*b)"](X["f32"], X["f16"]),
    "fuse exp(-a)+1": lambda: F["fuse exp(-a)+1"](X["f64"]),
}


def run(label):
    r = np.asarray(JOBS[label]())
    return str(r.dtype), r.shape, np.ascontiguousarray(r).tobytes()
