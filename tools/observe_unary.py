#!/usr/bin/env python3
"""Observe the real frameworks on one-input ops, clip and whole-array reductions.

Writes records in exactly the format of ../shared/oracle/data/*.unary.jsonl.gz and
unary-values.jsonl.gz (see the shared README, "Unary ops, clip and reductions"). Run it with a
Python that has the frameworks (versions in tests/observed/README.md):

    python tools/observe_unary.py numpy-default torch-f32 ...   # <stem>.unary.jsonl.gz + .meta.json
    python tools/observe_unary.py --all                         # every configuration, one at a time
    python tools/observe_unary.py --extra --all                 # argmax/argmin/cumprod only, in
                                                                #   <stem>.unary-extra.jsonl.gz
    python tools/observe_unary.py --values                      # unary-values.jsonl.gz (NumPy,
                                                                #   torch f32, JAX x32 and x64)
    python tools/observe_unary.py --values --extra              # unary-values-extra.jsonl.gz
    python tools/observe_unary.py --out DIR --dev ...           # only the shared dev-subset ops
    python tools/derive_tf_none.py tests/observed/tensorflow-safe.unary.jsonl.gz \\
                                   tests/observed/tensorflow-none.unary.jsonl.gz

The framework set-up (dtypes, operand creation, result names, JAX weak types, TensorFlow log
capture) is tools/observe_frameworks.py's; so is the worker scheme: each configuration runs in a
child worker process (`--worker MODE STEM START FD`) that writes a header line, then one JSON
record per case to a pipe; the parent reads with a per-case timeout and, on a hang or a crash,
kills the worker, records the case as "Unexpected termination: ..." and restarts from the next case.

Function names come from the shared `<stem>.unary.meta.json` (`functions`); argmax, argmin and
cumprod, which the shared records do not cover, use EXTRA_FUNCTIONS below and go to separate
`*-extra` files so that the `.unary` files hold exactly the shared op set.
"""
import gzip
import json
import os
import platform
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import observe_frameworks as ofw  # noqa: E402

REPO = ofw.REPO
OBSERVED = os.path.join(REPO, "tests", "observed")

UNARY_OPS = ["abs", "negative", "positive", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2",
             "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
             "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "erf", "floor", "ceil", "trunc",
             "round", "rint", "sign", "square", "reciprocal", "cbrt", "isnan", "isinf", "isfinite",
             "signbit", "logical_not", "conj", "real", "imag", "angle", "invert"]
REDUCTIONS = ["sum", "prod", "mean", "max", "min", "any", "all", "var", "std", "cumsum"]
EXTRA_REDUCTIONS = ["argmax", "argmin", "cumprod"]
DEV_OPS = {"sqrt", "exp", "tanh", "floor", "isnan", "sign", "clip", "sum", "mean", "max"}

UNARY_OPERATORS = {"negative": "-x", "positive": "+x", "abs": "abs(x)", "invert": "~x"}
OPFUNCS1 = {"-x": lambda x: -x, "+x": lambda x: +x, "abs(x)": lambda x: abs(x), "~x": lambda x: ~x}

# (lo, hi): ("s", python value) or ("z", dtype of a 0-d array holding 2)
CLIP_BOUNDS = [(("s", 0), ("s", 1)), (("s", 0), ("s", 300)), (("s", -1), ("s", 1.5)),
               (("s", 0.5), ("s", 2.5)), (("s", None), ("s", 1.5)),
               (("z", "int64"), ("z", "int64")), (("z", "float32"), ("z", "float32")),
               (("z", "float64"), ("z", "float64"))]

