"""Golden promotion tables: what the real frameworks return for two arrays with dimensions
(observed: tests/observed), one literal grid per policy, rows = first operand. A failure
prints only the differing cells. ``--`` is a refused promotion. (NumPy's and the Array API's
grids are computed live from NumPy + ml_dtypes and array-api-strict: tests/oracle/test_live_grids.py.)"""
import pytest

from tests.support.grid import assert_grid

# torch's CPU build lacks add kernels for uint16/32/64 and float8, so the framework raises on
# the diagonal of those dtypes; promoteTypes itself gives the dtype, which is what we hold.
TORCH_ADD = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c4  c8 c16
  b1  b1  u1  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  u1  u1  u1  --  --  --  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  u2  --  --  u2  --  --  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  u4  --  --  --  u4  --  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  u8  --  --  --  --  u8  --  --  --  --  --  --  f2  bf  f4  f8  --  --  --
  i1  i1  i2  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i2  i2  i2  --  --  --  i2  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i4  i4  i4  --  --  --  i4  i4  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  i8  i8  i8  --  --  --  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  e4  --  --  --  --  --  --  --  --  --  e4  --  --  --  --  --  --  --  --
  e5  --  --  --  --  --  --  --  --  --  --  e5  --  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f4  f4  f8  c4  c8 c16
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  f4  bf  f4  f8  c8  c8 c16
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f8  c8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  f8 c16 c16 c16
  c4  c4  c4  --  --  --  c4  c4  c4  c4  --  --  c4  c8  c8 c16  c4  c8 c16
  c8  c8  c8  --  --  --  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8  c8 c16
 c16 c16 c16  --  --  -- c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16 c16
"""

# PyTorch's categories: a 0-d tensor (column) only counts when its kind is higher. Rows u2/u4/u8
# and e4/e5 hold the promoted dtype where torch's CPU build then lacks the add kernel.
TORCH_ADD_ZERO_DIM = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c4  c8 c16
  b1  b1  u1  --  --  --  i1  i2  i4  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  u1  u1  u1  u1  u1  u1  u1  u1  u1  u1  --  --  f2  bf  f4  f8  c4  c8 c16
  u2  u2  u2  u2  u2  u2  u2  u2  u2  u2  --  --  f2  bf  f4  f8  c4  c8 c16
  u4  u4  u4  u4  u4  u4  u4  u4  u4  u4  --  --  f2  bf  f4  f8  c4  c8 c16
  u8  u8  u8  u8  u8  u8  u8  u8  u8  u8  --  --  f2  bf  f4  f8  c4  c8 c16
  i1  i1  i1  i1  i1  i1  i1  i1  i1  i1  --  --  f2  bf  f4  f8  c4  c8 c16
  i2  i2  i2  i2  i2  i2  i2  i2  i2  i2  --  --  f2  bf  f4  f8  c4  c8 c16
  i4  i4  i4  i4  i4  i4  i4  i4  i4  i4  --  --  f2  bf  f4  f8  c4  c8 c16
  i8  i8  i8  i8  i8  i8  i8  i8  i8  i8  --  --  f2  bf  f4  f8  c4  c8 c16
  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  --  --  --
  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  c4  c4  c4
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  c8  c8  c8
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  c8  c8  c8
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8 c16 c16 c16
  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4  c4
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
"""

JAX_ADD = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  u1  u2  u4  u4  i1  i2  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  u1  u1  u1  u2  u4  u4  i2  i2  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  u2  u2  u2  u2  u4  u4  i4  i4  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  u4  u4  u4  u4  u4  u4  i4  i4  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  u8  u4  u4  u4  u4  u4  i4  i4  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  i1  i1  i2  i4  i4  i4  i1  i2  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  i2  i2  i2  i4  i4  i4  i2  i2  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  i4  i4  i4  i4  i4  i4  i4  i4  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  i8  i4  i4  i4  i4  i4  i4  i4  i4  i4  e4  e5  f2  bf  f4  f4  c8  c8
  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  --  --  --  --  --  --  --
  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  --  e5  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f4  f4  f4  c8  c8
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  f4  bf  f4  f4  c8  c8
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f4  c8  c8
  f8  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f4  c8  c8
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8  c8  c8  c8
 c16  c8  c8  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8  c8  c8  c8
"""

JAX_X64_ADD = """
      b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  b1  b1  u1  u2  u4  u8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u1  u1  u1  u2  u4  u8  i2  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u2  u2  u2  u2  u4  u8  i4  i4  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u4  u4  u4  u4  u4  u8  i8  i8  i8  i8  e4  e5  f2  bf  f4  f8  c8 c16
  u8  u8  u8  u8  u8  u8  f8  f8  f8  f8  e4  e5  f2  bf  f4  f8  c8 c16
  i1  i1  i2  i4  i8  f8  i1  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  i2  i2  i2  i4  i8  f8  i2  i2  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  i4  i4  i4  i4  i8  f8  i4  i4  i4  i8  e4  e5  f2  bf  f4  f8  c8 c16
  i8  i8  i8  i8  i8  f8  i8  i8  i8  i8  e4  e5  f2  bf  f4  f8  c8 c16
  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  e4  --  --  --  --  --  --  --
  e5  e5  e5  e5  e5  e5  e5  e5  e5  e5  --  e5  --  --  --  --  --  --
  f2  f2  f2  f2  f2  f2  f2  f2  f2  f2  --  --  f2  f4  f4  f8  c8 c16
  bf  bf  bf  bf  bf  bf  bf  bf  bf  bf  --  --  f4  bf  f4  f8  c8 c16
  f4  f4  f4  f4  f4  f4  f4  f4  f4  f4  --  --  f4  f4  f4  f8  c8 c16
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  --  --  f8  f8  f8  f8 c16 c16
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  --  --  c8  c8  c8 c16  c8 c16
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16  --  -- c16 c16 c16 c16 c16 c16
"""

@pytest.mark.parametrize("policy, op, table, zero_dim_column", [
    ("torch", "add", TORCH_ADD, False),
    ("torch", "add", TORCH_ADD_ZERO_DIM, True),
    ("jax", "add", JAX_ADD, False),
    ("jax-x64", "add", JAX_X64_ADD, False),
], ids=["torch-add", "torch-add-0d", "jax-add", "jax-x64-add"])
def test_golden_table(policy, op, table, zero_dim_column):
    assert_grid(table, policy, op, zero_dim_column=zero_dim_column)
