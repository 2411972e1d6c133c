"""TL204 needless-retain-graph: retain_graph=True with no later backward in that scope."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, GRAD, classify


class NeedlessRetainGraph(Rule):
    info = RuleInfo(
        "TL204", "needless-retain-graph", "warning",
        "backward(retain_graph=True) with no later backward through the graph keeps it alive for nothing.",
        tags=("autograd", "memory"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for body in [ctx.module_body, *ctx.functions]:
            if body is None:
                continue
            calls = [e for e in body.walk(expand=False) if classify(ctx, e) in (BACKWARD, GRAD)]
            for index, call in enumerate(calls):
                # In a loop the graph is rebuilt every iteration; a function called once per graph may
                # legitimately retain it for its caller, so only loops are judged.
                if _retains(call) and index == len(calls) - 1 and call.scope.loop_depth > 0:
                    ctx.report(
                        self.info, call.node,
                        f"`{ctx.code(call.node)}`: retain_graph=True but no later backward or autograd.grad "
                        "in this scope uses the graph; it only keeps every saved activation alive. Drop it, "
                        "or find the stale reference that made 'backward through the graph a second time' fail",
                    )


def _retains(call: CallInfo) -> bool:
    flag = call.kwargs.get("retain_graph")
    return isinstance(flag, cst.Name) and flag.value == "True"
