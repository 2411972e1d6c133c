"""TL209 baseline-with-gradient: a critic's value enters the policy-gradient term with its gradient."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.baselines import baselines_with_gradient
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule


class BaselineWithGradient(Rule):
    info = RuleInfo(
        "TL209", "baseline-with-gradient", "error",
        "An advantage (return minus a learned baseline) weights log-probabilities without detaching the "
        "baseline: the policy loss also trains the critic.",
        tags=("autograd", "reinforcement-learning"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for found in baselines_with_gradient(ctx):
            ctx.report(
                self.info, found.product,
                f"`{ctx.code(found.product, 50)}` weights a model output by an advantage whose baseline "
                f"`{found.baseline}` keeps its gradient, while `{ctx.code(found.regression, 50)}` trains "
                f"`{found.baseline}` towards the return: backward also moves the critic through the policy term, "
                f"in a direction set by the log-probabilities. Use `{found.baseline}.detach()` in the advantage",
                related=((found.regression, "the baseline is trained here"),),
            )
