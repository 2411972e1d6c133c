"""The shape algebra of the static checker (facts.shapes)."""

from torchlint.static.facts import shapes
from torchlint.static.facts.shapes import BATCH, NEW


def test_broadcast_aligns_from_the_right():
    assert shapes.broadcast((BATCH, 1), (BATCH,)) == (BATCH, BATCH)
    assert shapes.broadcast((BATCH, 8), ()) == (BATCH, 8)
    assert shapes.broadcast(("T", 8), (BATCH, "T", 8)) == (BATCH, "T", 8)
    assert shapes.broadcast((BATCH, None), (BATCH, 4)) == (BATCH, 4)
    assert shapes.broadcast((BATCH, 3), None) is None


def test_misaligned_needs_one_symbol_at_two_positions():
    assert shapes.misaligned((BATCH, 1), (BATCH,)) == BATCH
    assert shapes.misaligned((BATCH,), (BATCH, 3, 32, 32)) == BATCH
    assert shapes.misaligned(("n", "d"), ("n",)) == "n"
    assert shapes.misaligned((BATCH, 1), (BATCH, 1)) is None
    assert shapes.misaligned(("n", "d"), ("d",)) is None  # a column statistic
    assert shapes.misaligned(("n", "n"), ("n",)) is None  # a square matrix: which dim is meant is not known
    assert shapes.misaligned((BATCH, NEW, 8), (NEW, BATCH, 8)) is None  # pairwise on purpose
    assert shapes.misaligned((1000, 1), (1000,)) is None  # literal sizes: equal by chance
    assert shapes.misaligned(None, (BATCH,)) is None


def test_reductions_and_dims():
    assert shapes.reduce((BATCH, 8), (1,), False) == (BATCH,)
    assert shapes.reduce((BATCH, 8), (-1,), True) == (BATCH, 1)
    assert shapes.reduce((BATCH, 8), None, False) == ()
    assert shapes.reduce((BATCH, 8), (2,), False) is None
    assert shapes.squeeze((BATCH, 1), -1) == (BATCH,)
    assert shapes.squeeze((BATCH, 1), None) == (BATCH,)
    assert shapes.squeeze((BATCH, None), None) is None  # the unknown size may be 1
    assert shapes.squeeze((BATCH, 8), 1) == (BATCH, 8)
    assert shapes.unsqueeze((BATCH,), 1) == (BATCH, NEW)
    assert shapes.transpose((BATCH, "T", 8), 1, 2) == (BATCH, 8, "T")
    assert shapes.permute((BATCH, "T", 8), [0, 2, 1]) == (BATCH, 8, "T")
    assert shapes.permute((BATCH, "T", 8), [0, 1]) is None


def test_reshape_and_index():
    assert shapes.reshape((BATCH, 1), ["-1"]) == (BATCH,)
    assert shapes.reshape((BATCH,), ["-1", 1]) == (BATCH, NEW)
    assert shapes.reshape((BATCH, None), ["-1"]) == (None,)
    assert shapes.index((BATCH, 8), [("slice", None), ("int", None)]) == (BATCH,)
    assert shapes.index((BATCH, 8), [("slice", None), ("none", None)]) == (BATCH, NEW, 8)
    assert shapes.index(("T",), [("tensor", (BATCH,))]) == (BATCH,)
    assert shapes.index((BATCH, 3, 4), [("ellipsis", None), ("int", None)]) == (BATCH, 3)
    assert shapes.index((BATCH, 8), [("part", None)]) == (None, 8)
    assert shapes.index((BATCH,), [("int", None), ("int", None)]) is None


def test_matmul_concat_stack_and_text():
    assert shapes.matmul(("n", 8), (8,)) == ("n",)
    assert shapes.matmul((BATCH, "T", 8), (BATCH, 8, "T")) == (BATCH, "T", "T")
    assert shapes.concatenate([(BATCH, 8), (BATCH, 4)], 1) == (BATCH, None)
    assert shapes.stack([(BATCH,), (BATCH,)], 1) == (BATCH, 2)
    assert shapes.text((BATCH, 1)) == "(B, 1)"
    assert shapes.text((BATCH,)) == "(B,)"
    assert shapes.text((NEW, None)) == "(1, ?)"
