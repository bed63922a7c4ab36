"""Agreement with the real frameworks: records of calls made on them, replayed through gp.result_type.

    python -m gpupromote conformance                        # the records in this repository (tests/observed)
    python -m gpupromote conformance --data DIR [--data DIR] # other folders of records, in the same format
    python -m gpupromote conformance --policy torch --family binary --show 20 --min 99.5

A record (one line of a gzip JSON Lines file ``<stem>[.unary[-extra]].jsonl.gz``; tests/observed/README.md
describes the format) is one call made on a framework: an op, its operands ("t" an array, "z" a 0-d
array, "s" a Python scalar with its value) and either the result dtype or the error it raised. The
file's stem names the framework configuration, POLICY_OF the policy that emulates it. Scoring:

* the framework returned dtype D: gpupromote must return D;
* it raised because a Python scalar was out of range: gpupromote must raise OverflowError;
* it raised any other error: gpupromote must raise (any exception);
* it raised an error that says only that its CPU build lacks a kernel: not scored;
* an op gpupromote does not know disagrees, whatever the record says.

Each record is replayed in its own form: ``gp.result_type(..., form="function")`` for a function's
record (api ``func``, ``tfmath``), ``form="operator"`` for an operator's, so that a function that
refuses a Python scalar (torch.maximum(x, 2.0): "must be Tensor"; paddle.add(x, 1) where x + 1
runs) is scored as the refusal it is (promotion/refusals.py).

TensorFlow is scored on its operators and tf.math.* (RFC 431's scope), not tf.experimental.numpy.
"""
from __future__ import annotations

import ast
import gzip
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["POLICY_OF", "FAMILIES", "expected", "operands", "records", "agrees", "score_file", "record_files",
           "repository_records", "run"]

# record stem (framework-configuration) -> the policy that emulates it
POLICY_OF = {"numpy-default": "numpy", "torch-f32": "torch", "torch-f64": "torch-f64", "jax-x32": "jax",
             "jax-x64": "jax-x64", "jax-x32-strict": "jax-strict", "jax-x64-strict": "jax-x64-strict",
             "paddle-default": "paddle", "tensorflow-all": "tf-all", "tensorflow-safe": "tf-safe",
             "tensorflow-none": "tf-none", "array_api_strict-default": "array-api"}
FAMILIES = ("binary", "unary", "clip", "reduction")
# file name suffix -> the families its records belong to
_SUFFIXES = {".jsonl.gz": ("binary",), ".unary.jsonl.gz": ("unary", "clip", "reduction"),
             ".unary-extra.jsonl.gz": ("reduction",)}

# TensorFlow's RFC 431 rules are those of its operators and tf.math.*; tf.experimental.numpy is apart
_APIS = {stem: ("operator", "tfmath") for stem in POLICY_OF if stem.startswith("tensorflow-")}
# errors that are no promotion decision: a missing CPU kernel, a call that hung, ...
_UNSCORED = ("UnimplementedError", "NotFoundError", "Could not find device", "(NotFound)", "has no attribute",
             "Unexpected termination", "KeyError", "type of data we are trying to retrieve")
# the record's api -> the form of the call it replays (core/kinds.Form)
_FORMS = {"func": "function", "tfmath": "function", "operator": "operator"}
# torch's "not implemented for" names a design refusal for most dtypes, a CPU kernel gap for these
_TORCH_GAPS = ("'UInt16'", "'UInt32'", "'UInt64'", "'Float8", "'ComplexHalf'")
_OVERFLOW = ("OverflowError", "out of bounds", "out of range", "too large to convert")
_OPERAND_KEYS = {"clip": ("a", "lo", "hi"), "unary": ("a",), "reduction": ("a",)}


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


def _operand(gp, desc):
    if desc["kind"] == "s":
        if desc.get("dtype") == "pynone":
            return None   # clip's absent bound
        value = desc["value"]
        # the value's repr, read back as a literal (never eval'd: a record file is data)
        return float(value) if value in ("nan", "inf", "-inf") else ast.literal_eval(value)
    return gp.spec(desc["dtype"], ndim=1 if desc["kind"] == "t" else 0)


def operands(gp, record) -> tuple:
    """The record's operands in call order: (a, b), (x,) or (x, lo, hi)."""
    return tuple(_operand(gp, record[k]) for k in _OPERAND_KEYS.get(record.get("family"), ("a", "b")))


def records(path, stem, families):
    """The scored records of a file, of the given families (an iterable of FAMILIES)."""
    apis = _APIS.get(stem)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("family", "binary") in families and (apis is None or record["api"] in apis) \
                    and expected(record) is not None:
                yield record


