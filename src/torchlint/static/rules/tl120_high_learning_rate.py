"""TL120 high-learning-rate: a constant learning rate far above the optimizer's usual range (opt-in)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl110_risky_optimizer_config import ADAPTIVE, optimizer_name


class HighLearningRate(Rule):
    info = RuleInfo(
        "TL120", "high-learning-rate", "warning",
        "A constant learning rate far above the usual range for this optimizer can diverge.",
        tags=("numerics", "optimizer"), default_enabled=False, precision="low",
        options={"max-lr-adaptive": 0.01, "max-lr-sgd": 1.0},
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        name = optimizer_name(call)
        if name not in ADAPTIVE and name != "SGD":
            return
        lr = ctx.value(call.param(1, "lr"))
        limit = ctx.option(self.info, "max-lr-sgd" if name == "SGD" else "max-lr-adaptive")
        if lr.op == "const" and lr.const is not None and lr.const > limit:
            ctx.report(self.info, call.node,
                       f"`{name}(...)`: lr={lr.const:g} is far above {name}'s usual range (limit {limit:g}): "
                       "updates can overshoot and diverge to NaN; lower it or add warm-up")
