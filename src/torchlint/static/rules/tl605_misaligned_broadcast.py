"""TL605 misaligned-broadcast: an elementwise op that pairs a dim of one operand with another dim."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.facts import shapes
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule


class MisalignedBroadcast(Rule):
    info = RuleInfo(
        "TL605", "misaligned-broadcast", "error",
        "Both operands of an elementwise op or loss have the same dim (the batch, a size the code names) at "
        "different positions from the right: broadcasting pairs it with another dim, (B, 1) with (B,) gives "
        "(B, B).",
        tags=("shapes",),
    )

    def on_end(self, ctx: FileContext) -> None:
        seen: set[int] = set()
        for node, left, right, symbol in ctx.misaligned:
            if id(node) in seen:
                continue
            seen.add(id(node))
            result = shapes.broadcast(left, right)
            name = "the batch dim" if symbol == shapes.BATCH else f"the dim of size `{symbol}`"
            ctx.report(
                self.info, node,
                f"`{ctx.code(node, 50)}` combines {shapes.text(left)} with {shapes.text(right)}: {name} is "
                f"{_place(left, symbol)} of one and {_place(right, symbol)} of the other, so broadcasting pairs it "
                f"with another dim and the result is {shapes.text(result)}, not one value per element"
                f"{_when(left, right, symbol)}. Give both the same layout first "
                "(`.squeeze(-1)` / `.view(-1)`, or `[:, None]` where pairing every element with every other is "
                "meant)",
            )


def _place(shape: tuple, symbol: str) -> str:
    position = len(shape) - shape.index(symbol)
    return "the last dim" if position == 1 else f"dim -{position}"


def _when(left: tuple, right: tuple, symbol: str) -> str:
    """Whether the pairing is silent (the partner dims are 1 or absent) or fails for most sizes."""
    partners = []
    for mine, other in ((left, right), (right, left)):
        position = len(mine) - mine.index(symbol)
        partners.append(other[len(other) - position] if position <= len(other) else 1)
    if all(shapes.is_one(dim) for dim in partners):
        return " (no error and no warning from a hand-written op)"
    return " (an error, except when the paired sizes happen to be equal: then it is silent)"
