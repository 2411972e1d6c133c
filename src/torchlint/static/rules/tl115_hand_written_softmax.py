"""TL115 hand-written-softmax: exp(x) divided by an aggregate of itself, without the max shift."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule

SAFE_EXP_ARGUMENT = 80.0  # exp(80) ~ 5.5e34 stays finite in float32, and so do sums of a few of them


class HandWrittenSoftmax(Rule):
    info = RuleInfo(
        "TL115", "hand-written-softmax", "error",
        "exp(x) / sum(exp(x)) overflows to inf/inf = NaN for scores above 88; subtract the max first.",
        tags=("numerics", "nan"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide) and ctx.value(node.left).op == "exp":
            self._candidate(ctx, node)

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign) and ctx.value(node.target).op == "exp":
            self._candidate(ctx, node)

    def _candidate(self, ctx: FileContext, node: cst.CSTNode) -> None:
        """The division, with the function it is in (None: module level) for the second pass."""
        ctx.memo.setdefault(self.info.code, []).append((node, ctx.enclosing[-1] if ctx.enclosing else None))

    def on_end(self, ctx: FileContext) -> None:
        pairs = ctx.memo.get(self.info.code, ())
        if not pairs:
            return  # the second pass (for local definitions) only runs when needed
        candidates = {id(node) for node, _ in pairs}
        finder = _Divisions()
        # only the functions holding a candidate: a pass over a whole big module costs as much as its parse
        for function in {id(f): f for _, f in pairs if f is not None}.values():
            function.visit(finder)
        if any(f is None for _, f in pairs):
            finder.module_level = True
            ctx.module.visit(finder)
        for division, numerator, denominator, defs in finder.found:
            if id(division) not in candidates or ctx.is_claimed(division):
                continue
            exp = ctx.value(numerator)
            argument = exp.of
            if argument is None or argument.shifted or argument.op in ("sub", "shift", "range") or \
                    argument.hi <= SAFE_EXP_ARGUMENT:
                continue  # exp(x - max) is the stable form; a bounded argument cannot overflow
            if not _aggregates(ctx, numerator, denominator, defs):
                continue
            where = exp.node if exp.node is not None else division  # the fix goes where exp is taken
            ctx.claim(division)
            # one finding for one bug: this names the softmax, TL108's "unbounded exp" on it goes
            ctx.pending = [p for p in ctx.pending if not (p.node is where and p.rule.code == "TL108")]
            ctx.report(
                self.info, where,
                f"`{ctx.code(division)}` is a softmax written by hand: `{ctx.code(numerator, 30)}` is exp of "
                "unshifted scores, which is inf once a score exceeds 88 (11 in float16), and inf / inf is NaN. "
                "Subtract the (per-segment) max before exp, or use torch.softmax / a scatter softmax",
            )


def _aggregates(ctx: FileContext, numerator, denominator, defs: dict[str, list]) -> bool:
    """The denominator is computed from the numerator (a sum, mean or scatter of it), not `1 + exp(x)`: that
    is a sigmoid, with no sum of scores to overflow."""
    if isinstance(denominator, cst.BinaryOperation) and isinstance(denominator.operator, cst.Add):
        for constant, other in ((denominator.left, denominator.right), (denominator.right, denominator.left)):
            if ctx.value(constant).const is not None and ctx.shape(other) == ctx.shape(numerator):
                return False
    if isinstance(numerator, cst.Name):
        return numerator.value in _names(denominator, defs)
    return ctx.shape(numerator) in ctx.shape(denominator)


def _names(node, defs: dict[str, list], depth: int = 4) -> set[str]:
    found: set[str] = set()
    stack = [(node, depth)]
    while stack:
        item, left = stack.pop()
        for name in _NameCollector.of(item):
            if name in found:
                continue
            found.add(name)
            if left > 0:
                stack.extend((rhs, left - 1) for rhs in defs.get(name, ()))
    return found


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `out.sum`: the tensor, not the method name
        return False

    @classmethod
    def of(cls, node) -> list[str]:
        collector = cls()
        node.visit(collector)
        return collector.names


class _Divisions(cst.CSTVisitor):
    """Divisions in each function, with the function's assignments (name -> right-hand sides)."""

    def __init__(self) -> None:
        self.found: list[tuple] = []
        self.defs: list[dict[str, list]] = [{}]
        self.module_level = False  # a pass for module-level divisions: function bodies are skipped

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self.module_level:
            return False
        self.defs.append({})
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if not self.module_level:
            self.defs.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.defs[-1].setdefault(target.target.value, []).append(node.value)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self.found.append((node, node.left, node.right, self.defs[-1]))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self.found.append((node, node.target, node.value, self.defs[-1]))
