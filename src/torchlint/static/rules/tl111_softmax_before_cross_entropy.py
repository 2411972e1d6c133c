"""TL111 probabilities-into-logit-loss: a loss that applies sigmoid/log_softmax fed probabilities."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule, loss_input, made_at

_SQUASHED = {
    "softmax": "a softmax output",
    "log_softmax": "a log_softmax output",
    "sigmoid": "a sigmoid output",
}
_WHAT = {
    "cross_entropy": ("cross_entropy", "log_softmax"),
    "bce_logits": ("binary_cross_entropy_with_logits", "a sigmoid"),
    "multilabel_logits": ("multilabel_soft_margin_loss", "a sigmoid"),
}


class SoftmaxBeforeCrossEntropy(Rule):
    info = RuleInfo(
        "TL111", "softmax-before-cross-entropy", "error",
        "cross_entropy / BCEWithLogitsLoss apply log_softmax / sigmoid themselves: feed them logits, "
        "not probabilities.",
        tags=("numerics", "loss", "correctness"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("cross_entropy", "nll_loss", "bce_logits", "multilabel_logits"):
            return
        prediction = loss_input(call)
        if prediction is None:
            return
        value = ctx.value(prediction)
        shown = f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}`"
        if call.op in _WHAT and value.op in _SQUASHED and not (call.op != "cross_entropy" and value.op == "log_softmax"):
            loss, applied = _WHAT[call.op]
            ctx.report(
                self.info, call.node,
                f"{shown} is {_SQUASHED[value.op]}, but {loss} applies {applied} itself: the loss sees "
                "squashed values twice, stays bounded away from 0 and its gradients shrink. Pass the raw logits",
                related=made_at(ctx, prediction, f"the {value.op} is applied here"),
            )
        elif call.op == "nll_loss" and value.op in ("softmax", "sigmoid"):
            ctx.report(
                self.info, call.node,
                f"{shown} is {_SQUASHED[value.op]}, but nll_loss expects log-probabilities; use log_softmax "
                "(or cross_entropy on the logits)",
                related=made_at(ctx, prediction, f"the {value.op} is applied here"),
            )
