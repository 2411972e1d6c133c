"""TL111 softmax-before-cross-entropy: cross_entropy on probabilities, nll_loss on softmax."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class SoftmaxBeforeCrossEntropy(Rule):
    info = RuleInfo(
        "TL111", "softmax-before-cross-entropy", "error",
        "cross_entropy applies log_softmax itself: feeding it softmax/log_softmax outputs is wrong.",
        tags=("numerics", "loss", "correctness"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("cross_entropy", "nll_loss"):
            return
        prediction = call.param(0, "input") if call.form == "function" else call.operand
        value = ctx.value(prediction)
        if prediction is None:
            return
        shown = f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}`"
        if call.op == "cross_entropy" and value.op in ("softmax", "log_softmax"):
            ctx.report(
                self.info, call.node,
                f"{shown} is a {value.op} output, but cross_entropy applies log_softmax itself: the "
                "loss is computed on a double softmax and its gradients shrink. Pass the raw logits",
            )
        elif call.op == "nll_loss" and value.op == "softmax":
            ctx.report(
                self.info, call.node,
                f"{shown} is a softmax output, but nll_loss expects log-probabilities; use log_softmax "
                "(or cross_entropy on the logits)",
            )
