"""What a condition says: the names it checks (guards against 0) and the flag it branches on.

`if d > 0:`, `assert (std != 0).all()`, `x if n else 0.0`, `norm[norm == 0] = 1` all check a value,
so neither branch (nor the code after) reports that value as reaching 0: the code handles it.
`if use_amp:` / `if scaler is not None:` / `if not args.fp16:` name a flag, and the statements
under them run only on the path where the flag has that value.
"""

from __future__ import annotations

import re

import libcst as cst

Flag = tuple[str, bool]  # (the flag's source text, the value it has on this path)

_APPLIED = re.compile(r"\.apply\(\s*(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*)\s*[,)]")


def checked_names(test: cst.BaseExpression) -> list[str]:
    """Names a condition compares or tests for truth (`if d > 0`, `if (d != 0).all()`, `if n:`)."""
    found: list[str] = []
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.append(node.value)
        elif isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                stack.append(node.func.value)  # (d > 0).all(), d.abs().max()
            stack.extend(arg.value for arg in node.args)  # torch.all(d > 0), torch.isclose(d, 0)
        elif isinstance(node, cst.BinaryOperation):
            stack.extend((node.left, node.right))  # `abs(hi - lo) < eps` checks both ends
        elif isinstance(node, cst.Comparison):
            stack.append(node.left)
            stack.extend(c.comparator for c in node.comparisons)
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            continue  # `args.eps` checks a setting, not a tensor in scope
    return found


def flag_of(test: cst.BaseExpression) -> Flag | None:
    """The flag a condition branches on, with the value that makes it true."""
    polarity = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, polarity = test.expression, not polarity
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.IsNot):
                test = test.left
            elif isinstance(target.operator, cst.Is):
                test, polarity = test.left, not polarity
    text = _dotted(test)
    return (text, polarity) if text else None


def exits(block) -> bool:
    """Whether a block always leaves (return/raise/continue/break as its last statement)."""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if not body:
        return False
    last = body[-1]
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return any(isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in smalls)


def applied_functions(source: str) -> set[str]:
    """Functions passed to `module.apply(fn)`: they run at construction time, once per submodule."""
    return set(_APPLIED.findall(source))


def _dotted(node) -> str:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name) or node.value in ("True", "False", "None"):
        return ""
    parts.append(node.value)
    return ".".join(reversed(parts))
