"""TL106 unguarded-division: dividing by a reduction or array that can be 0."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.facts.values import POS

# Divisors that are 0 for an all-zero or constant input, or that count things.
_ZERO_PRONE = frozenset({"norm", "std", "var", "count", "range", "complement", "shift"})


class UnguardedDivision(Rule):
    info = RuleInfo(
        "TL106", "unguarded-division", "warning",
        "Division by a sum/norm/std/count or an array that can be 0 gives inf/NaN; add an eps.",
        tags=("numerics", "nan"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(ctx, node, node.right)

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(ctx, node, node.value)

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op == "divide":
            divisor = call.param(1, "other")
            if divisor is not None:
                self._check(ctx, call.node, divisor)

    def _check(self, ctx: FileContext, node, divisor) -> None:
        value = ctx.value(divisor)
        if value.sign == POS or ctx.is_claimed(node):
            return
        literal_zero = value.zero and value.op == "tensor"
        # A sum/mean is only reported when what it adds up can itself be 0 (masks, ReLU outputs...).
        summed_zero = value.op in ("sum", "mean") and value.hazard
        if not (literal_zero or summed_zero or value.op in _ZERO_PRONE):
            return
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: the divisor `{ctx.code(divisor, 40)}` is {value.desc or 'a reduction'} "
            "and can be 0; add an eps or clamp it (x / d.clamp_min(eps))",
        )
