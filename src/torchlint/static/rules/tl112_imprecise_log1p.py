"""TL112 imprecise-log1p: log(1 + x) -> log1p(x)."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import literal_number
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.facts.ops import INTEGRAL_OPS
from torchlint.static.rules.base import Rule, atom, spelled


class ImpreciseLog1p(Rule):
    info = RuleInfo(
        "TL112", "imprecise-log1p", "info",
        "log(1 + x) loses all precision for small x; log1p(x) is exact. log(1 + exp(x)) is softplus.",
        default_enabled=False, fixable=True, tags=("numerics", "precision"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        argument = call.operand
        if call.op != "log" or ctx.is_claimed(call.node) or not isinstance(argument, cst.BinaryOperation):
            return
        if not isinstance(argument.operator, cst.Add):
            return
        if _is_one(argument.left):
            other = argument.right
        elif _is_one(argument.right):
            other = argument.left
        else:
            return
        if ctx.value(other).op in INTEGRAL_OPS:
            return  # 1 + an integer-valued tensor is exact: log1p gains nothing
        inner = ctx.call(other)
        if inner is not None and inner.op == "exp" and inner.operand is not None:
            ctx.claim(other)
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node)}` is softplus written by hand: exp overflows for inputs above "
                "88 and the log(1 + ...) loses precision; use torch.nn.functional.softplus",
            )
            return
        if call.form == "method":
            replacement = f"{atom(ctx, other)}.log1p()"
        else:
            log1p = spelled(ctx, call, "log1p")
            replacement = f"{log1p}({ctx.exact_code(other)})" if log1p else None
        fix = PendingFix("Use log1p", "safe", [(call.node, replacement)]) if replacement else None
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}`: 1 + x rounds to 1 for |x| < 6e-8 (float32), so the log is 0; "
            "log1p(x) keeps the precision",
            fix,
        )


def _is_one(node) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and not node.lpar and literal_number(node.value) == 1
