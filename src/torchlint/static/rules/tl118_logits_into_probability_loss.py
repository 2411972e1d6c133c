"""TL118 logits-into-probability-loss: raw layer outputs fed to BCELoss / NLLLoss."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LINEAR_OUTPUT
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule, alternatives, loss_input


class LogitsIntoProbabilityLoss(Rule):
    info = RuleInfo(
        "TL118", "logits-into-probability-loss", "error",
        "BCELoss takes probabilities and NLLLoss log-probabilities: raw Linear/Conv outputs are neither.",
        tags=("correctness", "loss", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("bce", "nll_loss"):
            return
        prediction = loss_input(call)
        if prediction is None:
            return
        for when, value, related in alternatives(ctx, prediction, lambda _: "the linear layer's output is made here"):
            if value.op != "matmul" or value.desc != LINEAR_OUTPUT:
                continue  # `probs @ transition` mixes probabilities: only a Linear/Conv layer's raw output
            if call.op == "bce":
                consequence = ("binary_cross_entropy needs values in [0, 1]: it raises (or asserts on CUDA) "
                               "for the first logit outside it. Use BCEWithLogitsLoss on the logits")
            else:
                consequence = ("nll_loss only picks -input[target], so on unnormalised scores it decreases "
                               "without bound by growing the target logit. Apply log_softmax first (or use "
                               "cross_entropy)")
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}` is the raw output of a linear layer{when}; "
                + consequence,
                related=related,
            )
            return