# Functions for the ops the shared metadata does not list (the framework's canonical one).
EXTRA_FUNCTIONS = {
    "numpy": {"func": {"argmax": "np.argmax", "argmin": "np.argmin", "cumprod": "np.cumprod"}},
    "torch": {"func": {"argmax": "torch.argmax", "argmin": "torch.argmin",
                       "cumprod": "torch.cumprod(x, dim=0)"}},
    "jax": {"func": {"argmax": "jnp.argmax", "argmin": "jnp.argmin", "cumprod": "jnp.cumprod"}},
    "array_api_strict": {"func": {"argmax": "xp.argmax", "argmin": "xp.argmin",
                                  "cumprod": "xp.cumulative_prod"}},
    "paddle": {"func": {"argmax": "paddle.argmax", "argmin": "paddle.argmin", "cumprod": "paddle.cumprod"}},
    "tensorflow": {"func": {"argmax": "tf.experimental.numpy.argmax", "argmin": "tf.experimental.numpy.argmin",
                            "cumprod": "tf.experimental.numpy.cumprod"},
                   "tfmath": {"argmax": "tf.math.argmax", "argmin": "tf.math.argmin", "cumprod": "tf.math.cumprod"}},
}

VALUE_STEMS = ["numpy-default", "torch-f32", "jax-x32", "jax-x64"]
VALUE_DTYPES = [d for d in ofw.DTYPES if d != "complex32"]
ML_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
# JAX lists the dtypes of a TypePromotionError in set order, which follows the worker's string
# hash seed: a fixed seed makes the error texts reproducible from run to run.
HASH_SEED = "0"


# --------------------------------------------------------------------------- names, functions
def load_unary_functions(stem):
    """The shared `functions` of <stem>.unary.meta.json (or this repo's copy where shared is absent)."""
    for d in (ofw.SHARED_META, OBSERVED):
        p = os.path.join(d, stem + ".unary.meta.json")
        if os.path.exists(p):
            with open(p) as fh:
                return json.load(fh)["functions"]
    raise FileNotFoundError(f"no {stem}.unary.meta.json in {ofw.SHARED_META} or {OBSERVED}")


def extend_modules(fw):
    """Module roots the unary function names start with, beyond observe_frameworks' ones."""
    if fw.name == "numpy":
        import scipy
        import scipy.special  # noqa: F401
        fw.modules.setdefault("scipy", scipy)
        fw.extra_meta = {**fw.extra_meta, "scipy_version": scipy.__version__}
    elif fw.name == "jax":
        import jax
        import jax.nn  # noqa: F401
        import jax.scipy.special  # noqa: F401
        fw.modules.setdefault("jax", jax)


def make_caller(fw, fname):
    """A callable for a function name; 'torch.cumsum(x, dim=0)' passes the keyword arguments."""
    if "(" in fname:
        base, _, rest = fname.partition("(")
        f = fw.resolve(base)
        kwargs = {}
        for part in rest.rstrip(")").split(","):
            part = part.strip()
            if "=" in part:
                k, v = part.split("=", 1)
                kwargs[k.strip()] = json.loads(v.strip())
        return lambda *args: f(*args, **kwargs)
    return fw.resolve(fname)


def bound_desc(b):
    kind, v = b
    if kind == "s":
        if v is None:
            return {"kind": "s", "dtype": "pynone", "value": "None"}
        return {"kind": "s", "dtype": ofw.pytype(v), "value": repr(v)}
    return {"kind": "z", "dtype": v}


def warning_of(fw, wl):
    logs = fw.log_capture_end()
    msgs = logs + [f"{w.category.__name__}: {str(w.message).splitlines()[0][:200] if str(w.message) else ''}"
                   for w in wl]
    return msgs[0] if msgs else None


