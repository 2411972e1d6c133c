"""TL113 imprecise-expm1: exp(x) - 1 -> expm1(x)."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import literal_number
from torchlint.static.interpret.context import FileContext, PendingFix
from torchlint.static.rules.base import Rule, atom, spelled


class ImpreciseExpm1(Rule):
    info = RuleInfo(
        "TL113", "imprecise-expm1", "info",
        "exp(x) - 1 cancels to 0 for small x; expm1(x) is exact.",
        default_enabled=False,  # opt-in: no evidence that x is small (0 of 3 findings real in public code)
        fixable=True, tags=("numerics", "precision"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Subtract) or ctx.is_claimed(node):
            return
        right = node.right
        if not (isinstance(right, (cst.Integer, cst.Float)) and literal_number(right.value) == 1):
            return
        exp = ctx.call(node.left)
        if exp is None or exp.op != "exp" or exp.operand is None or node.left.lpar:
            return
        if exp.form == "method":
            replacement = f"{atom(ctx, exp.operand)}.expm1()"
        else:
            expm1 = spelled(ctx, exp, "expm1")
            replacement = f"{expm1}({ctx.exact_code(exp.operand)})" if expm1 else None
        fix = PendingFix("Use expm1", "safe", [(node, replacement)]) if replacement else None
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: exp(x) rounds to 1 for |x| < 6e-8 (float32), so the difference is 0; "
            "expm1(x) keeps the precision",
            fix,
        )
