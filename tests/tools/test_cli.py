"""The command line, as a user runs it: answers on stdout with status 0; every error as one line
on stderr with a non-zero status, never a traceback."""
import subprocess
import sys

import pytest

from gpupromote.tools import cli


def run(capsys, *argv, status=0):
    assert cli.main(list(argv)) == status
    return capsys.readouterr().out


def test_table_prints_the_grid_in_codes(capsys):
    out = run(capsys, "table", "torch")
    row = next(ln.split() for ln in out.splitlines() if ln.split()[:1] == ["u1"])
    header = out.splitlines()[1].split()
    assert dict(zip(header, row[1:]))["i1"] == "i2"      # uint8 + int8 -> int16
    assert dict(zip(header, row[1:]))["u2"] == "--"      # torch refuses uint16 with uint8


def test_table_with_scalar_columns_as_markdown(capsys):
    out = run(capsys, "table", "jax", "--kinds", "t,s", "--markdown")
    assert "| `300` |" in out.splitlines()[0]
    bool_row = next(ln for ln in out.splitlines() if ln.startswith("| `b1`"))
    assert bool_row.split("|")[-3].strip() == "f4"       # bool[n] + 1.5 -> float32 (weak float)


def test_diff_lists_only_differing_cells(capsys):
    out = run(capsys, "diff", "numpy", "torch")
    assert "i8 + f2     numpy: f8   torch: f2" in out
    assert "i4 + i8" not in out


def test_audit_finds_the_ascend_asymmetry(capsys):
    out = run(capsys, "audit", "ascend")
    assert "float16 + bfloat16 -> float32, but bfloat16 + float16 -> float64" in out
    assert "bfloat16 + float16 -> float64" in out.split("silent widenings to 64-bit")[1]


@pytest.mark.parametrize("expression, policy, result, status", [
    ("int32[3] + 5.5", "torch", "=> float32", 0),
    ("int32[3] + int64[]", "torch", "=> int32", 0),
    ("uint8[3] < -1", "numpy", "compared exactly", 0),
    ("where(bool[3], int8[3], 1.5)", "numpy", "=> float64", 0),
    ("arctan2(int8[3], uint8[3])", "numpy", "=> float16", 0),
    ("int8[3] + 1+2j", "numpy", "=> complex128", 0),
    ("1+2j * int8[3]", "numpy", "=> complex128", 0),
    # the op is refused: the account says why, and the status says so
    ("int64[3] + float32[3]", "paddle", "PromotionError", 1),
    ("int32[3] // 0", "torch", "IntegerDivisionByZero", 1),
])
def test_explain(capsys, expression, policy, result, status):
    assert result in run(capsys, "explain", "--policy", policy, expression, status=status)


@pytest.mark.parametrize("argv", [["int32[3]+5.5"], ["int32[3] +5.5"], ["int32[3]", "+", "5.5"], ["int32[3]", "+5.5"]],
                         ids=["no-spaces", "one-space", "unquoted", "unquoted-no-space"])
def test_explain_reads_an_expression_however_it_is_spaced(capsys, argv):
    out = run(capsys, "explain", "--policy", "torch", *argv)
    assert out.startswith("add(int32[n], 5.5) under policy 'torch'") and "=> float32" in out


# (argv, what stderr says): each a one-line error with status 1 (2 for a usage error)
ERRORS = [
    (["table", "torch", "--op", "frobnicate"], "unknown op 'frobnicate'"),
    (["table", "nope"], "unknown policy 'nope'"),
    (["table", "torch", "--kinds", "t,q"], "--kinds 't,q'"),
    (["diff", "numpy", "nope"], "unknown policy 'nope'"),
    (["audit", "torch", "--op", "nope"], "unknown op 'nope'"),
    (["explain", "--policy", "nope", "int8[3] + 1"], "unknown policy 'nope'"),
    (["explain", "nope[3] + 1"], "unknown dtype 'nope'"),
    (["explain", "frob(int8[3], 1)"], "unknown op 'frob'"),
    (["explain", "int8[3] + None"], "cannot read operand 'None'"),
    (["explain", "int8[3]"], "cannot read 'int8[3]'"),
    (["warmup", "--policy", "nope"], "unknown policy 'nope'"),
    (["kernels", "--op", "add", "--dtypes", "nope"], "unknown dtype 'nope'"),
    (["kernels", "--op", "add", "--dtypes", "int8,int16,int32"], "--op add takes 2 operand(s), --dtypes names 3"),
    (["kernels", "--op", "add", "--dtypes", "int8"], "--op add takes 2 operand(s), --dtypes names 1"),
    (["kernels", "--op", "exp", "--dtypes", "float32,float32"], "--op exp takes 1 operand(s)"),
    (["kernels", "--op", "where", "--dtypes", "bool,int8,int8,int8"], "--op where takes 2 or 3 operand(s)"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize("argv, says", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_every_error_is_one_line_and_a_nonzero_status(argv, says):
    done = subprocess.run([sys.executable, "-m", "gpupromote", *argv], capture_output=True, text=True)
    assert done.returncode == (2 if argv == ["frobnicate"] else 1)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("python -m gpupromote"), done.stderr


@pytest.mark.parametrize("command", [["table", "numpy"], ["diff", "numpy", "torch"], ["audit", "torch"]],
                         ids=lambda c: c[0])
@pytest.mark.parametrize("option, name", [("--svg", "picture"), ("--svg", "picture.png"), ("--png", "picture"),
                                          ("--png", "picture.svg"), ("--svg", "picture.svg.bak")])
def test_a_picture_file_must_end_in_its_format(tmp_path, command, option, name):
    """--svg FILE / --png FILE: the suffix is the format (matplotlib's rule); a name without it, or
    with the other one, is refused before anything is drawn, and nothing is written."""
    done = subprocess.run([sys.executable, "-m", "gpupromote", *command, option, str(tmp_path / name)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"must end in {option.replace('--', '.')}" in lines[0], done.stderr
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_kernels_takes_one_dtype_per_operand(capsys):
    assert cli.main(["kernels", "--op", "where", "--dtypes", "int8,float32"]) == 0   # the condition left out
    assert "op='where', inputs=(gp.bool_, gp.int8, gp.float32)" in capsys.readouterr().out
    assert cli.main(["kernels", "--op", "add", "--dtypes", "int8,float32"]) == 0
    assert cli.main(["kernels", "--op", "add", "--dtypes", "int8,float32,int16"]) == 1


def test_a_closed_pipe_ends_the_command_quietly():
    """`python -m gpupromote table torch | head -0`: the reader is gone before the first line."""
    proc = subprocess.Popen([sys.executable, "-m", "gpupromote", "table", "torch", "--kinds", "t,z,s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()   # long before the interpreter has started and printed anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert err == "", err
