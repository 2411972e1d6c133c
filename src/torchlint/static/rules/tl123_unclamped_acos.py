"""TL123 unclamped-acos: acos/asin of a cosine similarity that is not clamped inside (-1, 1)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class UnclampedAcos(Rule):
    info = RuleInfo(
        "TL123", "unclamped-acos", "error",
        "acos/asin of a cosine similarity: NaN where rounding pushes it past +-1, and an infinite "
        "gradient at +-1; clamp it to [-1 + eps, 1 - eps].",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("acos", "asin") or ctx.is_claimed(call.node):
            return
        operand = call.operand
        value = ctx.value(operand)
        if value.op != "cosine":
            return
        if value.tracked is False:
            return  # the cosine of two fresh draws (a slerp between noise vectors): near 0, no gradient
        if value.hi > 1.0 or value.lo < -1.0:  # not clamped: rounding puts it past +-1
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}`: `{ctx.code(operand, 40)}` is {value.desc}, which is exactly +-1 for "
                f"parallel vectors (a perfect prediction) and, after rounding, slightly beyond: {call.op} is "
                "NaN past +-1, and its gradient is infinite at +-1. Clamp it first: `.clamp(-1 + 1e-7, 1 - 1e-7)`",
            )
        elif (value.hi >= 1.0 or value.lo <= -1.0) and value.tracked is True and not call.scope.no_grad:
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}`: `{ctx.code(operand, 40)}` is clamped to [-1, 1], which keeps {call.op} "
                "finite but not its gradient: -1/sqrt(1 - x^2) is infinite at +-1, reached by parallel vectors "
                "(a perfect prediction), so backward gives inf/NaN. Clamp to `(-1 + 1e-7, 1 - 1e-7)`",
            )
