#!/usr/bin/env python3
"""Observe the real frameworks: dtype-promotion records in the format of ../shared/oracle.

Run it with a Python that has the frameworks (see tests/observed/README.md for the versions):

    python tools/observe_frameworks.py numpy-default torch-f32 ...  # one worker process each
    python tools/observe_frameworks.py --all                 # every config, in priority order
    python tools/observe_frameworks.py --out DIR --dev numpy-default  # only the dev-subset ops/scalars
    python tools/observe_frameworks.py --out DIR --extra-operators=only numpy-default
                                                 # only the `a | b` / `a << b` operator records
    python tools/derive_tf_none.py tests/observed/tensorflow-safe.jsonl.gz tests/observed/tensorflow-none.jsonl.gz

The function names each framework is called by come from the shared records' metadata. Each
config runs in a child worker process (`--worker STEM START FD`) that sets the
framework up, writes a header line, then one JSON record per case to a pipe.  The parent
reads with a per-case timeout; on a hang or a crash it kills the worker, records the case as
"Unexpected termination: ..." and restarts a worker from the next case.
"""
import gzip
import json
import os
import platform
import select
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_META = os.path.join(REPO, "..", "shared", "oracle", "data")
LOGS = os.path.join(REPO, "build", "observe-logs")

DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
          "float8_e4m3fn", "float8_e5m2"]
SCALARS = [True, 1, -1, 300, 70000, 2**40, 2**63, 1.5, 1e300, float("nan"), 1 + 2j]
OPS = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "pow",
       "maximum", "minimum", "fmax", "fmin", "equal", "less", "logical_and", "logical_xor",
       "bitwise_and", "bitwise_or", "left_shift", "atan2", "hypot", "copysign", "logaddexp",
       "nextafter", "where"]
DEV_OPS = [o for o in OPS if o in ("add", "true_divide", "floor_divide", "maximum", "equal", "bitwise_and", "atan2", "where")]
DEV_SCALARS = [True, 1, -1, 300, 1.5, 1 + 2j]

OPERATORS = {"add": "a + b", "subtract": "a - b", "multiply": "a * b", "true_divide": "a / b",
             "floor_divide": "a // b", "remainder": "a % b", "pow": "a ** b", "equal": "a == b",
             "less": "a < b", "bitwise_and": "a & b"}
EXTRA_OPERATORS = {"bitwise_or": "a | b", "left_shift": "a << b"}
OPFUNCS = {"a + b": lambda a, b: a + b, "a - b": lambda a, b: a - b, "a * b": lambda a, b: a * b,
           "a / b": lambda a, b: a / b, "a // b": lambda a, b: a // b, "a % b": lambda a, b: a % b,
           "a ** b": lambda a, b: a ** b, "a == b": lambda a, b: a == b, "a < b": lambda a, b: a < b,
           "a & b": lambda a, b: a & b, "a | b": lambda a, b: a | b, "a << b": lambda a, b: a << b}

CONFIGS = {
    # stem: (fw, config, api list, per-case timeout seconds)
    "numpy-default": ("numpy", "default", ["func", "operator"], 10),
    "torch-f32": ("torch", "f32", ["func", "operator"], 10),
    "torch-f64": ("torch", "f64", ["func", "operator"], 10),
    "jax-x32": ("jax", "x32", ["func", "operator"], 60),
    "jax-x64": ("jax", "x64", ["func", "operator"], 60),
    "jax-x32-strict": ("jax", "x32-strict", ["func", "operator"], 60),
    "jax-x64-strict": ("jax", "x64-strict", ["func", "operator"], 60),
    "array_api_strict-default": ("array_api_strict", "default", ["func", "operator"], 10),
    "paddle-default": ("paddle", "default", ["func", "operator"], 6),
    "tensorflow-all": ("tensorflow", "all", ["func", "tfmath", "operator"], 20),
    "tensorflow-safe": ("tensorflow", "safe", ["func", "tfmath", "operator"], 20),
}
PRIORITY = ["numpy-default", "torch-f32", "torch-f64", "jax-x32", "jax-x64", "jax-x32-strict",
            "jax-x64-strict", "array_api_strict-default", "paddle-default", "tensorflow-all",
            "tensorflow-safe"]


