"""TL501 partial-seeding: some RNGs seeded, others used unseeded."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.after_training import runs_after_training
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.seeding import (
    PER_ITEM,
    SEED_CALLS,
    SEEDERS,
    SEEDS_EVERYTHING,
    drawn_seed,
    rng_used,
)
from torchlint.static.project_env import imported_within
from torchlint.static.rules.base import Rule

IMPORT_LEVELS, MAX_IMPORTED = 2, 40  # project modules whose draws count as the program's
# A dataset's or a transform's per-item code runs in DataLoader workers when there are any, where
# PyTorch seeds `random`, NumPy and torch per worker from the loader's base seed (itself drawn from the
# seeded torch generator): its draws are not unseeded unless this file's loader has no workers.
WORKER_SIDE = PER_ITEM - {"forward"}

class PartialSeeding(Rule):
    info = RuleInfo(
        "TL501", "partial-seeding", "warning",
        "Some random number generators are seeded and others the code uses are not: runs differ anyway.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        calls = list(ctx.calls.values())
        if any(c.name in SEEDS_EVERYTHING for c in calls):
            return
        seeds = [c for c in calls if c.form == "function" and c.qual in SEEDERS and not _never_runs(ctx, c)
                 and not drawn_seed(ctx, c)]
        if not seeds:
            return
        seeded = {SEEDERS[c.qual] for c in seeds}
        if "torch" not in seeded and len(seeded) < 2:
            return  # one algorithm-local seed (np.random.seed for a sampling scheme) is not run seeding
        draws: dict[str, list[CallInfo]] = {}
        in_main = _items_in_main_process(ctx, calls)
        # pytest tests that seed: each test is its own program, so only its own draws count
        tests = {c.scope.function for c in seeds}
        tests = tests if all((name or "").startswith("test_") for name in tests) else None
        for call in calls:
            rng = rng_used(call, ctx)
            if rng is not None and rng not in seeded and (in_main or call.scope.function not in WORKER_SIDE) and \
                    (tests is None or call.scope.function in tests):
                draws.setdefault(rng, []).append(call)
        # a draw after the program's last training statement changes no weights (asked only of unseeded draws)
        used = {rng: next((c for c in found if not runs_after_training(ctx, c.node)), None) for rng, found in draws.items()}
        missing = sorted(rng for rng, call in used.items() if call is not None)
        if not missing:
            self._imported_draws(ctx, seeds, seeded)
        else:
            first = used[missing[0]]
            ctx.report(
                self.info, seeds[0].node,
                f"seeds {', '.join(sorted(seeded))} but this file also draws from "
                f"{', '.join(missing)} (e.g. `{ctx.code(first.node, 40)}`), which stays unseeded: runs still "
                f"differ. Add {', '.join(SEED_CALLS[m] for m in missing)}",
            )
        # (DataLoader workers: PyTorch seeds `random`, torch and, since 1.9, NumPy in each worker from
        # the loader's base seed; TL504 reports NumPy draws in workers where the project runs older torch.)

    def _imported_draws(self, ctx: FileContext, seeds: list[CallInfo], seeded: set[str]) -> None:
        """The program's other draws: project modules this file imports (two levels) that draw from a
        generator neither this file nor any of them seeds, outside per-item code, at module level or
        in a top-level function or class this file names (a library's other code does not run)."""
        if ctx.project is None or ctx.file is None:
            return
        modules = []
        for path in imported_within(ctx.project, Path(ctx.file), IMPORT_LEVELS, MAX_IMPORTED):
            summary = ctx.project.summary(path)
            if summary is None or summary.seeding is None:
                continue
            ctx.deps[str(path)] = summary.key
            if summary.seeding.everything:
                return
            seeded = seeded | summary.seeding.seeded
            modules.append((path, summary.seeding))
        source = ctx.source
        used = {}  # whether this file names a definition: a function or class of a module drawing in it

        def names(owner: str) -> bool:
            if owner not in used:
                used[owner] = re.search(rf"\b{re.escape(owner)}\b", source) is not None
            return used[owner]

        for path, use in modules:
            reached = {rng: use.reached(rng, names) for rng in use.draws if rng not in seeded}
            missing = sorted(rng for rng, draw in reached.items() if draw is not None)
            if not missing or "torch" in use.seeded or len(use.seeded) > 1:
                continue  # none, or the module's own check reports it (one finding per cause)
            draw = reached[missing[0]]
            ctx.report(
                self.info, seeds[0].node,
                f"seeds {', '.join(sorted(seeded))} but {path.name}, which this file imports, draws from "
                f"{', '.join(missing)} (`{ctx.code(draw, 40)}`), which stays unseeded: runs still differ. Add "
                f"{', '.join(SEED_CALLS[m] for m in missing)}",
                related=((draw, f"draws from the unseeded {missing[0]} generator", str(path)),),
            )
            return


def _never_runs(ctx: FileContext, seed: CallInfo) -> bool:
    """`if seed: torch.manual_seed(seed)` in a function whose `seed=None` no call of the file passes (a
    model that seeds when given a seed, built without one): that seeding does not happen."""
    if ctx.call_sites is None:
        return False
    tests = [test.value for test, passes in seed.scope.gates if passes and isinstance(test, cst.Name)]
    if not tests:
        return False
    function = next((body.node for body in ctx.functions if isinstance(body.node, cst.FunctionDef)
                     and any(entry is seed for entry in body.entries)), None)
    if function is None:
        return False
    optional = {p.name.value for p in params_of(function.params)
                if isinstance(p.default, cst.Name) and p.default.value in ("None", "False")}
    return any(name in optional and ctx.call_sites.left_out(function, name) for name in tests)


def _items_in_main_process(ctx: FileContext, calls: list[CallInfo]) -> bool:
    """This file builds a DataLoader without workers (num_workers absent or 0): its items are made in
    the main process, with the main process's generators."""
    return any(ctx.value(call.node).kind == "dataloader" and ctx.value(call.node).workers == 0 for call in calls)
