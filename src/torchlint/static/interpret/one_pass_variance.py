"""Variances computed in one pass, `E[x²] - E[x]²`: exact in real numbers, but in floating point the
two terms are nearly equal whenever the mean is large next to the spread (raw sensor readings,
constant columns), so the difference rounds to a small negative number and its square root is NaN.

Recognised where the code shows both terms: the mean of a square minus the square of the mean of the
same expression (`x.pow(2).mean(d) - x.mean(d) ** 2`, also through names), and running sums divided
by the same count (`sum_sq / n - (s / n) * (s / n)`). Additions of constants (`+ eps`) are looked
through: an eps does not make a negative number positive; a clamp or max at 0 is a guard.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext

_SQUARES = ("pow", "square")  # methods / functions that square their operand (pow with 2)
_DEPTH = 4


def one_pass_variance(ctx: FileContext, operand: cst.BaseExpression) -> cst.BinaryOperation | None:
    """The `E[x²] - E[x]²` subtraction under `operand` (through names and `+ const`), or None."""
    node = _definition(ctx, operand)
    for _ in range(_DEPTH):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            if _constant(ctx, node.right):
                node = _definition(ctx, node.left)
                continue
            if _constant(ctx, node.left):
                node = _definition(ctx, node.right)
                continue
        break
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Subtract):
        return None
    squared = _squared(ctx, _definition(ctx, node.right))
    if squared is None:
        return None
    mean = _definition(ctx, squared)
    first = _definition(ctx, node.left)
    if _mean_of(mean) is not None and _mean_of(first) is not None:
        inner = _squared(ctx, _definition(ctx, _mean_of(first)))
        if inner is not None and _same(ctx, inner, _mean_of(mean)):
            return node  # mean(x²) - mean(x)²
    if _ratio(mean) is not None and _ratio(first) is not None and _same(ctx, _ratio(mean)[1], _ratio(first)[1]) \
            and not _same(ctx, _ratio(mean)[0], _ratio(first)[0]):
        return node  # sum_sq / n - (sum / n)²
    return None


def _definition(ctx: FileContext, node):
    """A name's defining expression (the node its value was made by), else the node itself."""
    for _ in range(_DEPTH):
        if not isinstance(node, cst.Name):
            return node
        made = ctx.value(node).node
        if not isinstance(made, cst.BaseExpression) or made is node:
            return node
        node = made
    return node


def _constant(ctx: FileContext, node) -> bool:
    value = ctx.value(node)
    return value.op == "const" or (isinstance(node, cst.Attribute) and node.attr.value in ("eps", "epsilon"))


def _squared(ctx: FileContext, node):
    """`a ** 2`, `a.pow(2)`, `square(a)`, `a * a`, `multiply(a, a)`: a; else None."""
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power) and ctx.value(node.right).const == 2:
            return node.left
        if isinstance(node.operator, cst.Multiply) and _same(ctx, node.left, node.right):
            return node.left
        return None
    if not isinstance(node, cst.Call):
        return None
    name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
    args = [arg.value for arg in node.args if arg.keyword is None]
    method = isinstance(node.func, cst.Attribute) and ctx.qualify(node.func) is None
    if name == "pow" and method and len(args) == 1 and ctx.value(args[0]).const == 2:
        return node.func.value
    if name == "pow" and not method and len(args) == 2 and ctx.value(args[1]).const == 2:
        return args[0]
    if name == "square":
        return node.func.value if method and not args else args[0] if len(args) == 1 else None
    if name == "multiply" and len(args) == 2 and _same(ctx, args[0], args[1]):
        return args[0]
    return None


def _mean_of(node):
    """`x.mean(...)` / `torch.mean(x, ...)` / `np.mean(x, ...)`: x."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "mean":
        if isinstance(func.value, cst.Name) and func.value.value in ("np", "numpy", "torch"):
            return node.args[0].value if node.args else None
        return func.value
    return None


def _ratio(node):
    """`a / n`: (a, n)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return node.left, node.right
    return None


def _same(ctx: FileContext, a, b) -> bool:
    return " ".join(ctx.exact_code(a).split()) == " ".join(ctx.exact_code(b).split())