def load_functions(stem):
    with open(os.path.join(SHARED_META, stem + ".meta.json")) as fh:
        return json.load(fh)["functions"]


def pytype(v):
    return {bool: "pybool", int: "pyint", float: "pyfloat", complex: "pycomplex"}[type(v)]


def operand_list(dtypes_used, scalars):
    ops = [("t", d) for d in dtypes_used] + [("z", d) for d in dtypes_used]
    ops += [("s", v) for v in scalars]
    return ops


def desc(o):
    kind, x = o
    if kind == "s":
        return {"kind": "s", "dtype": pytype(x), "value": repr(x)}
    return {"kind": kind, "dtype": x}


def enumerate_cases(apis, functions, dtypes_used, ops, scalars, operators):
    """List of (op, api, fname, a, b) with a/b = (kind, dtype|value)."""
    opnds = operand_list(dtypes_used, scalars)
    cases = []
    for op in ops:
        for api in apis:
            if api == "operator":
                if op not in operators:
                    continue
                fname = operators[op]
            else:
                fname = functions.get(api, {}).get(op)
                if fname is None:
                    continue
            for a in opnds:
                for b in opnds:
                    if op != "where" and a[0] == "s" and b[0] == "s":
                        continue
                    cases.append((op, api, fname, a, b))
    return cases


def err_str(e):
    lines = str(e).strip().splitlines()
    first = lines[0].strip() if lines else ""
    return f"{type(e).__name__}: {first[:200]}"


# --------------------------------------------------------------------------- frameworks
class FW:
    name = None
    extra_meta = {}

    def dtype(self, name):
        raise NotImplementedError

    def make(self, kind, name):
        raise NotImplementedError

    def cond(self):
        raise NotImplementedError

    def dtype_name(self, dt):
        return str(dt)

    def result_name(self, r):
        dt = getattr(r, "dtype", None)
        if dt is None:
            return "py" + type(r).__name__
        return self.dtype_name(dt)

    def weak(self, r):
        return False

    def resolve(self, fname):
        mod, _, attr = fname.rpartition(".")
        obj = self.modules[mod.split(".")[0]]
        for part in mod.split(".")[1:] + [attr]:
            obj = getattr(obj, part)
        return obj

    def versions(self):
        return {}

    def log_capture_begin(self):
        pass

    def log_capture_end(self):
        return []


class NumpyFW(FW):
    name = "numpy"

    def __init__(self, config):
        import numpy as np
        import ml_dtypes
        self.np, self.ml = np, ml_dtypes
        self.modules = {"np": np}
        self.extra_meta = {"ml_dtypes_version": ml_dtypes.__version__,
                           "notes": "0-d inputs are np.ndarray of shape (); numpy scalars (np.int8(2)) are not covered."}

    def versions(self):
        return {"fw_version": self.np.__version__}

    def dtype(self, name):
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            return self.np.dtype(getattr(self.ml, name))
        if name == "complex32":
            raise TypeError("numpy has no dtype complex32")
        return self.np.dtype(name)

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        return self.np.array(v, dtype=dt)

    def cond(self):
        return self.np.array([True, False, True])


class TorchFW(FW):
    name = "torch"

    def __init__(self, config):
        import torch
        self.torch = torch
        torch.set_default_dtype(torch.float32 if config == "f32" else torch.float64)
        self.modules = {"torch": torch}
        self.extra_meta = {"default_dtype": str(torch.get_default_dtype()), "device": "cpu",
                           "notes": "z = 0-d tensor (torch.tensor(2, dtype=...)); s = Python scalar passed directly."}

    def versions(self):
        return {"fw_version": self.torch.__version__}

    def dtype(self, name):
        return getattr(self.torch, name)

    def dtype_name(self, dt):
        return str(dt).replace("torch.", "")

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        return self.torch.tensor(v, dtype=dt)

    def cond(self):
        return self.torch.tensor([True, False, True])


