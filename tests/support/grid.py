"""Literal N x N grids of 2-char dtype codes and example strings, and the per-cell diff tests
print on failure."""
import re

import gpupromote as gp


def parse(table: str):
    lines = [ln.split() for ln in table.strip().splitlines() if ln.strip()]
    cols = lines[0]
    return {(row[0], col): cell for row in lines[1:] for col, cell in zip(cols, row[1:])}


def observed(policy, op, a, b, zero_dim_column=False):
    """The 2-char code gpupromote gives for arrays a, b (codes), or -- when it refuses."""
    x = gp.spec(gp.dtype(a))
    y = gp.spec(gp.dtype(b), ndim=0 if zero_dim_column else 1)
    try:
        return gp.result_type(x, y, op=op, policy=policy).code
    except (TypeError, OverflowError):
        return "--"


def assert_grid(table, policy, op, zero_dim_column=False):
    expected = parse(table)
    diffs = []
    for (a, b), want in expected.items():
        got = observed(policy, op, a, b, zero_dim_column)
        if got != want:
            diffs.append(f"  {op}({a}, {b}{'[]' if zero_dim_column else ''}): expected {want}, got {got}")
    assert not diffs, f"policy {policy!r}: {len(diffs)} of {len(expected)} cells differ\n" + "\n".join(diffs)


# Example strings: one case a line, `op(operand, operand)   expected`, where an operand is
# `int32[n]` (an array), `int64[]` (a 0-d array) or a Python literal, and expected is a dtype
# name, OverflowError, ZeroDivisionError or `error` (any refusal).
_LINE = re.compile(r"^\s*(\w+)\((.*)\)\s+(\S+)\s*(?:#.*)?$")
_OPERAND = re.compile(r"^(\w+)\[(n?)\]$")


def _example_operand(text):
    m = _OPERAND.match(text.strip())
    if m:
        return gp.spec(m.group(1), ndim=1 if m.group(2) else 0)
    return eval(text, {"__builtins__": {}}, {})  # a Python literal: True, 300, 1.5, 1+2j


def _outcome(policy, op, operands):
    try:
        return gp.result_type(*operands, op=op, policy=policy).name
    except OverflowError:
        return "OverflowError"
    except ZeroDivisionError:   # gp.IntegerDivisionByZero is one
        return "ZeroDivisionError"
    except Exception:  # noqa: BLE001 - any refusal
        return "error"


def assert_examples(text, policy):
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.strip().startswith("#")]
    diffs = []
    for line in lines:
        m = _LINE.match(line)
        assert m, f"unparsable example: {line!r}"
        op, args, want = m.groups()
        got = _outcome(policy, op, [_example_operand(a) for a in args.split(",")])
        if got != want and not (want == "error" and got in ("OverflowError", "ZeroDivisionError")):
            diffs.append(f"  {op}({args}): expected {want}, got {got}")
    assert not diffs, f"policy {policy!r}: {len(diffs)} of {len(lines)} examples differ\n" + "\n".join(diffs)
