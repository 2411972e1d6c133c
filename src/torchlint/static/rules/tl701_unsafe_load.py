"""TL701 unsafe-load: torch.load(..., weights_only=False)."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.checkpoints import file_key, name_tails, saves
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class UnsafeLoad(Rule):
    info = RuleInfo(
        "TL701", "unsafe-load", "error",
        "torch.load(weights_only=False) unpickles arbitrary objects: loading an untrusted file runs its code.",
        default_enabled=False, tags=("security",), precision="very-high",
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        flag = call.kwargs.get("weights_only")
        if call.qual == "torch.load" and isinstance(flag, cst.Name) and flag.value == "False":
            ctx.memo.setdefault("unsafe_loads", []).append(call)

    def on_end(self, ctx: FileContext) -> None:
        loads = ctx.memo.get("unsafe_loads", [])
        if not loads:
            return
        # the module writes its own pickles (a dataset cache, a checkpoint) and reads them back
        written = {saved.path for saved in saves(ctx)}
        tails = None
        for call in loads:
            path = call.param(0, "f")
            if file_key(ctx, path) in written:
                continue
            if tails is None:  # the file names it writes, for loads found by a pattern (`glob("*--ckpt.pt")`)
                tails = {t for saved in saves(ctx) if saved.call is not None
                         for t in name_tails(ctx, saved.call, saved.call.param(1, "f"))}
            if tails & name_tails(ctx, call, path):
                continue
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}`: weights_only=False runs pickle on the file, so a crafted checkpoint "
                "executes arbitrary code. Keep the default (weights_only=True) and allow-list extra types with "
                "torch.serialization.add_safe_globals",
            )
