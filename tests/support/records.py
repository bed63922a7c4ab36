"""Replaying the frameworks' recorded calls (tests/observed, the format of the shared oracle
records) through gp.result_type, as the conformance scoring does: what a record expects, and
whether gpupromote agrees.

A record expects the dtype the framework returned, an OverflowError where the framework's error
says a Python scalar was out of range, any exception for any other refusal; an error that only says
the framework's CPU build lacks a kernel for a dtype is not a promotion decision and is not scored.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

OBSERVED = Path(__file__).resolve().parents[1] / "observed"

# record stem -> policy
POLICY_OF = {"numpy-default": "numpy", "torch-f32": "torch", "torch-f64": "torch-f64", "jax-x32": "jax",
             "jax-x64": "jax-x64", "jax-x32-strict": "jax-strict", "jax-x64-strict": "jax-x64-strict",
             "paddle-default": "paddle", "tensorflow-all": "tf-all", "tensorflow-safe": "tf-safe",
             "tensorflow-none": "tf-none", "array_api_strict-default": "array-api"}

# TensorFlow's RFC 431 rules are those of its operators and tf.math.*; tf.experimental.numpy is apart
_APIS = {stem: ("operator", "tfmath") for stem in POLICY_OF if stem.startswith("tensorflow-")}
# errors that are no promotion decision: a missing CPU kernel, an API that takes no Python scalar, ...
_UNSCORED = ("UnimplementedError", "NotFoundError", "Could not find device", "(NotFound)", "must be Tensor, but got",
             "must be Tensor, not", "has no attribute", "received an invalid combination of arguments",
             "Unexpected termination", "KeyError", "type of data we are trying to retrieve")
# torch's "not implemented for" names a design refusal for most dtypes, a CPU kernel gap for these
_TORCH_GAPS = ("'UInt16'", "'UInt32'", "'UInt64'", "'Float8", "'ComplexHalf'")
_OVERFLOW = ("OverflowError", "out of bounds", "out of range", "too large to convert")


def expected(record):
    """('dtype', name), ('overflow', None), ('error', None), or None where the record is not scored."""
    error = record.get("error")
    if error is None:
        return "dtype", record["result"]
    if any(m in error for m in _UNSCORED) or ("not implemented for" in error and any(g in error for g in _TORCH_GAPS)):
        return None
    if any(m in error for m in _OVERFLOW):
        return "overflow", None
    return "error", None


def operand(gp, desc):
    if desc["kind"] == "s":
        if desc.get("dtype") == "pynone":
            return None
        value = desc["value"]
        return float(value) if value in ("nan", "inf", "-inf") else eval(value, {"__builtins__": {}}, {})
    return gp.spec(desc["dtype"], ndim=1 if desc["kind"] == "t" else 0)


def operands(gp, record):
    keys = {"clip": ("a", "lo", "hi"), "unary": ("a",), "reduction": ("a",)}.get(record.get("family"), ("a", "b"))
    return tuple(operand(gp, record[k]) for k in keys)


def records(path, stem, families):
    """The scored records of a file, of the given families."""
    apis = _APIS.get(stem)
    with gzip.open(path, "rt") as f:
        for line in f:
            record = json.loads(line)
            if record.get("family", "binary") in families and (apis is None or record["api"] in apis) \
                    and expected(record) is not None:
                yield record


def agrees(gp, record, policy) -> tuple[bool, str]:
    """Whether gp.result_type answers as the framework did, and the two answers."""
    want, name = expected(record)
    try:
        got, raised = gp.result_type(*operands(gp, record), op=record["op"], policy=policy).name, None
    except Exception as exc:  # noqa: BLE001 - any exception is an answer here
        got, raised = None, exc
    ok = (want == "dtype" and raised is None and got == name) or \
        (want == "overflow" and isinstance(raised, OverflowError)) or (want == "error" and raised is not None)
    shown = got if raised is None else f"{type(raised).__name__}: {str(raised)[:80]}"
    return ok, f"{record['op']}({', '.join(_describe(record[k]) for k in ('a', 'lo', 'hi') if k in record)}) " \
               f"[{record['api']}]: framework {name if want == 'dtype' else record['error'][:60]} | gpupromote {shown}"


def _describe(desc):
    return desc["value"] if desc["kind"] == "s" else ("0d:" if desc["kind"] == "z" else "") + desc["dtype"]
