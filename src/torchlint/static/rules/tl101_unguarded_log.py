"""TL101 unguarded-log: log of a value that can be 0 or negative."""

from __future__ import annotations

import math

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.facts.ops import LOG_OPS
from torchlint.static.rules.base import Rule, atom
from torchlint.static.facts.values import SATURATION


def log_hazard(value) -> bool:
    """Evidence that a log's argument is exactly 0: routinely, or where a probability saturates."""
    return value.reaches_zero(SATURATION)


class UnguardedLog(Rule):
    info = RuleInfo(
        "TL101", "unguarded-log", "warning",
        "log of a value that can be 0 or negative: -inf/NaN in the loss and its gradient.",
        fixable=True, tags=("numerics", "nan"), options={"min-eps": 1e-8},
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in LOG_OPS or call.operand is None or ctx.is_claimed(call.node):
            return
        operand = call.operand
        value = ctx.value(operand)
        if value.op in ("sigmoid", "softmax"):
            return  # TL102 names the better function
        min_eps = ctx.option(self.info, "min-eps")
        shown = f"`{ctx.code(call.node)}`: `{ctx.code(operand, 40)}`"
        if log_hazard(value):
            message = f"{shown} is {value.desc or 'a value that'} and can be 0; log gives -inf/NaN"
            eps = f"{min_eps:g}".replace("e-0", "e-")
            guarded = f"{atom(ctx, operand)}.clamp_min({eps})"
            fix = PendingFix(f"Clamp the argument to at least {eps}", "unsafe", [(operand, guarded)])
            ctx.report(self.info, call.node, message, fix)
        elif value.positive and value.eps is not None and 0 < value.eps < min_eps and _tiny_eps_matters(value):
            ctx.report(
                self.info, call.node,
                f"{shown} is exactly {value.eps:g} wherever {value.desc or 'its unguarded part'} is 0: log "
                f"is {math.log(value.eps):.1f} there with a gradient of {1 / value.eps:.0e}, and the eps "
                f"rounds to 0 in float16 (min-eps is {min_eps:g})",
            )


def _tiny_eps_matters(value) -> bool:
    """A tiny eps hurts in float16 (it rounds to 0), or through the gradient 1/eps where the guarded part
    is 0. Not for a value without history (Gumbel noise from uniform samples), nor where the zeros are a
    ReLU's: its gradient there is 0, so the 1/eps never reaches a parameter."""
    if value.half:
        return True
    return value.tracked is not False and value.desc != "a ReLU output"
