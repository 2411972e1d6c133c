"""TL301 missing-zero-grad: a training loop that never clears gradients."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import ZERO_GRAD, innermost_training_loops, loop_header


class MissingZeroGrad(Rule):
    info = RuleInfo(
        "TL301", "missing-zero-grad", "error",
        "A loop that calls backward() and step() but never zero_grad(): gradients add up across iterations.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for loop, steps in innermost_training_loops(ctx):
            if any(a.kind == ZERO_GRAD for a in steps):
                continue
            ctx.report(
                self.info, loop_header(loop),
                "this loop calls backward() and an optimizer step() but never clears the gradients "
                "(zero_grad() / p.grad = None), so every step applies the sum of all previous gradients; "
                "call optimizer.zero_grad() once per step",
            )
