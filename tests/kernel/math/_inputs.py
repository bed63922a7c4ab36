"""The inputs the accuracy and engine-agreement tests share, per function and type.

Every set mixes: values random over the whole exponent range (both signs), values random over
the region where the function varies, edge values (0, subnormals, the largest finite, inf, NaN,
domain boundaries and their neighbours) and known hard cases. ``GP_MATH_SAMPLES`` (default 100000)
sets the number of random inputs per set.
"""
from __future__ import annotations

import functools
import os
import zlib

import numpy as np

SAMPLES = int(os.environ.get("GP_MATH_SAMPLES", "100000"))

UNARY = ["exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "rsqrt", "cbrt", "sin", "cos", "tan",
         "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "erf"]
BINARY = ["arctan2", "hypot", "logaddexp", "power"]

# where each function varies (the random "body" inputs are drawn here)
BODY = {
    "exp": (-750, 710), "expm1": (-40, 710), "exp2": (-1080, 1025), "log": (0, 10), "log1p": (-1, 10),
    "log2": (0, 10), "log10": (0, 10), "rsqrt": (0, 10), "cbrt": (-10, 10), "sin": (-20, 20),
    "cos": (-20, 20), "tan": (-20, 20), "arcsin": (-1, 1), "arccos": (-1, 1), "arctan": (-10, 10),
    "sinh": (-712, 712), "cosh": (-712, 712), "tanh": (-20, 20), "arcsinh": (-10, 10), "arccosh": (1, 10),
    "arctanh": (-1, 1), "sigmoid": (-750, 40), "erf": (-6.5, 6.5),
}
BODY_F32 = {"exp": (-104, 89), "expm1": (-20, 89), "exp2": (-150, 128), "sinh": (-90, 90), "cosh": (-90, 90),
            "sigmoid": (-104, 20), "erf": (-4.5, 4.5)}

HARD = {  # arguments known to be hard (close to a multiple of pi/2, ...)
    "sin": [22.0, 355.0, 103993.0, 1.0e22, 5.319372648326541e+255, 2.1125119765124554e+208, 1.5707963267948966,
            3.141592653589793, 6.283185307179586, 1e300, 8.98846567431158e307],
    "log": [1.0 - 2.0**-53, 1.0 + 2.0**-52, 0.9999999999999999, 1.0000000000000002],
    "exp": [709.782712893384, -745.1332191019411, -708.3964185322641, 7.09782712893384e+02],
}
HARD["cos"] = HARD["tan"] = HARD["sin"]
HARD["log1p"] = HARD["log2"] = HARD["log10"] = HARD["log"]


def edges(dt):
    fi = np.finfo(dt)
    vals = [0.0, -0.0, float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.max),
            -float(fi.max), np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-10, -1e-10,
            float(fi.eps), float(fi.eps) / 2, 1 - float(fi.eps) / 2, 1 + float(fi.eps)]
    return np.array(vals, dtype=dt)


@functools.lru_cache(maxsize=None)
def unary_inputs(name: str, dt_name: str, n: int = SAMPLES) -> np.ndarray:
    dt = np.dtype(dt_name).type
    rng = np.random.default_rng(zlib.crc32(f"{name} {dt_name}".encode()))
    fi = np.finfo(dt)
    emax = np.log(float(fi.max))
    emin = np.log(float(fi.smallest_subnormal))
    lo, hi = (BODY_F32.get(name) if dt is np.float32 else None) or BODY[name]
    k = n // 2
    wide = np.exp(rng.uniform(emin, emax, k)) * rng.choice([-1.0, 1.0], k)
    body = rng.uniform(lo, hi, n - k)
    hard = np.array(HARD.get(name, []), dtype=np.float64)
    e = edges(dt).astype(np.float64)
    dom = np.array([lo, hi, np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)], dtype=np.float64)
    x = np.concatenate([wide, body, hard, e, dom, -hard]).astype(dt)
    return x


@functools.lru_cache(maxsize=None)
def binary_inputs(name: str, dt_name: str, n: int = SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    dt = np.dtype(dt_name).type
    rng = np.random.default_rng(zlib.crc32(f"{name} {dt_name} 2".encode()))
    fi = np.finfo(dt)
    emax = np.log(float(fi.max))
    emin = np.log(float(fi.smallest_subnormal))
    k = n // 4
    a = np.exp(rng.uniform(emin, emax, k)) * rng.choice([-1.0, 1.0], k)
    b = np.exp(rng.uniform(emin, emax, k)) * rng.choice([-1.0, 1.0], k)
    c = rng.uniform(-30, 30, k)
    d = c * (1 + rng.uniform(-1e-3, 1e-3, k))
    e = rng.uniform(-5, 5, k)
    f = rng.uniform(-5, 5, k)
    if name == "power":
        g = np.exp(rng.uniform(-3, 3, k))
        h = rng.uniform(-200, 200, k) if dt is np.float64 else rng.uniform(-40, 40, k)
        i = rng.uniform(-10, 10, k)
        j = np.round(rng.uniform(-40, 40, k))
        x = np.concatenate([g, i, np.abs(a), e])
        y = np.concatenate([h, j, rng.uniform(-2, 2, k), f])
    else:
        x = np.concatenate([a, c, e, d])
        y = np.concatenate([b, d, f, c])
    ed = edges(dt).astype(np.float64)
    ex, ey = np.meshgrid(ed, ed)
    x = np.concatenate([x, ex.ravel()]).astype(dt)
    y = np.concatenate([y, ey.ravel()]).astype(dt)
    return x, y
