"""TL106 unguarded-division: dividing by a reduction or array that can be 0."""

from __future__ import annotations

import libcst as cst

from torchlint.catalog import RuleInfo
from torchlint.static.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.values import POS

_ZERO_PRONE = frozenset({"sum", "mean", "norm", "std", "var", "count", "range", "complement", "shift"})


class UnguardedDivision(Rule):
    info = RuleInfo(
        "TL106", "unguarded-division", "warning",
        "Division by a sum/norm/std/count or an array that can be 0 gives inf/NaN; add an eps.",
        tags=("numerics", "nan"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(ctx, node, node.right)

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(ctx, node, node.value)

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op == "divide":
            divisor = call.param(1, "other")
            if divisor is not None:
                self._check(ctx, call.node, divisor)
        elif call.op == "where":
            _claim_masked_divisions(ctx, call)

    def _check(self, ctx: FileContext, node, divisor) -> None:
        value = ctx.value(divisor)
        if value.sign == POS or ctx.is_claimed(node):
            return
        if not (value.zero or value.op in _ZERO_PRONE):
            return
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: the divisor `{ctx.code(divisor, 40)}` is {value.desc or 'a reduction'} "
            "and can be 0; add an eps or clamp it (x / d.clamp_min(eps))",
        )


def _claim_masked_divisions(ctx: FileContext, call: CallInfo) -> None:
    """`where(d == 0, fallback, x / d)` already handles the zero: do not report that division."""
    condition = call.param(0, "condition")
    if not isinstance(condition, cst.Comparison):
        return
    guarded = {_text(ctx, condition.left)}
    guarded.update(_text(ctx, target.comparator) for target in condition.comparisons)
    for branch in (call.param(1, "input"), call.param(2, "other")):
        stack = [branch]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.BinaryOperation):
                if isinstance(node.operator, cst.Divide) and _text(ctx, node.right) in guarded:
                    ctx.claim(node)
                stack.extend((node.left, node.right))


def _text(ctx: FileContext, node) -> str:
    return "".join(ctx.exact_code(node).split()).strip("()") if node is not None else ""
