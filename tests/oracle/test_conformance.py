"""Agreement with the real frameworks on their recorded answers to binary ops, scored by the
project's own tool (gpupromote/tools/conformance.py, what `make conformance` runs) on the records
in this repository, tests/observed (all binary ops, 11 Python scalar values). Where the workspace's
development subset (../shared/oracle/data) sits beside the checkout, its records are scored too, as
extra cases; without it those cases do not exist (nothing skips for want of it)."""
import pathlib

import pytest

import gpupromote as gp
from gpupromote.tools import cli, conformance

_OBSERVED = conformance.repository_records()
_SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "oracle" / "data"

# Least agreement (percent) each policy must keep; where a policy is below 100%,
# docs/deviations.md says why, record by record (Paddle's and TensorFlow's function and operator
# forms disagree with each other on a few calls, which one gp.result_type cannot both follow).
FLOOR = 99.5
FOLDERS = [("observed", _OBSERVED)] + ([("shared", _SHARED)] if _SHARED.is_dir() else [])
CASES = [(label, path, stem) for label, folder in FOLDERS
         for path, stem, families in conformance.record_files(folder) if "binary" in families]


def test_the_repository_holds_a_binary_record_file_for_every_policy():
    stems = {stem for label, path, stem in CASES if label == "observed"}
    assert {conformance.POLICY_OF[s] for s in stems} == set(gp.policies()) - {"ascend"}   # no Ascend device


@pytest.mark.parametrize("label, path, stem", CASES, ids=[f"{label}-{stem}" for label, _, stem in CASES])
def test_policy_agrees_with_the_framework(label, path, stem):
    policy = conformance.POLICY_OF[stem]
    score = conformance.score_file(gp, path, stem, policy, {"binary"}, show=10)
    assert score.scored > 1000, f"{path}: only {score.scored} scored records"
    assert score.percent >= FLOOR, f"{label} {stem}: {score.percent:.2f}% < {FLOOR}%\n" + "\n".join(score.misses)


def test_the_command_scores_and_fails_below_its_minimum(capsys):
    assert cli.main(["conformance", "--policy", "numpy", "--family", "unary", "--min", "99.9"]) == 0
    out = capsys.readouterr().out
    assert "numpy-default.unary.jsonl.gz" in out and "100.00%" in out and "lowest agreement: 100.00% (numpy" in out
    assert cli.main(["conformance", "--policy", "tf-all", "--family", "unary", "--min", "100"]) == 1
    assert "invert(bool)" in capsys.readouterr().out    # the disagreements it shows


def test_the_command_says_what_it_found_nothing_in(tmp_path, capsys):
    assert cli.main(["conformance", "--data", str(tmp_path)]) == 2
    assert f"no record files to score in {tmp_path}" in capsys.readouterr().out
    assert cli.main(["conformance", "--family", "binary,ternary"]) == 1
    assert "--family 'binary,ternary'" in capsys.readouterr().err


def test_an_unknown_op_disagrees_even_with_a_refusal():
    record = {"op": "no_such_op", "api": "func", "a": {"kind": "t", "dtype": "int8"},
              "b": {"kind": "t", "dtype": "int8"}, "error": "TypeError: no such op"}
    ok, text = conformance.agrees(gp, record, "numpy")
    assert not ok and "gpupromote has no op 'no_such_op'" in text
