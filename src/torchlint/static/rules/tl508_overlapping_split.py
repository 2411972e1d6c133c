"""TL508 overlapping-split: a training and a validation dataset cut from one array by slices that overlap."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.split_slices import overlapping_splits
from torchlint.static.rules.base import Rule


class OverlappingSplit(Rule):
    info = RuleInfo(
        "TL508", "overlapping-split", "error",
        "Two datasets made from a prefix and a suffix of one array whose slices overlap "
        "(`x[:-100]` and `x[100:]`): the shared rows are validated on after being trained on.",
        tags=("reproducibility", "data-loading"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for found in overlapping_splits(ctx):
            prefix, suffix = ctx.code(found.prefix, 40), ctx.code(found.suffix, 40)
            ctx.report(
                self.info, found.suffix,
                f"`{suffix}` and `{prefix}` are given to two datasets as one array's split, but they overlap: "
                f"every row from the suffix's start to the prefix's end is in both, so the model is validated "
                "on rows it trained on and the validation score is too good. Cut both at the same place "
                "(`x[:-k]` with `x[-k:]`, `x[:k]` with `x[k:]`)",
                related=((found.prefix, "the other part of the split"),),
            )
