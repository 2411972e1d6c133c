"""TL310 new-layer-not-optimized: a layer the model builds and uses that no optimizer was given."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.training import innermost_training_loops
from torchlint.static.interpret.unoptimized_layers import unoptimized_layers
from torchlint.static.rules.base import Rule


class NewLayerNotOptimized(Rule):
    info = RuleInfo(
        "TL310", "new-layer-not-optimized", "error",
        "The optimizers take only some sub-modules of a model whose forward also uses a layer the model builds "
        "itself: that layer gets gradients but keeps its random initialisation.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        if not innermost_training_loops(ctx):
            return
        for found in unoptimized_layers(ctx):
            ctx.report(
                self.info, found.part,
                f"the optimizers are given parameters of sub-modules of `{found.model}` only (here `{ctx.code(found.part)}`), but "
                f"`{found.class_name}.forward` also uses `self.{found.layer}`, a new layer the class builds with "
                "random weights: it gets gradients every step and no optimizer applies them, so it never learns. "
                f"Give the optimizer `{found.model}.parameters()` (or add `{found.model}.{found.layer}.parameters()` "
                "as a parameter group)",
                related=((found.optimizer, "the optimizer built from them"),
                         (found.built, f"`self.{found.layer}` is built here")),
            )
