"""TL205 implicit-reentrant-checkpoint: a reentrant checkpoint whose inputs carry no autograd history.

The reentrant implementation (the default when ``use_reentrant`` is not given) builds the block's
graph only if one of its tensor inputs requires grad. When none does (a detached tensor, a value
computed under ``no_grad``, a batch straight from the data), the block's output has no history and
its parameters silently get no gradient. Only that case is reported: an input whose history is
unknown (a function's parameter) is left alone, since a missing ``use_reentrant`` is otherwise only
a deprecation warning.
"""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule

CHECKPOINT = "torch.utils.checkpoint.checkpoint"
SEQUENTIAL = "torch.utils.checkpoint.checkpoint_sequential"


class ImplicitReentrantCheckpoint(Rule):
    info = RuleInfo(
        "TL205", "implicit-reentrant-checkpoint", "warning",
        "Reentrant checkpoint of inputs without autograd history: the block's parameters get no gradient.",
        tags=("autograd",),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.form != "function" or call.qual not in (CHECKPOINT, SEQUENTIAL) or not _reentrant(call):
            return
        inputs = call.args[1:] if call.qual == CHECKPOINT else call.args[2:3]
        if not inputs or any(isinstance(arg, cst.StarredElement) for arg in call.node.args):
            return
        values = [ctx.value(arg) for arg in inputs]
        if any(value.tracked is not False or value.kind is not None for value in values):
            return  # one input with history (or unknown) is enough for the reentrant variant
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node, 60)}` is a reentrant checkpoint (no use_reentrant=False) and none of its "
            "inputs carries autograd history (detached, computed under no_grad, or a new tensor): the reentrant "
            "variant then records no graph, so the checkpointed block's parameters silently get no gradient. "
            "Pass use_reentrant=False",
        )


def _reentrant(call: CallInfo) -> bool:
    flag = call.kwargs.get("use_reentrant")
    return flag is None or (isinstance(flag, cst.Name) and flag.value == "True")

