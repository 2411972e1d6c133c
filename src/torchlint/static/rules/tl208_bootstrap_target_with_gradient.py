"""TL208 bootstrap-target-with-gradient: a TD target made by the network it trains, with autograd on."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.bootstrap import bootstrap_target, regression_arguments
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class BootstrapTargetWithGradient(Rule):
    info = RuleInfo(
        "TL208", "bootstrap-target-with-gradient", "error",
        "A bootstrapped regression target (reward + discount * the same network's next-state output) "
        "computed with gradients on: the loss also trains the target, not only the prediction.",
        tags=("autograd", "reinforcement-learning"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.form == "method" or (call.op != "loss" and call.form == "function"):
            return
        arguments = regression_arguments(ctx, call)
        if arguments is None:
            return
        found = bootstrap_target(ctx, *arguments)
        if found is None:
            return
        ctx.report(
            self.info, found.network,
            f"`{ctx.code(found.network, 40)}` makes part of the target of `{ctx.code(call.node, 50)}` with "
            f"gradients on, from the network whose prediction `{ctx.code(found.prediction, 40)}` it is compared "
            "with: backward also moves the next-state values towards the current ones (a residual-gradient "
            "update, not Q-learning/TD). Compute the target under `torch.no_grad()`, or `.detach()` it",
            related=((call.node, "the loss regresses the prediction onto this target"),
                     (found.prediction, "the prediction, from the same network")),
        )
