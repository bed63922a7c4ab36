"""`python -m gpupromote explain`: a whole expression, step by step, under one policy or several.

    python -m gpupromote explain "int32[3] * 2.5 + float16[3]"
    python -m gpupromote explain --policy numpy,torch,paddle "maximum(int8[3], 2.0) + 1"

An expression is Python: operands are arrays written ``dtype[shape]`` (``int32[3]``, ``int64[]`` a
0-d array) or Python literals (``True``, ``-1``, ``2.5``, ``1+2j``); the operators ``+ - * / // % **
& | ^ << >> == != < <= > >=`` and unary ``- + ~``; calls of gp's ops by name or alias
(``sqrt(x)``, ``maximum(a, 2.0)``, ``where(bool[3], a, b)``, ``clip(x, None, 1)``). Python reads it
(its precedence, its constant arithmetic: ``1+2j`` is one complex scalar), and each op applied to an
array is one step. An operator is resolved in the operator form, a call in the function form, as
gp.Array's operators and gp.<op> are (promotion/refusals.py: torch.maximum(x, 2.0) raises where
x + 2.0 runs).

One policy and one step: gp.explain's account. Otherwise a table, a row per step and a column per
policy (the result dtype, ``refused`` where the policy refuses the step, ``-`` where a step before
it was refused), then gp.explain's account of each step under each policy.
"""
from __future__ import annotations

import ast
import operator as pyop
import re

from ..core import dtypes as D
from ..core.ops import PYTHON_OPERATORS, op_named

__all__ = ["parse", "Step", "explain_expression"]

_SCALARS = (bool, int, float, complex)
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
           ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_OP_OF = {symbol: op for op, symbol in PYTHON_OPERATORS.items()}
_UNARY = {ast.USub: ("-", "negative", pyop.neg), ast.UAdd: ("+", "positive", pyop.pos),
          ast.Invert: ("~", "invert", pyop.invert)}
# Python's own arithmetic, for operators between two Python scalars (1+2j is one complex scalar)
_PYTHON = {"+": pyop.add, "-": pyop.sub, "*": pyop.mul, "/": pyop.truediv, "//": pyop.floordiv, "%": pyop.mod,
           "**": pyop.pow, "&": pyop.and_, "|": pyop.or_, "^": pyop.xor, "<<": pyop.lshift, ">>": pyop.rshift,
           "==": pyop.eq, "!=": pyop.ne, "<": pyop.lt, "<=": pyop.le, ">": pyop.gt, ">=": pyop.ge}
_ARRAY = re.compile(r"\b([A-Za-z_]\w*)\s*\[([^\]]*)\]")


class Array:
    """An array operand as written: its dtype and number of dimensions."""
    def __init__(self, dtype, ndim, text):
        self.dtype, self.ndim, self.text = dtype, ndim, text


class Step:
    """One op of the expression: ``op`` on ``args`` (Array, Python scalars, earlier Steps, None for
    clip's missing bound), in ``form``; ``number`` counts from 1."""
    def __init__(self, op, args, form, text, number):
        self.op, self.args, self.form, self.text, self.number = op, args, form, text, number


def parse(text):
    """The expression's steps, in the order they run (the last one is the result)."""
    arrays = {}

    def placeholder(m):
        name = f"_gp_operand_{len(arrays)}"
        ndim = len([s for s in m[2].split(",") if s.strip()])
        arrays[name] = Array(D.dtype(m[1]), ndim, f"{m[1]}[{m[2].strip()}]")
        return name

    source = _ARRAY.sub(placeholder, " ".join(text.split()))
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot read {text!r}: {exc.msg}") from None
    steps = []
    result = _Reader(arrays, steps, text).read(tree)
    if not steps:
        raise ValueError(f"cannot read {text!r}: no op on an array; write e.g. 'int32[3] + 5.5' or "
                         f"'arctan2(int8[3], uint8[])'")
    if steps[-1] is not result:
        raise ValueError(f"cannot read {text!r}: the result is not an array")
    return steps


