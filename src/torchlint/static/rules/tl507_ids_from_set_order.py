"""TL507 ids-from-set-order: token ids numbered in a set of strings' iteration order."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.seeding import SEEDERS, SEEDS_EVERYTHING
from torchlint.static.interpret.set_order_ids import set_order_ids
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl502_conflicting_determinism import env_names


class IdsFromSetOrder(Rule):
    info = RuleInfo(
        "TL507", "ids-from-set-order", "warning",
        "Ids numbered in the order a set of strings iterates: string hashing is randomised per process, so "
        "the ids (embedding rows, output units) differ between runs although every RNG is seeded.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        if not any(_seeds(call) for call in ctx.calls.values()):
            return  # a program that does not ask for reproducible runs
        if "PYTHONHASHSEED" in env_names(ctx):
            return  # it sets the hash seed itself, too late: TL503 reports that
        for found in set_order_ids(ctx):
            if found.shuffled:
                ctx.report(
                    self.info, found.made,
                    f"`{ctx.code(found.made, 50)}` takes the order in which a set of strings iterates, and "
                    f"`{ctx.code(found.numbered, 40)}` shuffles or samples that order: a seeded shuffle permutes "
                    "its starting order, and Python randomises string hashing in every process, so each run "
                    "puts other items in each part (another train/validation split) although the RNGs are "
                    "seeded. Sort first (`sorted(...)`)",
                    related=((found.numbered, "the order is shuffled here"),),
                )
                continue
            related = ((found.numbered, "the ids are assigned here"),) if found.numbered is not found.made else ()
            ctx.report(
                self.info, found.made,
                f"`{ctx.code(found.made, 50)}` takes the order in which a set of strings iterates, and the "
                "program numbers that order as ids: Python randomises string hashing in every process, so "
                "each run gives the words other ids (other embedding rows and output units) and trains "
                "differently, although the RNGs are seeded. Iterate the set sorted (`sorted(words)`), or "
                "keep first-seen order with `dict.fromkeys(words)`",
                related=related,
            )


def _seeds(call: CallInfo) -> bool:
    return (call.form == "function" and call.qual in SEEDERS) or call.name in SEEDS_EVERYTHING
