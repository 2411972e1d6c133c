"""TL205 implicit-reentrant-checkpoint: checkpoint() without an explicit use_reentrant."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule

CHECKPOINTS = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})


class ImplicitReentrantCheckpoint(Rule):
    info = RuleInfo(
        "TL205", "implicit-reentrant-checkpoint", "warning",
        "torch.utils.checkpoint without use_reentrant: the reentrant default drops gradients in common cases.",
        tags=("autograd", "memory"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.form != "function" or call.qual not in CHECKPOINTS or "use_reentrant" in call.kwargs:
            return
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}` without use_reentrant: the reentrant variant silently gives no gradient "
            "when no input requires grad and ignores torch.autograd.grad/keyword inputs; pass "
            "use_reentrant=False (required explicitly by recent PyTorch)",
        )
