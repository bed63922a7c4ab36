"""`python -m gpupromote explain` on whole expressions and several policies side by side
(gpupromote/tools/expression.py): Python reads the expression, each op on an array is a step, operators
resolve in the operator form and calls in the function form, and a refusal shows as such in its
policy's column (the steps after it as "-"), with gp.explain's account of each step below."""
import pytest

from gpupromote.tools import cli
from gpupromote.tools.expression import parse


def run(capsys, *argv, status=0):
    assert cli.main(list(argv)) == status
    return capsys.readouterr().out


def _table(out):
    """The header line and the step table (up to the first account)."""
    return out.split("\n\nstep 1:")[0]


TABLES = [
    ("int32[3] * 2.5 + float16[3]", "numpy,torch,paddle", 0, """\
int32[3] * 2.5 + float16[3] under numpy, torch, paddle

step  expression        numpy    torch    paddle
1     int32[3] * 2.5    float64  float32  float32
2     (1) + float16[3]  float64  float32  float32"""),
    # torch.maximum(x, 2.0) and paddle.maximum(x, 2.0) raise; step 2 is never reached there
    ("maximum(int8[3], 2.0) + 1", "numpy,torch,paddle", 1, """\
maximum(int8[3], 2.0) + 1 under numpy, torch, paddle

step  expression             numpy    torch    paddle
1     maximum(int8[3], 2.0)  float64  refused  refused
2     (1) + 1                float64  -        -"""),
    # the operator takes what the function refuses: 2 == t runs, torch.eq(2, t) raises
    ("(2 == int64[3]) & eq(2, int64[3])", "numpy,torch", 1, """\
(2 == int64[3]) & eq(2, int64[3]) under numpy, torch

step  expression       numpy  torch
1     2 == int64[3]    bool   bool
2     eq(2, int64[3])  bool   refused
3     (1) & (2)        bool   -"""),
    # Python's precedence and its own arithmetic on Python scalars: -1 and 1+2j are scalars; no
    # complex floor_divide in NumPy or JAX
    ("where(bool[3], -int8[3], 1+2j) // -1", "numpy,jax", 1, """\
where(bool[3], -int8[3], 1+2j) // -1 under numpy, jax

step  expression                   numpy       jax
1     -int8[3]                     int8        int8
2     where(bool[3], (1), (1+2j))  complex128  complex64
3     (2) // -1                    refused     refused"""),
]


@pytest.mark.parametrize("expression, policies, status, table", TABLES, ids=[t[0] for t in TABLES])
def test_the_step_table_of_an_expression(capsys, expression, policies, status, table):
    assert _table(run(capsys, "explain", "--policy", policies, expression, status=status)) == table


def test_each_step_is_explained_under_each_policy_and_a_refusal_says_the_fix(capsys):
    out = run(capsys, "explain", "--policy", "numpy,paddle", "int8[3] & 1", status=1)
    assert out == """\
int8[3] & 1 under numpy, paddle

step  expression   numpy  paddle
1     int8[3] & 1  int8   refused

step 1: int8[3] & 1 (operator form)
  bitwise_and(int8[n], 1) under policy 'numpy':
    - policy numpy: NumPy 2.4 (NEP 50) with ml_dtypes 0.6 for bfloat16 and float8
    - op bitwise_and: promotion kind DEFAULT, defined on kinds 'bui'
    - strong dtypes int8 -> int8
    - weak Python int with int8 -> int8
    - result int8, computed in int8, folded scalars kept in int8
    => int8
  bitwise_and(int8[n], 1) under policy 'paddle':
    - policy paddle: PaddlePaddle 3.3.1, dynamic mode
    - op bitwise_and: promotion kind DEFAULT, defined on kinds 'bui'
    - operator form (&): no Python scalar where PaddlePaddle wants a tensor (second: bool, int, float, complex)
    - => PromotionError: policy 'paddle' refuses bitwise_and(int8[n], 1 (python int)): x & 1 raises in \
PaddlePaddle: its second operand must be a tensor, not a Python int. Pass a tensor: x & \
paddle.to_tensor(1, dtype=x.dtype); in gpupromote a 0-d array: x & np.asarray(1, 'int8')
"""


def test_a_step_after_a_refusal_is_not_run(capsys):
    out = run(capsys, "explain", "--policy", "torch", "hypot(float32[3], 1.0) * 2", status=1)
    assert "\n  torch: not run: a step before it is refused\n" in out.split("step 2: (1) * 2 (operator form)")[1] + "\n"


def test_one_policy_and_one_step_print_gp_explain_as_it_is(capsys):
    out = run(capsys, "explain", "--policy", "torch", "maximum(float32[3], 2.0)", status=1)
    assert out.startswith("maximum(float32[n], 2.0) under policy 'torch':\n")
    assert "torch.maximum(x, torch.tensor(2.0))" in out


@pytest.mark.parametrize("expression, steps", [
    ("1+2j * int8[3]", ["2j * int8[3]", "1 + (1)"]),            # Python's precedence
    ("int8[3] + (1+2j)", ["int8[3] + (1+2j)"]),                  # Python computes the scalar
    ("sqrt(-float16[]) < 1", ["-float16[]", "sqrt((1))", "(2) < 1"]),
    ("clip(int8[3], None, 2)", ["clip(int8[3], None, 2)"]),
    ("atan2(int8[3, 4], uint8[])", ["atan2(int8[3, 4], uint8[])"]),
])
def test_parse_reads_python(expression, steps):
    assert [s.text for s in parse(expression)] == steps


@pytest.mark.parametrize("expression, says", [
    ("int8[3] + None", "cannot read operand 'None'"),
    ("int8[3]", "cannot read 'int8[3]': no op on an array"),
    ("1 + 2", "cannot read '1 + 2': no op on an array"),
    ("nope[3] + 1", "unknown dtype 'nope'"),
    ("frob(int8[3], 1)", "unknown op 'frob'"),
    ("int8[3] < 1 < 2", "cannot read operand"),
    ("int8[3] +", "cannot read 'int8[3] +'"),
])
def test_what_cannot_be_read_is_said(expression, says):
    with pytest.raises((ValueError, TypeError)) as info:
        parse(expression)
    assert says in str(info.value)
