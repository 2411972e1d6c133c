"""TL104 hand-written-bce: -(y*log(p) + (1-y)*log(1-p))."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.facts.ops import LOG_OPS
from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl101_unguarded_log import log_hazard


class HandWrittenBce(Rule):
    info = RuleInfo(
        "TL104", "hand-written-bce", "warning",
        "Hand-written binary cross-entropy is -inf/NaN when p reaches 0 or 1.",
        tags=("numerics", "nan", "loss"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        done = ctx.memo.setdefault(self.info.code, set())
        if ctx.is_claimed(node) or id(node) in done:
            return
        logs: list[CallInfo] = []
        inner: list[cst.CSTNode] = []
        signs: dict[int, int] = {}
        _collect(ctx, node, logs, inner, signs)
        # the operations inside were judged with this one (their log pairs are among its pairs):
        # not collecting each again keeps a long chain `a + b + c + ...` linear instead of quadratic
        done.update(id(n) for n in inner)
        if len(logs) < 2:
            return
        texts = {id(log): ctx.shape(log.operand) for log in logs if log.operand is not None}
        for first in logs:
            for second in logs:
                complement = second.operand
                if not (isinstance(complement, cst.BinaryOperation)
                        and isinstance(complement.operator, cst.Subtract)):
                    continue
                if ctx.value(complement.left).const != 1:
                    continue
                if ctx.shape(complement.right) != texts.get(id(first)):
                    continue
                if signs[id(first)] != signs[id(second)]:
                    continue  # `log(u) - log(1 - u)`: the log-odds of u (logistic noise), not a cross-entropy
                if ctx.value(first.operand).positive and not log_hazard(ctx.value(complement)):
                    continue  # clamped or eps-guarded: a deliberate, safe form (unless the upper bound
                    # rounds to 1: `clamp(p, 1e-8, 1 - 1e-8)` is `clamp(p, 1e-8, 1.0)` in float32)
                for claimed in inner:
                    ctx.claim(claimed)
                for log in logs:
                    ctx.claim(log.node)
                probability = ctx.code(first.operand, 30)
                complement_value = ctx.value(complement)
                why = f"log({probability}) and log(1 - {probability}) are -inf when it saturates at 0 or 1"
                if ctx.value(first.operand).positive:
                    why = f"log(1 - {probability}) is -inf where {probability} reaches 1: `1 - {probability}` is " \
                          f"{complement_value.desc}"
                ctx.report(
                    self.info, node,
                    f"hand-written binary cross-entropy on `{probability}`: {why}; compute the loss "
                    "from logits with binary_cross_entropy_with_logits",
                )
                return


def _collect(ctx: FileContext, node, logs: list[CallInfo], inner: list, signs: dict[int, int] | None = None,
             sign: int = 1) -> None:
    """The log calls under ``node`` (through + - * / unary minus, sum and mean), each with the sign it
    enters the total with (``signs``: by id of the call)."""
    if isinstance(node, cst.BinaryOperation):
        inner.append(node)
        left, right = sign, -sign if isinstance(node.operator, cst.Subtract) else sign
        if isinstance(node.operator, (cst.Multiply, cst.Divide)):  # `-y * log(p)`: the factor's sign
            left, right = left * _sign(node.right), right * _sign(node.left)
        _collect(ctx, node.left, logs, inner, signs, left)
        _collect(ctx, node.right, logs, inner, signs, right)
    elif isinstance(node, cst.UnaryOperation):
        _collect(ctx, node.expression, logs, inner, signs, -sign if isinstance(node.operator, cst.Minus) else sign)
    elif isinstance(node, cst.Call):
        call = ctx.call(node)
        if call is None:
            return
        if call.op in LOG_OPS:
            logs.append(call)
            if signs is not None:
                signs[id(call)] = sign
        elif call.op in ("mean", "sum") and call.operand is not None:
            _collect(ctx, call.operand, logs, inner, signs, sign)



def _sign(node) -> int:
    return -1 if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) else 1
