"""TL401 empty-cache-in-loop: torch.cuda.empty_cache() inside a loop."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.interpret.training import body_entries, innermost_training_loops
from torchlint.static.rules.base import DELETE_LINE, Rule


class EmptyCacheInLoop(Rule):
    info = RuleInfo(
        "TL401", "empty-cache-in-loop", "warning",
        "torch.cuda.empty_cache() every training step frees nothing in use and slows every step.",
        fixable=True, tags=("memory", "performance"),
    )

    def on_end(self, ctx: FileContext) -> None:
        # Every step of a training loop, the called step functions included: not an epoch or phase
        # loop, a benchmark over ops, an OOM handler, a retry, or an occasional validation block.
        done = set()
        for loop, _steps in innermost_training_loops(ctx):
            for entry, cond, via in body_entries(ctx, loop):
                # (`via`: the call is in a function the loop calls under an `if`, e.g. every k-th step)
                if not isinstance(entry, CallInfo) or entry.qual != "torch.cuda.empty_cache" or cond or via \
                        or entry.scope.guarded or entry.scope.cond or id(entry.node) in done:
                    continue
                done.add(id(entry.node))
                self._report(ctx, entry)

    def _report(self, ctx: FileContext, call: CallInfo) -> None:
        fix = None
        statement = ctx.statements.get(id(call.node))
        if statement is not None and statement[0].trailing_whitespace.comment is None:  # keep comments
            line, alone = statement
            fix = PendingFix("Remove the call from the loop", "unsafe", [(line, "pass" if alone else DELETE_LINE)])
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}` runs every training step: it only returns cached blocks that are not in "
            "use, so the allocator must request them from the driver again next step (slower), and it does not "
            "fix an OOM. Find what holds the memory instead",
            fix,
        )
