"""TL403 synchronous-dataloader: a training loop over a DataLoader with num_workers=0."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import innermost_training_loops


class SynchronousDataloader(Rule):
    info = RuleInfo(
        "TL403", "synchronous-dataloader", "info",
        "A training loop over a DataLoader without workers loads each batch while the model waits.",
        tags=("performance",), default_enabled=False,
    )

    def on_end(self, ctx: FileContext) -> None:
        reported = set()
        for loop, _steps in innermost_training_loops(ctx):
            loader = loop.iterable
            if loader is None or loader.kind != "dataloader" or loader.workers != 0 or id(loader.node) in reported:
                continue
            reported.add(id(loader.node))
            ctx.report(
                self.info, loader.node,
                f"`{ctx.code(loader.node)}` loads batches in the training process (num_workers=0): data loading "
                "and the training step never overlap. Set num_workers (and pin_memory=True for CUDA)",
            )
