"""TL401 empty-cache-in-loop: torch.cuda.empty_cache() inside a loop."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.rules.base import DELETE_LINE, Rule


class EmptyCacheInLoop(Rule):
    info = RuleInfo(
        "TL401", "empty-cache-in-loop", "warning",
        "torch.cuda.empty_cache() in a loop frees nothing in use and slows every iteration.",
        fixable=True, tags=("memory", "performance"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        # Every iteration of a loop: not in an OOM handler, a retry, or an occasional validation block.
        if call.qual != "torch.cuda.empty_cache" or call.scope.loop_depth == 0 or call.scope.guarded:
            return
        fix = None
        statement = ctx.statements.get(id(call.node))
        if statement is not None:
            line, alone = statement
            fix = PendingFix("Remove the call from the loop", "unsafe", [(line, "pass" if alone else DELETE_LINE)])
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}` inside a loop: it only returns cached blocks that are not in use, so "
            "the allocator must request them from the driver again next iteration (slower), and it does not "
            "fix an OOM. Find what holds the memory instead",
            fix,
        )
