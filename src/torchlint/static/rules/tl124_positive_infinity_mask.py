"""TL124 positive-infinity-mask: scores masked with +inf, then given to softmax."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import FILLED_WITH_INF
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class PositiveInfinityMask(Rule):
    info = RuleInfo(
        "TL124", "positive-infinity-mask", "error",
        "Scores masked with +inf before a softmax: every masked row is NaN (inf - inf); mask with -inf.",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("softmax", "log_softmax") or call.operand is None:
            return
        value = ctx.value(call.operand)
        if value.desc != FILLED_WITH_INF or value.node is None or ctx.is_claimed(value.node):
            return
        ctx.claim(value.node)
        ctx.report(
            self.info, value.node,
            f"`{ctx.code(value.node, 60)}` fills the masked scores with +inf, and `{ctx.code(call.node, 40)}` "
            "reads them: softmax subtracts the row's max (inf), so every row with a masked entry becomes "
            "inf - inf = NaN, and the loss with it. A mask should push scores to -inf (`float('-inf')`, or "
            "`-torch.finfo(x.dtype).max`); check the sign (`-float('-inf')` is +inf)",
            related=((call.node, "the softmax that reads them"),),
        )