class JaxFW(FW):
    name = "jax"

    def __init__(self, config):
        import jax
        x64 = config.startswith("x64")
        jax.config.update("jax_enable_x64", x64)
        jax.config.update("jax_numpy_dtype_promotion", "strict" if config.endswith("strict") else "standard")
        jax.config.update("jax_platforms", "cpu")
        import jax.numpy as jnp
        import numpy as np
        import ml_dtypes
        import jaxlib
        self.jax, self.jnp, self.np, self.ml = jax, jnp, np, ml_dtypes
        self.modules = {"jnp": jnp}
        self.extra_meta = {"jaxlib_version": jaxlib.__version__, "jax_enable_x64": x64,
                           "jax_numpy_dtype_promotion": jax.config.jax_numpy_dtype_promotion,
                           "notes": "t/z made with jnp.asarray(np.array(v, dtype)); every case executed eagerly through the default jit dispatch."}

    def versions(self):
        return {"fw_version": self.jax.__version__}

    def dtype(self, name):
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            return self.np.dtype(getattr(self.ml, name))
        if name == "complex32":
            raise TypeError("jax has no dtype complex32")
        return self.np.dtype(name)

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.jnp.asarray(self.np.array(v, dtype=dt))

    def cond(self):
        return self.jnp.asarray(self.np.array([True, False, True]))

    def weak(self, r):
        return bool(getattr(r, "weak_type", False))


class ArrayApiStrictFW(FW):
    name = "array_api_strict"

    def __init__(self, config):
        import array_api_strict as xp
        self.xp = xp
        self.modules = {"xp": xp}
        flags = xp.get_array_api_strict_flags()
        self.extra_meta = {"array_api_flags": {k: str(v) for k, v in flags.items()}}

    def versions(self):
        return {"fw_version": self.xp.__version__}

    def dtype(self, name):
        if not hasattr(self.xp, name):
            raise TypeError(f"array_api_strict has no dtype {name}")
        return getattr(self.xp, name)

    def dtype_name(self, dt):
        return str(dt).replace("array_api_strict.", "")

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        return self.xp.asarray(v, dtype=dt)

    def cond(self):
        return self.xp.asarray([True, False, True])


class PaddleFW(FW):
    name = "paddle"

    def __init__(self, config):
        import paddle
        import numpy as np
        # ml_dtypes is deliberately NOT imported: the shared oracle's paddle records were made
        # without it (paddle's reflected operators then fail in np.astype('float8_e4m3fn')).
        paddle.set_device("cpu")
        paddle.disable_static()
        self.paddle, self.np = paddle, np
        self.modules = {"paddle": paddle}
        self.extra_meta = {"device": "cpu",
                           "uint16_note": "paddle.to_tensor(np.array([1,2,3], np.uint16)) gives a bfloat16 tensor whose raw bits are 1,2,3; skipped.",
                           "in_dynamic_mode": paddle.in_dynamic_mode(),
                           "notes": "paddle.uint16 is an alias of bfloat16; uint32/uint64 exist as dtypes but tensors cannot be created on CPU."}

    def versions(self):
        return {"fw_version": self.paddle.__version__}

    def dtype(self, name):
        if name in ("uint16", "complex32") or not hasattr(self.paddle, name):
            raise TypeError(f"paddle has no dtype {name}")
        return getattr(self.paddle, name)

    def dtype_name(self, dt):
        s = str(dt).replace("paddle.", "")
        return {"float8_e4m3fn": "float8_e4m3fn"}.get(s, s)

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            x = self.paddle.to_tensor(self.np.array(v, dtype=self.np.float32)).astype(dt)
        else:
            x = self.paddle.to_tensor(self.np.array(v, dtype=name))
        return x

    def cond(self):
        return self.paddle.to_tensor(self.np.array([True, False, True]))


