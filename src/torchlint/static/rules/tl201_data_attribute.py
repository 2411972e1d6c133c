"""TL201 data-attribute: `.data` on parameters or gradients."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule

# Initialisation runs before any graph exists: `.data` there cannot corrupt a backward pass.
INIT_FUNCTIONS = frozenset({"__init__", "reset_parameters", "_reset_parameters", "_init_weights", "init_weights",
                            "initialize_weights", "_initialize_weights"})


class DataAttribute(Rule):
    info = RuleInfo(
        "TL201", "data-attribute", "warning",
        "`.data` on a parameter or gradient bypasses autograd's version tracking; use torch.no_grad() or .detach().",
        tags=("autograd",),
    )

    def on_attribute(self, ctx: FileContext, node: cst.Attribute) -> None:
        owner = ctx.value(node.value)
        if owner.kind not in ("param", "grad"):
            return
        scope = ctx.scope_of(node)
        if scope.no_grad or scope.function in INIT_FUNCTIONS:
            return
        what = "gradient" if owner.kind == "grad" else "parameter"
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: `.data` on a {what} changes it behind autograd's back (no version "
            "check, so a wrong gradient instead of an error); do it under `with torch.no_grad():` or use .detach()",
        )