# --------------------------------------------------------------------------- dtype records
class DtypeRun:
    """Result dtype (or error) of every op on the t/z operands of every dtype, for one config."""

    def __init__(self, stem, dev, extra):
        t0 = time.time()
        self.fwname, self.config, apis, _ = ofw.CONFIGS[stem]
        self.apis = list(apis)
        fw = self.fw = ofw.FWS[self.fwname](self.config)
        extend_modules(fw)
        shared = load_unary_functions(stem)
        ops = EXTRA_REDUCTIONS if extra else UNARY_OPS + ["clip"] + REDUCTIONS
        if dev:
            ops = [o for o in ops if o in DEV_OPS]
        self.ops = ops
        functions, ops_skipped, self.callers = {}, {}, {}
        extra_fns = EXTRA_FUNCTIONS.get(self.fwname, {})
        for api in self.apis:
            if api == "operator":
                functions[api] = {op: UNARY_OPERATORS[op] for op in UNARY_OPERATORS if op in ops}
                continue
            functions[api], ops_skipped[api] = {}, []
            for op in ops:
                fname = (extra_fns if extra else shared).get(api, {}).get(op)
                if fname is None:
                    ops_skipped[api].append(op)
                    continue
                try:
                    self.callers[fname] = make_caller(fw, fname)
                    functions[api][op] = fname
                except Exception:  # noqa: BLE001
                    ops_skipped[api].append(op)
        self.functions, self.ops_skipped = functions, ops_skipped
        # operands
        dtypes_used, dtypes_skipped, failures, changes, arrays = [], {}, {}, {}, {}
        for name in ofw.DTYPES:
            ok = True
            for kind in ("t", "z"):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        x = fw.make(kind, name)
                    arrays[(kind, name)] = x
                    got = fw.result_name(x)
                    if got != name:
                        changes[f"{kind}:{name}"] = got
                except Exception as e:  # noqa: BLE001
                    failures[f"{kind}:{name}"] = ofw.err_str(e)
                    ok = False
            if ok:
                dtypes_used.append(name)
            else:
                dtypes_skipped[name] = failures.get(f"t:{name}") or failures.get(f"z:{name}")
        self.arrays, self.changes = arrays, changes
        self.clip_bounds, self.clip_bounds_skipped = [], {}
        for lo, hi in CLIP_BOUNDS:
            if any(b[0] == "z" and b[1] not in dtypes_used for b in (lo, hi)):
                self.clip_bounds_skipped[f"{lo[1]}/{hi[1]}"] = "no 0-d array of that dtype"
                continue
            self.clip_bounds.append((lo, hi))
        if self.fwname == "tensorflow" and "clip" in ops:
            self.clip_bounds_skipped["tensorflow/tfmath"] = "tf.clip_by_value takes no None bound"
        self.cases = []
        for op in ops:
            family = "clip" if op == "clip" else ("unary" if op in UNARY_OPS else "reduction")
            for api in self.apis:
                fname = functions.get(api, {}).get(op)
                if fname is None:
                    continue
                if family == "clip":
                    for d in dtypes_used:
                        for lo, hi in self.clip_bounds:
                            if api == "tfmath" and (lo[1] is None or hi[1] is None):
                                continue
                            self.cases.append((op, api, family, fname, ("t", d), lo, hi))
                else:
                    for kind in ("t", "z"):
                        for d in dtypes_used:
                            self.cases.append((op, api, family, fname, (kind, d), None, None))
        self.header = {"dtypes_used": dtypes_used, "dtypes_skipped": dtypes_skipped,
                       "operand_creation_failures": failures, "input_dtype_changes": changes,
                       "ops_skipped": ops_skipped, "functions": functions,
                       "clip_bounds": [[bound_desc(lo), bound_desc(hi)] for lo, hi in self.clip_bounds],
                       "clip_bounds_skipped": self.clip_bounds_skipped,
                       "versions": fw.versions(), "extra_meta": fw.extra_meta,
                       "setup_seconds": round(time.time() - t0, 1)}

    def skeleton(self, i):
        op, api, family, fname, a, lo, hi = self.cases[i]
        rec = {"fw": self.fwname, "config": self.config, "op": op, "api": api, "family": family,
               "a": {"kind": a[0], "dtype": a[1]}}
        if family == "clip":
            rec["lo"], rec["hi"] = bound_desc(lo), bound_desc(hi)
        return rec

    def operand(self, b):
        return b[1] if b[0] == "s" else self.arrays[b]

    def execute(self, i):
        op, api, family, fname, a, lo, hi = self.cases[i]
        rec = self.skeleton(i)
        fw = self.fw
        x = self.arrays[a]
        fw.log_capture_begin()
        weak = False
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always")
            try:
                if api == "operator":
                    r = OPFUNCS1[fname](x)
                elif family == "clip":
                    r = self.callers[fname](x, self.operand(lo), self.operand(hi))
                else:
                    r = self.callers[fname](x)
                rec["result"] = fw.result_name(r)
                rec["error"] = None
                weak = fw.weak(r)
            except Exception as e:  # noqa: BLE001
                rec["result"] = None
                rec["error"] = ofw.err_str(e)
                r = None
        warning = warning_of(fw, wl)
        in_dt = {}
        for slot, o in (("a", a), ("lo", lo), ("hi", hi)):
            if o is not None and o[0] != "s" and f"{o[0]}:{o[1]}" in self.changes:
                in_dt[slot] = self.changes[f"{o[0]}:{o[1]}"]
        if in_dt:
            rec["in_dtypes"] = in_dt
        if weak:
            rec["weak_type"] = True
        if warning:
            rec["warning"] = warning
        del r
        return rec


