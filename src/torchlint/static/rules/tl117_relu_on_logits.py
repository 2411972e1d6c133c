"""TL117 relu-on-logits: a ReLU applied to the logits a classification loss receives."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOGIT_LOSSES
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule, loss_input, made_at


class ReluOnLogits(Rule):
    info = RuleInfo(
        "TL117", "relu-on-logits", "error",
        "A ReLU on the final logits throws away every negative score; end the model in the Linear layer.",
        tags=("correctness", "loss"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in LOGIT_LOSSES:
            return
        prediction = loss_input(call)
        if prediction is None or ctx.value(prediction).op != "relu":
            return
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}` went through a ReLU, so every negative "
            "logit is 0: the classes it ranked below zero become indistinguishable and get no gradient "
            "(a dead output). Remove the final ReLU; the loss applies its own normalisation",
            related=made_at(ctx, prediction, "the ReLU is applied here"),
        )
