"""TL108 unstable-exp: exp of unbounded values (logits, linear outputs). Opt-in: on real code the
overflow it warns about needs activations that well-behaved training never reaches (see its doc)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


def overflows(value) -> bool:
    """exp of a value shown to be unbounded (a linear/matmul output) and not shifted by its max;
    float16 is TL107's, and a difference of two outputs is usually a bounded log-ratio."""
    return value.unbounded and not value.shifted and not value.half and value.op != "sub"


class UnstableExp(Rule):
    info = RuleInfo(
        "TL108", "unstable-exp", "warning",
        "exp of an unbounded value overflows to inf; use softmax/logsumexp/softplus or subtract the max.",
        tags=("numerics", "nan"), precision="low", default_enabled=False,
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op != "exp" or call.operand is None or ctx.is_claimed(call.node):
            return
        value = ctx.value(call.operand)
        if not overflows(value):
            return
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}`: `{ctx.code(call.operand, 40)}` is {value.desc or 'a linear output'} "
            "with no upper bound; exp overflows to inf above 88.7 in float32. Use softmax / "
            "logsumexp / softplus, or subtract the max first",
        )
