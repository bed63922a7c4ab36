"""The promotion vocabulary is checked when it is built: a lattice with a cycle or an ambiguous
least upper bound, a grid with a missing cell, an unknown promotion kind or dtype category all
raise at construction (at import, for the tables gpupromote ships), never on some later call."""
import pytest

from gpupromote.core.kinds import PromotionKind, categories
from gpupromote.promotion.lattice import Lattice, PairTable, parse_grid
from gpupromote.core.ops import Op


def test_lattice_joins_to_the_least_upper_bound():
    diamond = Lattice({"b": ["i", "u"], "i": ["f"], "u": ["f"], "f": []})
    assert diamond.join("i", "u") == "f"
    assert diamond.join("b", "i") == "i"
    assert diamond.join_all(["b", "u", "i"]) == "f"


def test_lattice_without_common_bound_refuses():
    assert Lattice({"a": [], "b": []}).join("a", "b") is None


def test_lattice_cycle_raises():
    with pytest.raises(ValueError, match="cycle"):
        Lattice({"a": ["b"], "b": ["c"], "c": ["a"]})


def test_lattice_ambiguous_least_upper_bound_raises():
    # a and b both sit below x and y, and neither x nor y is below the other
    with pytest.raises(ValueError, match="no unique least upper bound"):
        Lattice({"a": ["x", "y"], "b": ["x", "y"], "x": [], "y": []})


def test_lattice_edge_to_unknown_node_raises():
    with pytest.raises(ValueError, match="not a node"):
        Lattice({"a": ["b"]})


def test_grid_row_of_the_wrong_length_raises():
    with pytest.raises(ValueError, match="has 1 cells for 2 columns"):
        parse_grid("""
              a  b
           a  a  b
           b  b
        """, str)


def test_pair_table_cell_must_be_a_node():
    with pytest.raises(ValueError, match="not a node"):
        PairTable({("a", "a"): "a", ("a", "b"): "z", ("b", "a"): "a", ("b", "b"): "b"})


def test_unknown_promotion_kind_raises():
    with pytest.raises(ValueError, match="INT_TO_FLAOT"):
        Op("true_divide", 2, "INT_TO_FLAOT", "fc", "in0 / in1")
    assert Op("true_divide", 2, "INT_TO_FLOAT", "fc", "in0 / in1").kind is PromotionKind.INT_TO_FLOAT


@pytest.mark.parametrize("text", ["fb", "x", "bb", "uif c"])
def test_unknown_or_unordered_category_raises(text):
    with pytest.raises(ValueError, match="not a dtype category"):
        categories(text)
