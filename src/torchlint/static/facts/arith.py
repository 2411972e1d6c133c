"""What arithmetic does to the facts about its operands (sign, probability, float16, bounds)."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts.values import ANY, NONNEG, NOTHING, POS, UNKNOWN, Value, constant
from torchlint.static.interpret.context import FileContext


def square(base: Value, node, half: bool) -> Value:
    """x**2 is 0 exactly where x is: evidence only when x itself can be 0 (a difference, a ReLU...)."""
    return Value(op="square", sign=NONNEG if base.hazard else UNKNOWN, desc="a square", half=half, node=node)


def arith(op: str, left: Value, right: Value, left_node, right_node, node, ctx: FileContext, fp16: bool) -> Value:
    """The value of `left <op> right` (op is the LibCST operator class name)."""
    node = node if node is not None else left_node
    half = left.half or right.half
    if op == "Add":
        return _add(left, right, node, half)
    if op == "Subtract":
        return _subtract(left, right, left_node, right_node, node, half, ctx)
    if op == "Multiply":
        return _multiply(left, right, left_node, right_node, node, half, ctx)
    if left.op == "const" and right.op == "const" and left.const is not None and right.const is not None:
        folded = _fold(op, left.const, right.const)
        if folded is not None:
            return constant(folded, node)
    if op == "Divide":
        if right.op == "const" and right.const and right.const > 0:
            return left.but(node=node, const=None, eps=None) if not left.kind else NOTHING
        if left.sign == POS and right.sign == POS:
            return Value(op="div", sign=POS, half=half, node=node)
        if left.sign == NONNEG and right.sign == POS:
            return Value(op="div", sign=NONNEG, desc=left.desc, half=half, node=node)
        return Value(op="div", half=half, unbounded=left.unbounded, node=node)
    if op == "Power":
        exponent = right.const if right.op == "const" else None
        if exponent is not None and exponent == int(exponent) and int(exponent) % 2 == 0 and exponent > 0:
            return square(left, node, half)
        if exponent == 0.5:
            return Value(op="sqrt", sign=POS if left.sign == POS else NONNEG, half=half, node=node)
        return Value(half=half, node=node)
    if op == "MatrixMultiply":
        return Value(op="matmul", unbounded=True, half=half or fp16,
                     desc="a matmul output", node=node)
    return NOTHING


def _add(left: Value, right: Value, node, half: bool) -> Value:
    signs = (left.sign, right.sign)
    if left.kind or right.kind:
        return NOTHING
    if left.op == "const" and right.op == "const" and left.const is not None and right.const is not None:
        return constant(left.const + right.const, node)
    if signs == (POS, POS):
        return Value(op="add", sign=POS, half=half, node=node)
    for guard, guarded in ((left, right), (right, left)):
        if guard.sign == POS and guarded.sign == NONNEG:
            # The eps is the value itself wherever `guarded` is exactly 0: track it only where that is routine.
            eps = guard.const if guarded.zero else None
            return Value(op="add", sign=POS, eps=eps, desc=guarded.desc, half=half, node=node)
    if signs == (NONNEG, NONNEG):
        return Value(op="add", sign=NONNEG, desc=left.desc or right.desc, half=half, node=node)
    return Value(op="add", half=half, unbounded=left.unbounded or right.unbounded, node=node)


def _fold(op: str, left: float, right: float) -> float | None:
    try:
        if op == "Divide":
            return left / right
        if op == "Power" and abs(right) < 64:
            return float(left**right)
    except (ZeroDivisionError, OverflowError, TypeError, ValueError):
        return None
    return None


def _subtract(left: Value, right: Value, left_node, right_node, node, half, ctx) -> Value:
    if left.kind or right.kind:
        return NOTHING
    if left.op == "const" and right.op == "const" and left.const is not None and right.const is not None:
        return constant(left.const - right.const, node)
    if left.op == "const" and left.const == 1 and right.prob:
        return Value(op="complement", sign=NONNEG, prob=True, half=half, node=node,
                     desc="one minus a probability")
    if right.op == "min" and right.of is not None and right.of is left and left is not NOTHING:
        return Value(op="shift", sign=NONNEG, zero=True, half=half, node=node,
                     desc="a shift by its own minimum")
    if right.op == "max" and right.of is not None and (right.of is left or right.of.node is left.node):
        return Value(op="shift", shifted=True, half=half, node=node)
    if left.op in ("max", "min") and right.op in ("max", "min"):
        return Value(op="range", sign=NONNEG, desc="a max - min range",
                     half=half, node=node)
    if left.op == "const" or right.op == "const":
        if right.op == "const" and right.const is not None and right.const <= 0:
            return _add(left, constant(-right.const), node, half)
        return Value(op="sub", half=half, unbounded=left.unbounded, node=node)
    return Value(op="sub", sign=ANY, desc="a difference", half=half,
                 unbounded=left.unbounded or right.unbounded, node=node)


def _multiply(left: Value, right: Value, left_node, right_node, node, half, ctx) -> Value:
    if left.kind or right.kind:
        return NOTHING
    if left.op == "const" and right.op == "const" and left.const is not None and right.const is not None:
        return constant(left.const * right.const, node)
    if left is right and left is not NOTHING or (
        isinstance(left_node, cst.Name) and isinstance(right_node, cst.Name) and left_node.value == right_node.value
    ):
        return square(left, node, half)
    for scale, other in ((left, right), (right, left)):
        if scale.op == "const" and scale.const is not None and scale.const > 0:
            return other.but(node=node, const=None) if other is not NOTHING else NOTHING
    signs = {left.sign, right.sign}
    if signs == {POS}:
        return Value(op="mul", sign=POS, half=half, node=node)
    if signs <= {POS, NONNEG}:
        return Value(op="mul", sign=NONNEG, desc=left.desc or right.desc, half=half, node=node)
    return Value(op="mul", half=half, unbounded=left.unbounded or right.unbounded, node=node)