# --------------------------------------------------------------------------- value records
def _finfo(name):
    import ml_dtypes
    import numpy as np
    dt = getattr(ml_dtypes, name) if name in ML_FLOATS else np.dtype(name)
    return ml_dtypes.finfo(dt) if name in ML_FLOATS else np.finfo(dt)


def _iinfo(name):
    import numpy as np
    return np.iinfo(np.dtype(name))


def kind_of(name):
    if name == "bool":
        return "b"
    if name.startswith("uint"):
        return "u"
    if name.startswith("int"):
        return "i"
    if name.startswith("complex"):
        return "c"
    return "f"


def edge_values(name):
    k = kind_of(name)
    if k == "b":
        return [False, True]
    if k == "u":
        m = int(_iinfo(name).max)
        return [0, 1, 2, 3, 10, 100, m - 1, m]
    if k == "i":
        ii = _iinfo(name)
        lo, hi = int(ii.min), int(ii.max)
        return [0, 1, -1, 2, -2, 3, 10, -100, lo, lo + 1, hi - 1, hi]
    if k == "c":
        inf, nan = float("inf"), float("nan")
        return [complex(0.0, 0.0), complex(1.0, 0.0), complex(-1.0, 0.0), complex(0.0, 1.0),
                complex(-0.0, -1.0), complex(1.0, 1.0), complex(-2.5, 0.5), complex(0.5, -2.0),
                complex(inf, 0.0), complex(-inf, 0.0), complex(0.0, inf), complex(nan, 0.0),
                complex(0.0, nan), complex(-0.0, 0.0), complex(0.0, -0.0)]
    fi = _finfo(name)
    mx, tiny, sub = float(fi.max), float(fi.smallest_normal), float(fi.smallest_subnormal)
    v = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 3.7, -3.7, 10.0, 100.0,
         mx, -mx, tiny, sub, -sub]
    if name != "float8_e4m3fn":
        v += [float("inf"), float("-inf")]
    return v + [float("nan")]


def reduction_vectors(name):
    """[(label, values)] per dtype: edge, small, big (ints/floats), accum, ±0 orders, nan (floats)."""
    k = kind_of(name)
    vecs = [("edge", edge_values(name))]
    if k == "b":
        vecs.append(("small", [True, False, True, True]))
    elif k == "c":
        vecs.append(("small", [complex(1, 1), complex(2, 0), complex(3, -1), complex(4, 0)]))
    elif k in "ui":
        m = int(_iinfo(name).max)
        vecs += [("small", [1, 2, 3, 4]), ("big", [m, m, 1])]
    else:
        fi = _finfo(name)
        mx = float(fi.max)
        vecs += [("small", [1.0, 2.0, 3.0, 4.0]), ("big", [mx, mx]),
                 ("accum", [float(2 ** (int(fi.nmant) + 1))] + [1.0] * 8),
                 ("negzero_first", [-0.0, 0.0]), ("poszero_first", [0.0, -0.0]),
                 ("nan_mid", [1.0, float("nan"), 2.0])]
    return vecs


