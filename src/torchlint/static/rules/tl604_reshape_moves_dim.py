"""TL604 reshape-moves-dim: a view/reshape that puts a named dim elsewhere instead of transposing."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.reshaped_dims import moved_dims
from torchlint.static.rules.base import Rule


class ReshapeMovesDim(Rule):
    info = RuleInfo(
        "TL604", "reshape-moves-dim", "error",
        "A view/reshape that changes the order of named dims (or puts a new dim between two neighbours): it "
        "regroups elements in memory order instead of moving the dim; use transpose/permute.",
        tags=("shapes",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for moved in moved_dims(ctx):
            names = ctx.code(moved.unpacked, 40)
            if moved.between:
                what = (f"puts `{moved.between}` before `{moved.moved}`, which follows the dim before it "
                        f"directly in `{moved.tensor}`")
            else:
                what = f"puts `{moved.moved}` before a dim that precedes it in `{moved.tensor}`"
            ctx.report(
                self.info, moved.call,
                f"`{ctx.code(moved.call, 50)}` {what} (`{names}`): a reshape keeps the elements in memory order, so "
                "this mixes the values of different positions instead of moving the dim (no error: the element "
                "count matches). Reshape in the existing order, then `.transpose`/`.permute` "
                "(`x.view(B, T, h, d).transpose(1, 2)`)",
                related=((moved.unpacked, "the dims are named here"),),
            )
