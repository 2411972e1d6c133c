"""TL405 sample-modified-in-place: a dataset's `__getitem__` writes into the data it stores."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.stored_samples import dataset_writes
from torchlint.static.rules.base import Rule


class SampleModifiedInPlace(Rule):
    info = RuleInfo(
        "TL405", "sample-modified-in-place", "error",
        "A dataset's `__getitem__` modifies, in place, a view of the sample it stores: every access "
        "changes the stored data, so each epoch trains on data transformed once more.",
        tags=("data-loading",),
    )

    def on_end(self, ctx: FileContext) -> None:
        if "__getitem__" not in ctx.source:
            return
        seen: set[int] = set()
        for write in dataset_writes(ctx.module, ctx.qualify):
            if id(write.node) in seen or id(write.made) in seen:
                continue  # one finding per shared name: its first write
            seen.update((id(write.node), id(write.made)))
            ctx.report(
                self.info, write.node,
                f"`{ctx.code(write.node, 50)}` writes into the memory of `self.{write.attr}`: `{write.name}` is a "
                "view of the stored sample (indexing, `torch.from_numpy` and `.view()` share memory), so every "
                "call of `__getitem__` modifies the dataset itself and the next epoch reads the modified "
                f"sample (normalised or augmented once more). Copy first (`{write.name}.clone()`, "
                f"`{write.name}.copy()`, `torch.tensor(...)`) or use an out-of-place op (`{write.name} = "
                f"{write.name} / 255`)",
                related=((write.made, f"`{write.name}` is bound to the stored data here"),),
            )