def clip_cases():
    """The clip value cases: (dtype, input values, lo, hi)."""
    inf, nan = float("inf"), float("nan")
    fvec = [nan, -0.0, 0.0, -5.0, 5.0, 0.5, inf, -inf]
    out = []
    for d in ("float16", "bfloat16", "float32", "float64"):
        for lo, hi in ((0, 1), (-1, 1.5), (2, 1)):
            out.append((d, fvec, lo, hi))
    for lo, hi in ((0, 300), (-1, 1.5), (0.5, 2.5), (2, 1)):
        out.append(("int8", [-128, -1, 0, 1, 127], lo, hi))
    for lo, hi in ((-1, 1.5), (0, 300)):
        out.append(("uint8", [0, 1, 255], lo, hi))
    i32 = [-2 ** 31, 0, 2 ** 31 - 1]
    for lo, hi in ((0, 300), (2, 1), (-1, 1.5)):
        out.append(("int32", i32, lo, hi))
    out.append(("int64", [-2 ** 63, 0, 2 ** 63 - 1], -1, 1.5))
    return out


def value_cases(dev, extra):
    """[(case, family, op, dtype, values, lo, hi)] in the shared order: unary by dtype, then
    reductions by dtype and vector, then clip."""
    uops = [] if extra else [o for o in UNARY_OPS if not dev or o in DEV_OPS]
    rops = EXTRA_REDUCTIONS if extra else [o for o in REDUCTIONS if not dev or o in DEV_OPS]
    cases = []
    for d in VALUE_DTYPES:
        for op in uops:
            cases.append((f"{op}_{d}", "unary", op, d, edge_values(d), None, None))
    for d in VALUE_DTYPES:
        for label, vec in reduction_vectors(d):
            for op in rops:
                cases.append((f"{op}_{label}_{d}", "reduction", op, d, vec, None, None))
    if not extra:
        for d, vec, lo, hi in clip_cases():
            cases.append((f"clip_{d}_{lo}_{hi}", "clip", "clip", d, vec, lo, hi))
    return cases


def np_dtype(name):
    import ml_dtypes
    import numpy as np
    return np.dtype(getattr(ml_dtypes, name)) if name in ML_FLOATS else np.dtype(name)


def format_values(arr):
    """(values, bits) of a NumPy array: repr strings ('nan', '-0.0' kept) and, for floating
    dtypes, the hex bit patterns; bits is None for other dtypes."""
    import numpy as np
    arr = np.asarray(arr).reshape(-1)
    dt = arr.dtype
    name = dt.name if dt.kind != "V" else str(dt)
    if dt.kind == "b":
        return [str(bool(v)) for v in arr], None
    if dt.kind in "iu":
        return [str(int(v)) for v in arr], None
    if dt.kind == "c":
        return [repr(complex(v)) for v in arr], None
    if dt.kind == "f" or name in ML_FLOATS or dt.kind == "V":
        size = dt.itemsize
        raw = arr.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size])
        return [repr(float(v)) for v in arr], ["0x%0*x" % (2 * size, int(b)) for b in raw]
    return [repr(v) for v in arr.tolist()], None