class _Reader:
    def __init__(self, arrays, steps, text):
        self.arrays, self.steps, self.text = arrays, steps, text

    def _fail(self, node, what):
        written = ast.unparse(node)
        for name, array in self.arrays.items():
            written = written.replace(name, array.text)
        raise ValueError(f"cannot read operand {written!r} in {self.text!r}: {what}")

    def read(self, node):
        if isinstance(node, ast.Constant):
            if type(node.value) not in _SCALARS:
                self._fail(node, "write int32[3], int64[] or a Python bool/int/float/complex")
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.arrays:
                return self.arrays[node.id]
            self._fail(node, "write int32[3], int64[] or a Python bool/int/float/complex")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._operator(_BINARY[type(node.op)], [self.read(node.left), self.read(node.right)])
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _BINARY:
            return self._operator(_BINARY[type(node.ops[0])], [self.read(node.left), self.read(node.comparators[0])])
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            symbol, op, python = _UNARY[type(node.op)]
            x = self.read(node.operand)
            if type(x) in _SCALARS:
                return python(x)   # Python computes it: -1 is a Python int
            return self._step(op, [x], "operator", f"{symbol}{_shown(x)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            op = op_named(node.func.id).name
            args = [None if isinstance(a, ast.Constant) and a.value is None and op == "clip" else self.read(a)
                    for a in node.args]
            return self._step(op, args, "function", f"{node.func.id}({', '.join(map(_shown, args))})")
        self._fail(node, "use arrays, Python literals, the Python operators and calls of gp's ops")

    def _operator(self, symbol, args):
        if all(type(a) in _SCALARS for a in args):
            return _PYTHON[symbol](*args)   # Python's own arithmetic on two Python scalars
        return self._step(_OP_OF[symbol], args, "operator", f" {symbol} ".join(map(_shown, args)))

    def _step(self, op, args, form, text):
        step = Step(op, args, form, text, len(self.steps) + 1)
        self.steps.append(step)
        return step


def _shown(x):
    if isinstance(x, Step):
        return f"({x.number})"
    if isinstance(x, Array):
        return x.text
    return "None" if x is None else repr(x)


def _evaluate(steps, policy):
    """Per step: (the gp.explain account, the result dtype name or "refused" / "-")."""
    from ..dispatch.api import explain, result_type, spec
    done, out = {}, []
    for step in steps:
        if any(isinstance(a, Step) and done.get(a.number) is None for a in step.args):
            done[step.number] = None
            out.append((None, "-"))
            continue
        args = [spec(done[a.number].dtype, done[a.number].ndim) if isinstance(a, Step) else
                spec(a.dtype, a.ndim) if isinstance(a, Array) else a for a in step.args]
        account = explain(*args, op=step.op, policy=policy, form=step.form)
        try:
            dtype = result_type(*args, op=step.op, policy=policy, form=step.form)
        except (TypeError, ValueError, ArithmeticError):
            done[step.number] = None
            out.append((account, "refused"))
            continue
        ndim = max((a.ndim for a in args if hasattr(a, "ndim")), default=0)
        done[step.number] = Array(dtype, ndim, dtype.name)
        out.append((account, dtype.name))
    return out


def explain_expression(text, policies) -> tuple[str, bool]:
    """The account of ``text`` under ``policies`` (names), and whether every policy takes every step."""
    steps = parse(text)
    results = {p: _evaluate(steps, p) for p in policies}
    taken = all(r[1] not in ("refused", "-") for rows in results.values() for r in rows)
    if len(steps) == 1 and len(policies) == 1:
        return results[policies[0]][0][0], taken
    width = max(len("expression"), *(len(s.text) for s in steps))
    columns = [max(len(p), *(len(results[p][i][1]) for i in range(len(steps)))) for p in policies]
    lines = [f"{' '.join(text.split())} under {', '.join(policies)}", "",
             f"step  {'expression':<{width}}  " + "  ".join(f"{p:<{w}}" for p, w in zip(policies, columns)).rstrip()]
    for i, step in enumerate(steps):
        cells = "  ".join(f"{results[p][i][1]:<{w}}" for p, w in zip(policies, columns))
        lines.append(f"{step.number:<4}  {step.text:<{width}}  {cells}".rstrip())
    for i, step in enumerate(steps):
        lines += ["", f"step {step.number}: {step.text} ({step.form} form)"]
        for p in policies:
            account, result = results[p][i]
            if account is None:
                lines.append(f"  {p}: not run: a step before it is refused")
                continue
            lines += [f"  {line}" for line in account.splitlines()]
    return "\n".join(lines), taken