class TFFW(FW):
    name = "tensorflow"

    def __init__(self, config):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        import numpy as np
        import ml_dtypes
        import logging
        tf.experimental.numpy.experimental_enable_numpy_behavior(dtype_conversion_mode=config)
        self.tf, self.np, self.ml = tf, np, ml_dtypes
        self.modules = {"tf": tf}
        from tensorflow.python.framework import ops as tfops
        try:
            from tensorflow.python.framework.weak_tensor import WeakTensor
        except Exception:  # noqa: BLE001
            WeakTensor = ()
        self.WeakTensor = WeakTensor
        self.extra_meta = {"numpy_behavior": {"dtype_conversion_mode": config, "prefer_float32": False},
                           "ml_dtypes_version": ml_dtypes.__version__,
                           "ops._dtype_conversion_mode": str(tfops._dtype_conversion_mode)}
        self._logs = []
        fw = self

        class H(logging.Handler):
            def emit(self, record):
                try:
                    fw._logs.append(record.getMessage())
                except Exception:  # noqa: BLE001
                    pass
        self.handler = H()
        logging.getLogger("tensorflow").addHandler(self.handler)
        logging.getLogger("tensorflow").setLevel(logging.INFO)

    def log_capture_begin(self):
        self._logs = []

    def log_capture_end(self):
        import re
        out = []
        for m in self._logs:
            if not m:
                continue
            m = m.splitlines()[0]
            m = m.replace("<class 'tensorflow.python.framework.ops.EagerTensor'>", "EagerTensor")
            m = re.sub(r"<class '([^']*)'>", r"\1", m).replace("tensorflow.python.", "tf.")
            out.append("log: " + m)
        return out

    def versions(self):
        return {"fw_version": self.tf.__version__}

    def dtype(self, name):
        if name == "complex32":
            raise TypeError(f"tensorflow has no dtype {name}")
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            return self.np.dtype(getattr(self.ml, name))
        return self.np.dtype(name)

    def dtype_name(self, dt):
        return getattr(dt, "name", str(dt))

    def make(self, kind, name):
        dt = self.dtype(name)
        v = ([True] * 3 if name == "bool" else [1, 2, 3]) if kind == "t" else (True if name == "bool" else 2)
        return self.tf.constant(self.np.array(v, dtype=dt))

    def cond(self):
        return self.tf.constant(self.np.array([True, False, True]))

    def weak(self, r):
        # The shared oracle's TF records carry no weak_type (its generator did not detect
        # WeakTensor); set PROBE_TF_WEAK=1 to record it anyway.
        if os.environ.get("PROBE_TF_WEAK") != "1":
            return False
        return bool(self.WeakTensor) and isinstance(r, self.WeakTensor)


FWS = {"numpy": NumpyFW, "torch": TorchFW, "jax": JaxFW, "array_api_strict": ArrayApiStrictFW,
       "paddle": PaddleFW, "tensorflow": TFFW}


def case_params(stem, dev, extra):
    """(apis, ops, scalars, operators) for a run; extra: None | 'with' | 'only'."""
    apis = list(CONFIGS[stem][2])
    ops, scalars = (DEV_OPS, DEV_SCALARS) if dev else (OPS, SCALARS)
    operators = dict(OPERATORS)
    if extra == "with":
        operators.update(EXTRA_OPERATORS)
    elif extra == "only":
        apis, ops, operators = ["operator"], [o for o in ops if o in EXTRA_OPERATORS], dict(EXTRA_OPERATORS)
    return apis, ops, scalars, operators