class ValueRun:
    """Result dtype and values on the edge-value vectors, for one config of VALUE_STEMS."""

    def __init__(self, stem, dev, extra):
        import numpy as np
        t0 = time.time()
        self.np = np
        self.fwname, self.config, _, _ = ofw.CONFIGS[stem]
        fw = self.fw = ofw.FWS[self.fwname](self.config)
        extend_modules(fw)
        shared = load_unary_functions(stem)["func"]
        fns = EXTRA_FUNCTIONS[self.fwname]["func"] if extra else shared
        all_cases = value_cases(dev, extra)
        ops = list(dict.fromkeys(c[2] for c in all_cases))
        self.functions, self.ops_skipped, self.callers = {}, [], {}
        for op in ops:
            fname = fns.get(op)
            if fname is None:
                self.ops_skipped.append(op)
                continue
            try:
                self.callers[op] = make_caller(fw, fname)
                self.functions[op] = fname
            except Exception:  # noqa: BLE001
                self.ops_skipped.append(op)
        self.cases = [c for c in all_cases if c[2] in self.callers]
        self.header = {"functions": self.functions, "ops_skipped": self.ops_skipped,
                       "versions": fw.versions(), "extra_meta": fw.extra_meta,
                       "n_cases_all": len(all_cases),
                       "families": {f: sum(c[1] == f for c in all_cases) for f in ("unary", "reduction", "clip")},
                       "setup_seconds": round(time.time() - t0, 1)}

    def np_array(self, d, vals):
        return self.np.array(vals, dtype=np_dtype(d))

    def make(self, d, vals):
        """The framework array holding exactly the NumPy / ml_dtypes values."""
        arr = self.np_array(d, vals)
        if self.fwname == "numpy":
            return arr
        if self.fwname == "jax":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.fw.jnp.asarray(arr)
        torch = self.fw.torch
        if d == "bfloat16":
            return torch.from_numpy(arr.view(self.np.int16).copy()).view(torch.bfloat16)
        if d in ("float8_e4m3fn", "float8_e5m2"):
            return torch.from_numpy(arr.view(self.np.uint8).copy()).view(getattr(torch, d))
        return torch.from_numpy(arr.copy())

    def to_numpy(self, r):
        np = self.np
        if self.fwname != "torch":
            return np.asarray(r)
        import ml_dtypes
        torch = self.fw.torch
        r = r.detach().resolve_conj().resolve_neg()
        if r.dtype == torch.bfloat16:
            return r.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if r.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            return r.view(torch.uint8).numpy().view(getattr(ml_dtypes, str(r.dtype).replace("torch.", "")))
        if r.dtype == torch.complex32:
            return r.to(torch.complex64).numpy()
        return r.numpy()

    def skeleton(self, i):
        case, family, op, d, vals, lo, hi = self.cases[i]
        values, _ = format_values(self.np_array(d, vals))
        rec = {"fw": self.fwname, "config": self.config, "case": case, "family": family, "op": op,
               "api": "func", "a": {"kind": "t", "dtype": d, "value": values}}
        if family == "clip":
            rec["lo"], rec["hi"] = bound_desc(("s", lo)), bound_desc(("s", hi))
        return rec

    def execute(self, i):
        case, family, op, d, vals, lo, hi = self.cases[i]
        rec = self.skeleton(i)
        fw = self.fw
        x = self.make(d, vals)
        in_name = fw.result_name(x)
        fw.log_capture_begin()
        values = bits = None
        with warnings.catch_warnings(record=True) as wl, self.np.errstate(all="ignore"):
            warnings.simplefilter("always")
            try:
                r = self.callers[op](x, lo, hi) if family == "clip" else self.callers[op](x)
                rec["result"] = fw.result_name(r)
                values, bits = format_values(self.to_numpy(r))
                rec["values"] = values
                if bits is not None:
                    rec["bits"] = bits
                rec["error"] = None
            except Exception as e:  # noqa: BLE001
                rec.pop("bits", None)
                rec["result"] = None
                rec["values"] = None
                rec["error"] = ofw.err_str(e)
                r = None
        warning = warning_of(fw, wl)
        if warning:
            rec["warning"] = warning
        if in_name != d:
            rec["in_dtypes"] = {"a": in_name}
        del r
        return rec


# --------------------------------------------------------------------------- worker / parent
def worker(mode, stem, start, fd, dev, extra):
    out = os.fdopen(fd, "w", buffering=1)
    run = (ValueRun if mode == "values" else DtypeRun)(stem, dev, extra)
    header = dict(run.header)
    header["skeletons"] = [run.skeleton(i) for i in range(len(run.cases))]
    out.write(json.dumps(header) + "\n")
    for i in range(start, len(run.cases)):
        out.write(json.dumps({"i": i, "rec": run.execute(i)}) + "\n")
    out.write(json.dumps({"done": True}) + "\n")
    out.close()


def crash_record(mode, skel, err):
    if mode == "values":
        return {**skel, "result": None, "values": None, "error": err}
    return {**skel, "result": None, "error": err}


def start_worker(mode, stem, start, dev, extra, logf):
    import subprocess
    r, w = os.pipe()
    args = [sys.executable, os.path.abspath(__file__), "--worker", mode, stem, str(start), str(w)]
    if dev:
        args.append("--dev")
    if extra:
        args.append("--extra")
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", HASH_SEED)
    p = subprocess.Popen(args, pass_fds=(w,), stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                         start_new_session=True, env=env)
    os.close(w)
    return p, os.fdopen(r, "r")


