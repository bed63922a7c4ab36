"""Huawei Ascend aclnn (CANN), as its type promotion table documents it (seed document 004).

The table is reproduced cell by cell, its asymmetric cells included (row = first input):
bfloat16 + float16 is float64 while float16 + bfloat16 is float32, and float64 + complex32 is
complex64. bool with anything but uint16/32/64 gives the other dtype; uint16, uint32 and uint64
promote only with themselves. No Ascend device is at hand to observe, so the document is the
truth. Python scalars and 0-d tensors take part as in PyTorch (torch_npu computes the result
dtype with PyTorch's categories, then calls aclnn with the table's pair).
"""
from dataclasses import replace

from ...core import dtypes as D
from ..lattice import PairTable, parse_grid
from ..rules.pytorch import AscendRules
from .pytorch import TORCH

# Row = first input, column = second input; -- = NA (refused). The 12 x 12 block of f4 .. c16 is
# the document's table verbatim; the b1 / u2 / u4 / u8 rows and columns are its stated rules.
PROMOTE = """
      f4  f2  f8  bf  i1  u1  i2  i4  i8  c4  c8 c16  b1  u2  u4  u8
  f4  f4  f4  f8  f4  f4  f4  f4  f4  f4  c8  c8 c16  f4  --  --  --
  f2  f4  f2  f8  f4  f2  f2  f2  f2  f2  c4  c8 c16  f2  --  --  --
  f8  f8  f8  f8  f8  f8  f8  f8  f8  f8  c8  c8 c16  f8  --  --  --
  bf  f4  f8  f8  bf  bf  bf  bf  bf  bf  c4  c8 c16  bf  --  --  --
  i1  f4  f2  f8  bf  i1  i2  i2  i4  i8  c4  c8 c16  i1  --  --  --
  u1  f4  f2  f8  bf  i2  u1  i2  i4  i8  c4  c8 c16  u1  --  --  --
  i2  f4  f2  f8  bf  i2  i2  i2  i4  i8  c4  c8 c16  i2  --  --  --
  i4  f4  f2  f8  bf  i4  i4  i4  i4  i8  c4  c8 c16  i4  --  --  --
  i8  f4  f2  f8  bf  i8  i8  i8  i8  i8  c4  c8 c16  i8  --  --  --
  c4  c8  c4  c8  c4  c4  c4  c4  c4  c4  c4  c8 c16  c4  --  --  --
  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8 c16  c8  --  --  --
 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16  --  --  --
  b1  f4  f2  f8  bf  i1  u1  i2  i4  i8  c4  c8 c16  b1  --  --  --
  u2  --  --  --  --  --  --  --  --  --  --  --  --  --  u2  --  --
  u4  --  --  --  --  --  --  --  --  --  --  --  --  --  --  u4  --
  u8  --  --  --  --  --  --  --  --  --  --  --  --  --  --  --  u8
"""

_code = lambda c: D.BY_CODE[c].name  # noqa: E731

ASCEND = replace(
    TORCH,
    name="ascend",
    framework="Ascend aclnn",
    emulates="Huawei Ascend CANN aclnn type promotion table (documented, not observed)",
    source="https://www.hiascend.com/document/detail/zh/Atlas200IDKA2DeveloperKit/23.0.RC2/"
           "Application%20Development%20Guide/aadgc/aclcppdevg_03_0158.html (CANN aclnn, 互推导关系)",
    promote=PairTable(parse_grid(PROMOTE, _code)),
    dtypes=frozenset(_code(c) for c in "f4 f2 f8 bf i1 u1 i2 i4 i8 c4 c8 c16 b1 u2 u4 u8".split()),
    rules=AscendRules(),
)
