"""TL101 unguarded-log: log of a value that can be 0 or negative."""

from __future__ import annotations

from torchlint.catalog import RuleInfo
from torchlint.static.context import CallInfo, FileContext, PendingFix
from torchlint.static.ops import LOG_OPS
from torchlint.static.rules.base import Rule, atom
from torchlint.static.values import ANY, POS


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
        if value.hazard:
            tail = "can be 0 or negative" if value.sign == ANY else "can be 0"
            message = f"{shown} is {value.desc or 'a value that'} and {tail}; log gives -inf/NaN"
            guarded = f"{atom(ctx, operand)}.clamp_min({min_eps:g})"
            fix = PendingFix(f"Clamp the argument to at least {min_eps:g}", "unsafe", [(operand, guarded)])
            ctx.report(self.info, call.node, message, fix)
        elif value.sign == POS and value.eps is not None and 0 < value.eps < min_eps:
            ctx.report(
                self.info, call.node,
                f"{shown} is guarded only by eps={value.eps:g} (below min-eps={min_eps:g}): the guard "
                f"underflows in float16 and leaves a gradient of 1/eps",
            )