def run_stream(mode, stem, dev, extra, header_timeout=600):
    """Run one configuration's cases in workers; (header, records, hung, restarts, seconds)."""
    case_timeout = ofw.CONFIGS[stem][3]
    os.makedirs(ofw.LOGS, exist_ok=True)
    tag = f"{stem}.{mode}{'-extra' if extra else ''}{'-dev' if dev else ''}"
    logf = open(os.path.join(ofw.LOGS, f"{tag}.worker.log"), "wb")
    t0 = time.time()
    records, hung, header, start, restarts = [], [], None, 0, 0
    while True:
        p, fh = start_worker(mode, stem, start, dev, extra, logf)
        rd = ofw.LineReader(fh)
        line, why = rd.readline(header_timeout)
        if line is None:
            ofw.kill(p)
            raise RuntimeError(f"{tag}: worker setup failed ({why}, rc={p.returncode}); see {logf.name}")
        h = json.loads(line)
        if header is None:
            header = h
            print(f"[{tag}] setup {h['setup_seconds']}s, {len(h['skeletons'])} cases", flush=True)
        n = len(header["skeletons"])
        finished = False
        while True:
            line, why = rd.readline(case_timeout)
            if line is None:
                if why == "timeout":
                    ofw.kill(p)
                    err = f"Unexpected termination: timeout (no result after {case_timeout}s, process killed)"
                else:
                    p.wait()
                    if start >= n:
                        finished = True
                        break
                    err = f"Unexpected termination: worker exited with code {p.returncode}"
                rec = crash_record(mode, header["skeletons"][start], err)
                records.append(rec)
                hung.append(rec)
                print(f"[{tag}] case {start}: {err}", flush=True)
                start += 1
                restarts += 1
                break
            msg = json.loads(line)
            if msg.get("done"):
                finished = True
                p.wait()
                break
            assert msg["i"] == start, (msg["i"], start)
            records.append(msg["rec"])
            start += 1
            if start % 1000 == 0:
                print(f"[{tag}] {start}/{n} {time.time() - t0:.0f}s", flush=True)
        fh.close()
        if finished or start >= n:
            break
    logf.close()
    assert len(records) == len(header["skeletons"]), (len(records), len(header["skeletons"]))
    return header, records, hung, restarts, round(time.time() - t0, 1)


def write_gz(path, records):
    with gzip.open(path + ".tmp", "wt") as g:
        for rec in records:
            g.write(json.dumps(rec) + "\n")
    os.replace(path + ".tmp", path)


def counts_of(records, families=True):
    by_api, by_family = {}, {}
    for rec in records:
        for key, d in ((rec["api"], by_api), (rec["family"], by_family)):
            c = d.setdefault(key, {"records": 0, "errors": 0})
            c["records"] += 1
            c["errors"] += rec["error"] is not None
    out = {"records": len(records), "errors": sum(r["error"] is not None for r in records),
           "crashes_or_hangs": sum(str(r["error"]).startswith("Unexpected termination") for r in records),
           "by_api": by_api}
    if families:
        out["by_family"] = by_family
    return out


def generator_line(mode, dev, extra, stems=None):
    s = "tools/observe_unary.py" + (" --values" if mode == "values" else "")
    s += " --dev" if dev else ""
    s += " --extra" if extra else ""
    return s + (" " + " ".join(stems) if stems else "")


