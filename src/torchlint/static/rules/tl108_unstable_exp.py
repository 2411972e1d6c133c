"""TL108 unstable-exp: exp of unbounded values (logits, linear outputs)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class UnstableExp(Rule):
    info = RuleInfo(
        "TL108", "unstable-exp", "warning",
        "exp of an unbounded value overflows to inf; use softmax/logsumexp/softplus or subtract the max.",
        tags=("numerics", "nan"), precision="medium",
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op != "exp" or call.operand is None or ctx.is_claimed(call.node):
            return
        value = ctx.value(call.operand)
        if not value.unbounded or value.shifted or value.half or value.op == "sub":
            return
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}`: `{ctx.code(call.operand, 40)}` is {value.desc or 'a linear output'} "
            "with no upper bound; exp overflows to inf above 88.7 in float32. Use softmax / "
            "logsumexp / softplus, or subtract the max first",
        )
