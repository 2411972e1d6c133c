"""TL506 split-drawn-twice: the same random split drawn again without a generator, keeping another part."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.splits import redrawn_splits
from torchlint.static.rules.base import Rule


class SplitDrawnTwice(Rule):
    info = RuleInfo(
        "TL506", "split-drawn-twice", "error",
        "random_split without a seeded generator called twice for the same split, each call keeping another "
        "part: the parts come from different permutations and overlap.",
        tags=("reproducibility", "data-loading"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for found in redrawn_splits(ctx):
            ctx.report(
                self.info, found.call,
                f"`{ctx.code(found.call, 50)}` draws the split again, without a `generator=`, and keeps another "
                f"part than `{ctx.code(found.first, 40)}`: each call shuffles with the global RNG as it is then, "
                "so the two parts come from different permutations and overlap (validation on training data). "
                "Split once and keep both parts, or pass `generator=torch.Generator().manual_seed(seed)` to both",
                related=((found.first, "the first draw"),),
            )
