"""TL210 backward-after-step: a backward through a forward whose module an optimizer step has since updated."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.stale_graphs import stale_backwards
from torchlint.static.rules.base import Rule


class BackwardAfterStep(Rule):
    info = RuleInfo(
        "TL210", "backward-after-step", "error",
        "backward() runs through a forward whose module's weights optimizer.step() has since modified in "
        "place: 'modified by an inplace operation' (PyTorch >= 1.5).",
        tags=("autograd", "training-loop"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for found in stale_backwards(ctx):
            ctx.report(
                self.info, found.backward,
                f"`{ctx.code(found.backward, 40)}` runs backward through `{ctx.code(found.forward, 40)}`, computed "
                f"before `{ctx.code(found.step, 40)}` updated that module's weights in place: the forward saved the "
                "old weights, and since PyTorch 1.5 this backward raises 'one of the variables needed for gradient "
                "computation has been modified by an inplace operation' (before, it used the new weights). Run "
                "every backward before the steps of the modules it goes through, or compute the forward again "
                "after the step",
                related=((found.forward, "the forward, before the step"),
                         (found.step, "updates the module's weights in place")),
            )