def run_dtypes(stem, outdir, dev, extra):
    header, records, hung, restarts, secs = run_stream("dtypes", stem, dev, extra)
    fwname, config, _, _ = ofw.CONFIGS[stem]
    suffix = ".unary-extra" if extra else ".unary"
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"{stem}{suffix}.jsonl.gz")
    write_gz(path, records)
    families = ["reduction"] if extra else ["unary", "clip", "reduction"]
    meta = {"fw": fwname, "config": config, **header["versions"], "python": platform.python_version(),
            "platform": platform.platform(), "file": os.path.basename(path), "families": families,
            "dtypes_used": header["dtypes_used"], "dtypes_skipped": header["dtypes_skipped"],
            "operand_creation_failures": header["operand_creation_failures"],
            "input_dtype_changes": header["input_dtype_changes"], "ops_skipped": header["ops_skipped"],
            "functions": header["functions"]}
    if not extra:
        meta["clip_bounds"] = header["clip_bounds"]
        meta["clip_bounds_skipped"] = header["clip_bounds_skipped"]
    else:
        meta["extra_ops"] = ("argmax/argmin/cumprod: not in the shared record set; whole-array, default "
                             "arguments (torch.cumprod with dim=0), family 'reduction'. The functions are "
                             "this tool's choice (EXTRA_FUNCTIONS).")
    meta["array_values"] = {"t": [1, 2, 3], "t_bool": [True, True, True], "z": 2, "z_bool": True}
    meta.update(header["extra_meta"])
    meta.update({"counts": counts_of(records), "crashed_or_hung_cases": hung, "worker_restarts": restarts,
                 "seconds": secs, "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()),
                 "generator": generator_line("dtypes", dev, extra, [stem])})
    with open(os.path.join(outdir, f"{stem}{suffix}.meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    c = meta["counts"]
    print(f"[{stem}{suffix}] wrote {path}: {c['records']} records, {c['errors']} errors, "
          f"{len(hung)} hangs/crashes, {secs}s", flush=True)


def run_values(outdir, dev, extra, stems):
    t0 = time.time()
    all_records, configs, families, n_all = [], [], None, 0
    for stem in stems:
        header, records, hung, restarts, secs = run_stream("values", stem, dev, extra)
        fwname, config, _, _ = ofw.CONFIGS[stem]
        families = header["families"]
        n_all = header["n_cases_all"]
        all_records += records
        configs.append({"fw": fwname, "config": config, **header["versions"],
                        "python": platform.python_version(), "functions": header["functions"],
                        "ops_skipped": header["ops_skipped"], **header["extra_meta"],
                        "counts": counts_of(records, families=False), "crashed_or_hung_cases": hung,
                        "worker_restarts": restarts, "seconds": secs})
        print(f"[values {stem}] {len(records)} records, {sum(r['error'] is not None for r in records)} errors, "
              f"{secs}s", flush=True)
    name = "unary-values-extra" if extra else "unary-values"
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, name + ".jsonl.gz")
    write_gz(path, all_records)
    meta = {"file": os.path.basename(path), "records": len(all_records), "cases": n_all,
            "families": families, "configs": configs, "seconds": round(time.time() - t0, 1),
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()),
            "generator": generator_line("values", dev, extra, stems),
            "inputs": "per dtype the edge vector (unary, reductions 'edge'); reductions also 'small', "
                      "'big', 'accum' ([2**(p+1)] + [1]*8, p = mantissa bits), 'negzero_first', "
                      "'poszero_first', 'nan_mid'; clip cases as named (clip_<dtype>_<lo>_<hi>). "
                      "NumPy runs under np.errstate(all='ignore'): its floating-point RuntimeWarnings "
                      "are not recorded."}
    if extra:
        meta["extra_ops"] = "argmax/argmin/cumprod: not in the shared record set (functions: EXTRA_FUNCTIONS)."
    with open(os.path.join(outdir, name + ".meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    print(f"[{name}] wrote {path}: {len(all_records)} records", flush=True)


def main(argv):
    if argv and argv[0] == "--worker":
        worker(argv[1], argv[2], int(argv[3]), int(argv[4]), "--dev" in argv, "--extra" in argv)
        return 0
    out, dev, extra, values, stems = OBSERVED, False, False, False, []
    it = iter(argv)
    for a in it:
        if a == "--out":
            out = next(it)
        elif a == "--dev":
            dev = True
        elif a == "--extra":
            extra = True
        elif a == "--values":
            values = True
        elif a == "--all":
            stems += ofw.PRIORITY
        else:
            if a not in ofw.CONFIGS:
                print(f"unknown configuration {a!r}; known: {', '.join(ofw.CONFIGS)}", file=sys.stderr)
                return 2
            stems.append(a)
    if values:
        run_values(out, dev, extra, stems or VALUE_STEMS)
        return 0
    rc = 0
    for stem in stems:
        try:
            run_dtypes(stem, out, dev, extra)
        except Exception as e:  # noqa: BLE001
            print(f"[{stem}] FAILED: {type(e).__name__}: {e}", flush=True)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
