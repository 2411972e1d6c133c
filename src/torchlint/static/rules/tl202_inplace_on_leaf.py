"""TL202 inplace-on-leaf: in-place op on a parameter / requires_grad leaf outside no_grad."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.facts.ops import is_inplace

def is_inplace_method(call: CallInfo) -> bool:
    return call.form == "method" and is_inplace(call.name)


def through_data_or_grad(node) -> bool:
    """`p.data.add_()` / `p.grad.mul_()` are TL201's concern or legitimate, not a leaf update."""
    return isinstance(node, cst.Attribute) and node.attr.value in ("data", "grad")


class InplaceOnLeaf(Rule):
    info = RuleInfo(
        "TL202", "inplace-on-leaf", "error",
        "In-place op on a parameter or requires_grad leaf outside torch.no_grad() raises at run time.",
        tags=("autograd",),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if not is_inplace_method(call) or call.scope.no_grad or through_data_or_grad(call.receiver):
            return
        self._check(ctx, call.node, call.receiver, f"`.{call.name}()`")

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if ctx.scope_of(node).no_grad or through_data_or_grad(node.target):
            return
        self._check(ctx, node, node.target, f"`{ctx.code(node.operator).strip()}`")

    def _check(self, ctx: FileContext, node, target, op: str) -> None:
        value = ctx.value(target)
        if value.kind != "param" or value.tracked is False:
            return  # through `.data` / `requires_grad_(False)`: autograd does not track it
        what = {"leaf": "a requires_grad leaf", "view": "a slice of a parameter"}.get(value.qual, "a parameter")
        error = "a view of a leaf Variable" if value.qual == "view" else "a leaf Variable"
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: {op} modifies {what} in place outside torch.no_grad(): \"{error} "
            "that requires grad is being used in an in-place operation\". Wrap it in `with torch.no_grad():`",
        )