# --------------------------------------------------------------------------- worker
def worker(stem, start, fd, dev, extra_ops):
    import warnings
    out = os.fdopen(fd, "w", buffering=1)
    fwname, config, _, _ = CONFIGS[stem]
    apis, ops, scalars, operators = case_params(stem, dev, extra_ops)
    t0 = time.time()
    fw = FWS[fwname](config)
    functions = load_functions(stem)
    functions = {api: dict(functions.get(api, {})) for api in apis}
    functions["operator"] = {op: operators[op] for op in OPS if op in operators}
    # operands
    dtypes_used, dtypes_skipped, creation_failures, changes, arrays = [], {}, {}, {}, {}
    for name in DTYPES:
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
                creation_failures[f"{kind}:{name}"] = err_str(e)
                ok = False
        if ok:
            dtypes_used.append(name)
        else:
            dtypes_skipped[name] = creation_failures.get(f"t:{name}") or creation_failures.get(f"z:{name}")
    cond = fw.cond()
    # functions
    fns, ops_skipped = {}, {}
    for api in apis:
        if api == "operator":
            continue
        ops_skipped[api] = []
        for op in OPS:
            f = functions[api].get(op)
            if f is None:
                ops_skipped[api].append(op)
                continue
            try:
                fns[f] = fw.resolve(f)
            except Exception:  # noqa: BLE001
                ops_skipped[api].append(op)
                del functions[api][op]
    header = {"dtypes_used": dtypes_used, "dtypes_skipped": dtypes_skipped,
              "operand_creation_failures": creation_failures, "input_dtype_changes": changes,
              "ops_skipped": ops_skipped, "functions": functions, "versions": fw.versions(),
              "extra_meta": fw.extra_meta, "setup_seconds": round(time.time() - t0, 1)}
    out.write(json.dumps(header) + "\n")
    cases = enumerate_cases(apis, functions, dtypes_used, ops, scalars, operators)
    for i in range(start, len(cases)):
        op, api, fname, a, b = cases[i]
        rec = {"fw": fwname, "config": config, "op": op, "api": api, "a": desc(a), "b": desc(b)}
        if op == "where":
            rec["c"] = {"kind": "t", "dtype": "bool"}
        xa = a[1] if a[0] == "s" else arrays[a]
        xb = b[1] if b[0] == "s" else arrays[b]
        fw.log_capture_begin()
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always")
            try:
                if api == "operator":
                    r = OPFUNCS[fname](xa, xb)
                elif op == "where":
                    r = fns[fname](cond, xa, xb)
                else:
                    r = fns[fname](xa, xb)
                rec["result"] = fw.result_name(r)
                rec["error"] = None
                weak = fw.weak(r)
            except Exception as e:  # noqa: BLE001
                rec["result"] = None
                rec["error"] = err_str(e)
                weak = False
                r = None
        logs = fw.log_capture_end()
        in_dt = {}
        for slot, o in (("a", a), ("b", b)):
            if o[0] != "s":
                k = f"{o[0]}:{o[1]}"
                if k in changes:
                    in_dt[slot] = changes[k]
        if in_dt:
            rec["in_dtypes"] = in_dt
        if weak:
            rec["weak_type"] = True
        msgs = logs + [f"{w.category.__name__}: {str(w.message).splitlines()[0][:200] if str(w.message) else ''}"
                       for w in wl]
        if msgs:
            rec["warning"] = msgs[0]
        del r
        out.write(json.dumps({"i": i, "rec": rec}) + "\n")
    out.write(json.dumps({"done": True}) + "\n")
    out.close()


