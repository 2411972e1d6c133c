"""TL309 unfrozen-not-optimized: parameters unfrozen after the optimizer took only the trainable ones."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.unfreezing import late_unfreezes
from torchlint.static.rules.base import Rule


class UnfrozenNotOptimized(Rule):
    info = RuleInfo(
        "TL309", "unfrozen-not-optimized", "error",
        "Parameters set trainable after the only optimizer was built from the trainable ones: they get "
        "gradients but no optimizer updates them.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for late in late_unfreezes(ctx.module, ctx.source, ctx.qualify):
            ctx.report(
                self.info, late.unfreeze,
                f"`{ctx.code(late.unfreeze, 40)}` makes parameters trainable, but the optimizer "
                f"`{ctx.code(late.optimizer, 50)}` was given only the parameters that were trainable when it was "
                "built: these get gradients that nothing applies, so they never change. Add them with "
                "`optimizer.add_param_group({'params': ...})`, or build the optimizer again after unfreezing",
                related=((late.optimizer, "the optimizer takes only the parameters trainable here"),),
            )
