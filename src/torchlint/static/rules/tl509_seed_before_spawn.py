"""TL509 seed-before-spawn: RNGs seeded in the parent of `mp.spawn`, never in the spawned workers."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.spawned_seeding import parent_only_seeds
from torchlint.static.rules.base import Rule


class SeedBeforeSpawn(Rule):
    info = RuleInfo(
        "TL509", "seed-before-spawn", "warning",
        "The RNGs are seeded before torch.multiprocessing.spawn but not in the worker: spawned processes "
        "start with unseeded generators, so runs differ.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for found in parent_only_seeds(ctx):
            ctx.report(
                self.info, found.seed,
                f"`{ctx.code(found.seed, 40)}` seeds only this process: `{ctx.code(found.spawn.func, 30)}` starts "
                f"each `{found.worker}` in a fresh interpreter whose torch, NumPy and `random` generators are "
                "seeded from the OS, so weight initialisation, shuffling and augmentation differ between runs. "
                f"Seed inside `{found.worker}` (with the same seed, or the seed plus the rank)",
                related=((found.spawn, "the workers start here"),),
            )
