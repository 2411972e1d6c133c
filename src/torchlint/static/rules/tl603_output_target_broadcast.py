"""TL603 output-target-broadcast: a model output compared with targets flattened elsewhere, not here."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.flattened_outputs import broadcast_comparisons
from torchlint.static.rules.base import Rule


class OutputTargetBroadcast(Rule):
    info = RuleInfo(
        "TL603", "output-target-broadcast", "error",
        "A model's output is flattened before it is compared with targets in one place and compared as it "
        "is in another: an (N, 1) output against (N,) targets broadcasts to (N, N).",
        tags=("shapes",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for raw, flat in broadcast_comparisons(ctx):
            ctx.report(
                self.info, raw.node,
                f"`{ctx.code(raw.node, 50)}` compares the output of `{raw.model}` with targets as it is, while "
                f"`{ctx.code(flat.node, 50)}` compares the same model's output after flattening it: the code says the output "
                "has a trailing dim of size 1 and the targets have none, so here (N, 1) against (N,) broadcasts "
                "to (N, N) and the loss compares every prediction with every target (the model learns their "
                "mean). Flatten here too (`.squeeze(-1)`), or give the targets the output's shape",
                related=((flat.node, "here the output is flattened before the comparison"),),
            )
