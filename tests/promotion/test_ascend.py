"""The Ascend aclnn policy is the CANN document's table (docs/policies/ascend.md links it), cell by cell, in
both orders: row = first input. Written here in the document's own dtype spelling."""
import pytest

import gpupromote as gp

# The document's table, verbatim (NA = refused).
DOCUMENT = """
      f32  f16  f64  bf16 s8   u8   s16  s32  s64  c32  c64  c128
f32   f32  f32  f64  f32  f32  f32  f32  f32  f32  c64  c64  c128
f16   f32  f16  f64  f32  f16  f16  f16  f16  f16  c32  c64  c128
f64   f64  f64  f64  f64  f64  f64  f64  f64  f64  c64  c64  c128
bf16  f32  f64  f64  bf16 bf16 bf16 bf16 bf16 bf16 c32  c64  c128
s8    f32  f16  f64  bf16 s8   s16  s16  s32  s64  c32  c64  c128
u8    f32  f16  f64  bf16 s16  u8   s16  s32  s64  c32  c64  c128
s16   f32  f16  f64  bf16 s16  s16  s16  s32  s64  c32  c64  c128
s32   f32  f16  f64  bf16 s32  s32  s32  s32  s64  c32  c64  c128
s64   f32  f16  f64  bf16 s64  s64  s64  s64  s64  c32  c64  c128
c32   c64  c32  c64  c32  c32  c32  c32  c32  c32  c32  c64  c128
c64   c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128
c128  c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
"""

# The document's spelling: s8 = int8, u8 = uint8 (gpupromote's 2-char code u8 is uint64).
_NAMES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16", "s8": "int8",
          "u8": "uint8", "s16": "int16", "s32": "int32", "s64": "int64", "c32": "complex32",
          "c64": "complex64", "c128": "complex128", "bool": "bool", "u16": "uint16", "u32": "uint32",
          "u64": "uint64"}
_ROWS = [[_NAMES.get(c, c) for c in ln.split()] for ln in DOCUMENT.strip().splitlines()]
_COLS = _ROWS[0]
_CELLS = [(row[0], col, cell) for row in _ROWS[1:] for col, cell in zip(_COLS, row[1:])]


def _promote(a, b):
    try:
        return gp.promote_types(a, b, policy="ascend")
    except gp.PromotionError:
        return None


def test_document_table_cell_by_cell():
    diffs = [f"  {a} + {b}: document {want}, got {_promote(a, b)}"
             for a, b, want in _CELLS if _promote(a, b) != gp.dtype(want)]
    assert not diffs, f"{len(diffs)} of {len(_CELLS)} cells differ\n" + "\n".join(diffs)


@pytest.mark.parametrize("a, b, ab, ba", [
    ("bfloat16", "float16", "float64", "float32"),
    ("float64", "complex32", "complex64", "complex64"),
    ("bfloat16", "complex32", "complex32", "complex32"),
])
def test_asymmetric_cells_are_kept(a, b, ab, ba):
    assert _promote(a, b) == gp.dtype(ab) and _promote(b, a) == gp.dtype(ba)


@pytest.mark.parametrize("other", _COLS)
def test_bool_gives_the_other_dtype(other):
    assert _promote("bool", other) == gp.dtype(other) == _promote(other, "bool")


@pytest.mark.parametrize("u", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("other", _COLS + ["bool", "uint16", "uint32", "uint64"])
def test_wide_unsigned_only_with_itself(u, other):
    want = gp.dtype(u) if other == u else None
    assert _promote(u, other) == want and _promote(other, u) == want
