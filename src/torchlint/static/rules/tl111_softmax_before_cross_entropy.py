"""TL111 probabilities-into-logit-loss: a loss that applies sigmoid/log_softmax fed probabilities."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import MODULE_OPS
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule, alternatives, loss_input

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
        for op, chosen in _losses(call):
            if op not in ("cross_entropy", "nll_loss", "bce_logits", "multilabel_logits", "kl_div"):
                continue
            prediction = loss_input(call)
            if prediction is None:
                return
            for when, value, related in alternatives(ctx, prediction, lambda v: f"the {v.op} is applied here"):
                if self._check(ctx, call, op, prediction, when + chosen, value, related):
                    return

    def _check(self, ctx: FileContext, call: CallInfo, op: str, prediction, when: str, value, related) -> bool:
        if value.op in ("softmax", "sigmoid") and value.hi > 1.0:
            return False  # `23 * sigmoid(z / 7.5)`: scaled past 1, a soft cap on logits, not probabilities
        shown = f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}`"
        if op in _WHAT and value.op in _SQUASHED and not (op != "cross_entropy" and value.op == "log_softmax"):
            loss, applied = _WHAT[op]
            message = (f"{shown} is {_SQUASHED[value.op]}{when}, but {loss} applies {applied} itself: the loss sees "
                       "squashed values twice, stays bounded away from 0 and its gradients shrink. Pass the raw logits")
        elif op == "nll_loss" and value.op in ("softmax", "sigmoid"):
            message = (f"{shown} is {_SQUASHED[value.op]}{when}, but nll_loss expects log-probabilities; use log_softmax "
                       "(or cross_entropy on the logits)")
        elif op == "kl_div" and value.op in ("softmax", "sigmoid"):
            message = (f"{shown} is {_SQUASHED[value.op]}{when}, but kl_div expects log-probabilities as its input "
                       "(the target is probabilities, or log-probabilities with log_target=True): the loss is "
                       "not the KL divergence, and NaN where the target is a negative log-probability. Use "
                       "log_softmax for the input")
        else:
            return False
        ctx.report(self.info, call.node, message, related=related)
        return True


def _losses(call: CallInfo) -> list[tuple[str | None, str]]:
    """The loss op the call computes, or, for a loss module chosen by configuration
    (`criterion = nn.BCEWithLogitsLoss() if ... else nn.MSELoss()`), each choice's op with
    " when the loss is `BCEWithLogitsLoss`"."""
    callee = call.callee
    if call.op is not None or call.form != "local" or callee is None or callee.kind != "either":
        return [(call.op, "")]
    return [(MODULE_OPS.get(option.qual or ""), f" when the loss is `{(option.qual or '').rsplit('.', 1)[-1]}`")
            for option in callee.items if option.kind == "module"]
