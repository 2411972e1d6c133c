"""TL203 inplace-on-saved-tensor: in-place op on a tensor autograd saved for backward."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl202_inplace_on_leaf import is_inplace_method

# Ops whose backward reads their own output.
SAVES_OUTPUT = frozenset({"sigmoid", "tanh", "exp", "softmax", "log_softmax", "relu", "sqrt", "rsqrt"})


def _recorded(ctx: FileContext, node, value) -> bool:
    """Evidence that autograd records the op: a forward method, a function that runs backward, or an
    input that is an activation (a linear/matmul output or a parameter). Optimizer-state math is not."""
    if value.of is not None and (value.of.unbounded or value.of.kind == "param"):
        return True
    call = ctx.call(node)
    scope = call.scope if call is not None else ctx.scope_of(node)
    if scope.function is None or scope.function == "forward":
        return True
    return any(body.scope.function == scope.function and
               any(getattr(e, "name", "") == "backward" for e in body.walk()) for body in ctx.functions)


class InplaceOnSavedTensor(Rule):
    info = RuleInfo(
        "TL203", "inplace-on-saved-tensor", "error",
        "In-place op on a tensor that autograd saved for backward: 'modified by an inplace operation'.",
        tags=("autograd",),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if is_inplace_method(call) and not call.scope.no_grad:
            self._check(ctx, call.node, call.receiver, f"`.{call.name}()`")

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if not ctx.scope_of(node).no_grad:
            self._check(ctx, node, node.target, f"`{ctx.code(node.operator).strip()}`")

    def _check(self, ctx: FileContext, node, target, op: str) -> None:
        value = ctx.value(target)
        producer = ctx.call(value.node)
        if producer is None or producer.op not in SAVES_OUTPUT or value.kind is not None or ctx.is_claimed(node):
            return  # only the op's own output (or a view of it), not a copy such as gather()
        if not _recorded(ctx, node, value):
            return
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: {op} overwrites `{ctx.code(target, 30)}`, the output of {value.op}, which "
            f"{value.op}'s backward reads: backward fails with \"modified by an inplace operation\". Use the "
            "out-of-place form",
        )
