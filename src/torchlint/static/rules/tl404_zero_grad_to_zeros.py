"""TL404 zero-grad-to-zeros: zero_grad(set_to_none=False)."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class ZeroGradToZeros(Rule):
    info = RuleInfo(
        "TL404", "zero-grad-to-zeros", "info",
        "zero_grad(set_to_none=False) writes zeros into every gradient instead of freeing them.",
        tags=("memory", "performance"), default_enabled=False,
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        flag = call.kwargs.get("set_to_none")
        if call.form == "method" and call.name == "zero_grad" and isinstance(flag, cst.Name) and flag.value == "False":
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}` launches a fill kernel per parameter and keeps the gradient memory "
                "allocated; the default set_to_none=True frees it and the next backward allocates fresh",
            )