# --------------------------------------------------------------------------- orchestrator
def start_worker(stem, start, dev, extra_ops, logf):
    r, w = os.pipe()
    args = [sys.executable, os.path.abspath(__file__), "--worker", stem, str(start), str(w)]
    if dev:
        args.append("--dev")
    if extra_ops:
        args.append("--extra-operators=" + extra_ops)
    p = subprocess.Popen(args, pass_fds=(w,), stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    os.close(w)
    return p, os.fdopen(r, "r")


def kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


class LineReader:
    def __init__(self, fh):
        self.fd = fh.fileno()
        self.fh = fh
        self.buf = b""

    def readline(self, timeout):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None, "timeout"
            rl, _, _ = select.select([self.fd], [], [], left)
            if not rl:
                return None, "timeout"
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None, "eof"
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(), None


def run_config(stem, outdir, dev=False, extra_ops=False, header_timeout=600):
    fwname, config, _, case_timeout = CONFIGS[stem]
    apis, ops, scalars, operators = case_params(stem, dev, extra_ops)
    os.makedirs(outdir, exist_ok=True)
    os.makedirs(LOGS, exist_ok=True)
    logf = open(os.path.join(LOGS, f"{stem}{'-dev' if dev else ''}.worker.log"), "wb")
    t0 = time.time()
    records, hung = [], []
    header = None
    cases = None
    start = 0
    restarts = 0
    while True:
        p, fh = start_worker(stem, start, dev, extra_ops, logf)
        rd = LineReader(fh)
        line, why = rd.readline(header_timeout)
        if line is None:
            kill(p)
            raise RuntimeError(f"{stem}: worker setup failed ({why}, rc={p.returncode}); see logs")
        h = json.loads(line)
        if header is None:
            header = h
            cases = enumerate_cases(apis, header["functions"], header["dtypes_used"], ops, scalars, operators)
            print(f"[{stem}] setup {h['setup_seconds']}s, {len(cases)} cases", flush=True)
        finished = False
        while True:
            line, why = rd.readline(case_timeout)
            if line is None:
                if why == "timeout":
                    kill(p)
                    err = f"Unexpected termination: timeout (no result after {case_timeout}s, process killed)"
                else:
                    p.wait()
                    rc = p.returncode
                    if start >= len(cases):
                        finished = True
                        break
                    err = f"Unexpected termination: worker exited with code {rc}"
                op, api, fname, a, b = cases[start]
                rec = {"fw": fwname, "config": config, "op": op, "api": api, "a": desc(a), "b": desc(b)}
                if op == "where":
                    rec["c"] = {"kind": "t", "dtype": "bool"}
                rec["result"] = None
                rec["error"] = err
                records.append(rec)
                hung.append(rec)
                print(f"[{stem}] case {start} {op} {api} {a} {b}: {err}", flush=True)
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
            if start % 5000 == 0:
                print(f"[{stem}] {start}/{len(cases)} {time.time() - t0:.0f}s", flush=True)
        fh.close()
        if finished or start >= len(cases):
            if not finished:
                pass
            break
    logf.close()
    assert len(records) == len(cases), (len(records), len(cases))
    # write
    path = os.path.join(outdir, f"{stem}.jsonl.gz")
    with gzip.open(path + ".tmp", "wt") as g:
        for rec in records:
            g.write(json.dumps(rec) + "\n")
    os.replace(path + ".tmp", path)
    by_api = {}
    for rec in records:
        d = by_api.setdefault(rec["api"], {"records": 0, "errors": 0})
        d["records"] += 1
        d["errors"] += rec["error"] is not None
    meta = {"fw": fwname, "config": config, **header["versions"], "python": platform.python_version(),
            "platform": platform.platform(), "file": f"{stem}.jsonl.gz",
            "dtypes_used": header["dtypes_used"], "dtypes_skipped": header["dtypes_skipped"],
            "operand_creation_failures": header["operand_creation_failures"],
            "input_dtype_changes": header["input_dtype_changes"], "ops_skipped": header["ops_skipped"],
            "functions": header["functions"],
            "scalars": [repr(v) for v in scalars],
            "array_values": {"t": [1, 2, 3], "t_bool": [True, True, True], "z": 2, "z_bool": True,
                             "where_cond": [True, False, True]},
            **header["extra_meta"],
            "counts": {"records": len(records), "errors": sum(r["error"] is not None for r in records),
                       "crashes_or_hangs": len(hung), "by_api": by_api},
            "crashed_or_hung_cases": hung, "worker_restarts": restarts,
            "seconds": round(time.time() - t0, 1),
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime()),
            "generator": "tools/observe_frameworks.py" + (" --dev" if dev else "") + (f" --extra-operators={extra_ops}" if extra_ops else "")}
    with open(os.path.join(outdir, f"{stem}.meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    print(f"[{stem}] wrote {path}: {len(records)} records, {meta['counts']['errors']} errors, "
          f"{len(hung)} hangs/crashes, {meta['seconds']}s", flush=True)
    return path


def main(argv):
    if argv and argv[0] == "--worker":
        extra = [a.split("=", 1)[1] for a in argv if a.startswith("--extra-operators=")]
        worker(argv[1], int(argv[2]), int(argv[3]), "--dev" in argv, extra[0] if extra else None)
        return 0
    out = os.path.join(REPO, "tests", "observed")
    dev = False
    extra = None
    stems = []
    it = iter(argv)
    for a in it:
        if a == "--out":
            out = next(it)
        elif a == "--dev":
            dev = True
        elif a.startswith("--extra-operators="):  # with | only
            extra = a.split("=", 1)[1]
        elif a == "--all":
            stems += PRIORITY
        else:
            stems.append(a)
    rc = 0
    for stem in stems:
        try:
            run_config(stem, out, dev=dev, extra_ops=extra)
        except Exception as e:  # noqa: BLE001
            print(f"[{stem}] FAILED: {type(e).__name__}: {e}", flush=True)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
