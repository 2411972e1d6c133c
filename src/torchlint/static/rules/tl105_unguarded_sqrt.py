"""TL105 unguarded-sqrt: sqrt of a value that can be 0 or negative."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.facts.values import ANY


class UnguardedSqrt(Rule):
    info = RuleInfo(
        "TL105", "unguarded-sqrt", "warning",
        "sqrt of a value that can be 0 (infinite gradient) or negative (NaN); add an eps.",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.operand is None:
            return
        if call.op in ("sqrt", "rsqrt"):
            self._check(ctx, call.node, call.operand, call.op)
        elif call.op == "pow" and ctx.value(call.param(1, "exponent")).const == 0.5:
            self._check(ctx, call.node, call.operand, "sqrt")

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power) and ctx.value(node.right).const == 0.5:
            self._check(ctx, node, node.left, "sqrt")

    def _check(self, ctx: FileContext, node, operand, op: str) -> None:
        value = ctx.value(operand)
        if not value.hazard or ctx.is_claimed(node):
            return
        tail = "can be 0 or negative" if value.sign == ANY else "can be 0"
        effect = "rsqrt(0) is inf" if op == "rsqrt" else "the gradient of sqrt at 0 is inf (NaN below 0)"
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: `{ctx.code(operand, 40)}` is {value.desc or 'a value that'} and "
            f"{tail}; {effect}. Add an eps inside: sqrt(x + eps)",
        )