def _known(op: str) -> bool:
    from ..core.ops import op_named
    try:
        op_named(op)
        return True
    except ValueError:
        return False


def agrees(gp, record, policy) -> tuple[bool, str]:
    """Whether gp.result_type answers as the framework did, and the two answers on one line."""
    want, name = expected(record)
    call = f"{record['op']}({', '.join(_describe(record[k]) for k in ('a', 'b', 'lo', 'hi') if k in record)})"
    framework = name if want == "dtype" else record["error"][:80]
    if not _known(record["op"]):
        return False, f"{call} [{record['api']}]: framework {framework} | gpupromote has no op {record['op']!r}"
    try:
        got, raised = gp.result_type(*operands(gp, record), op=record["op"], policy=policy,
                                     form=_FORMS.get(record["api"])).name, None
    except Exception as exc:  # noqa: BLE001 - any exception is an answer here
        got, raised = None, exc
    ok = (want == "dtype" and raised is None and got == name) or \
        (want == "overflow" and isinstance(raised, OverflowError)) or (want == "error" and raised is not None)
    shown = got if raised is None else f"{type(raised).__name__}: {str(raised)[:80]}"
    return ok, f"{call} [{record['api']}]: framework {framework} | gpupromote {shown}"


def _describe(desc):
    return desc["value"] if desc["kind"] == "s" else ("0d:" if desc["kind"] == "z" else "") + desc["dtype"]


@dataclass
class Score:
    """One file's score under one policy: agreements, scored records, and the first disagreements."""
    policy: str
    file: str
    agree: int = 0
    scored: int = 0
    misses: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.agree / self.scored if self.scored else 100.0

    @property
    def shown(self) -> str:
        """The percent with two decimals, never rounded up to 100.00 while a record disagrees."""
        return f"{min(self.percent, 99.99) if self.agree < self.scored else 100.0:.2f}%"


def score_file(gp, path, stem, policy, families, show=0) -> Score:
    """Replay the records of ``families`` in ``path`` (records of configuration ``stem``) under ``policy``."""
    score, start = Score(policy, Path(path).name), time.perf_counter()
    for record in records(path, stem, families):
        ok, text = agrees(gp, record, policy)
        score.scored += 1
        score.agree += ok
        if not ok and len(score.misses) < show:
            score.misses.append(text)
    score.seconds = time.perf_counter() - start
    return score


def record_files(folder):
    """(path, stem, families) of every record file in ``folder`` whose stem a policy emulates."""
    found = []
    for path in sorted(Path(folder).glob("*.jsonl.gz")):
        for suffix in sorted(_SUFFIXES, key=len, reverse=True):   # the longest suffix names the file's kind
            if path.name.endswith(suffix):
                stem = path.name[:-len(suffix)]
                if stem in POLICY_OF:
                    found.append((path, stem, _SUFFIXES[suffix]))
                break
    return found


def repository_records() -> Path | None:
    """tests/observed of the source tree gpupromote runs from (a clone); None for an installed wheel."""
    folder = Path(__file__).resolve().parents[2] / "tests" / "observed"
    return folder if folder.is_dir() else None


def run(folders, policy=None, families=FAMILIES, show=5, minimum=None, out=print) -> int:
    """Score every record file of ``folders``; print one line per file (and its first ``show``
    disagreements). 0, or 1 when a file scores below ``minimum`` percent, 2 when there is nothing to score."""
    import gpupromote as gp
    files = [(f, *rest) for folder in folders for f, *rest in record_files(folder)]
    files = [(path, stem, set(fams) & set(families)) for path, stem, fams in files
             if set(fams) & set(families) and (policy is None or POLICY_OF[stem] == policy)]
    if not files:
        out(f"no record files to score in {', '.join(map(str, folders))} (policy {policy or 'any'}, "
            f"families {', '.join(families)}): each is <stem>.jsonl.gz or <stem>.unary.jsonl.gz, "
            f"stems {', '.join(POLICY_OF)}")
        return 2
    out(f"{'policy':<15} {'records':<42} {'agree':>7} {'scored':>7} {'percent':>8} {'s':>5}")
    lowest = None
    for path, stem, fams in files:
        score = score_file(gp, path, stem, POLICY_OF[stem], fams, show)
        lowest = score if lowest is None or score.percent < lowest.percent else lowest
        out(f"{score.policy:<15} {Path(path).parent.name + '/' + score.file:<42} {score.agree:>7} "
            f"{score.scored:>7} {score.shown:>8} {score.seconds:>5.1f}")
        for miss in score.misses:
            out(f"    {miss}")
    out(f"lowest agreement: {lowest.shown} ({lowest.policy}; docs/deviations.md says why a policy is below 100%)")
    return 1 if minimum is not None and lowest.percent < minimum else 0
