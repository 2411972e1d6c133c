"""TL105 unguarded-sqrt: sqrt of a value that can be 0 or negative."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.one_pass_variance import one_pass_variance
from torchlint.static.interpret.grad_mode import never_differentiated
from torchlint.static.rules.base import Rule, read_out_as_numbers, whole_mean
from torchlint.static.facts.values import DEGENERATE, SATURATION


class UnguardedSqrt(Rule):
    info = RuleInfo(
        "TL105", "unguarded-sqrt", "warning",
        "sqrt of a value that can be 0 (infinite gradient) or negative (NaN); add an eps.",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.operand is None:
            return
        if call.op in ("sqrt", "rsqrt"):
            # NumPy and math record no gradient, and their sqrt(0) is 0: only a negative variance is NaN
            self._check(ctx, call.node, call.operand, call.op,
                        gradient=not (call.qual or "").startswith(("numpy.", "math.")))
        elif call.op == "pow" and ctx.value(call.param(1, "exponent")).const == 0.5:
            self._check(ctx, call.node, call.operand, "sqrt")

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power) and ctx.value(node.right).const == 0.5:
            self._check(ctx, node, node.left, "sqrt")

    def _check(self, ctx: FileContext, node, operand, op: str, gradient: bool = True) -> None:
        if ctx.is_claimed(node):
            return
        variance = one_pass_variance(ctx, operand)
        if variance is not None:
            ctx.report(self.info, node,
                       f"`{ctx.code(node)}` takes the root of `{ctx.code(variance, 50)}`, a variance computed as "
                       "E[x²] - E[x]²: when the mean is large next to the spread (raw readings, a constant "
                       "column) the two terms are nearly equal and the difference rounds to a negative "
                       f"number, so {op} gives NaN (an eps does not help). Use x.var() / x.std(), which "
                       "subtract the mean first, or clamp the difference at 0",
                       related=((variance, "the variance is computed here"),))
            return
        if not gradient:
            return
        value = ctx.value(operand)
        problem = sqrt_problem(value, op)
        if problem is None or (op == "sqrt" and whole_mean(ctx, operand)):
            return  # a root-mean-square over every element: 0 only where the whole batch is exact
        if op == "rsqrt" and value.reaches_zero(SATURATION):
            self._report(ctx, node, operand, op, problem)
        else:  # a gradient hazard: not one where the result is only read out as numbers (decided at the end)
            ctx.memo.setdefault(self.info.code, []).append((node, operand, op, problem))

    def on_end(self, ctx: FileContext) -> None:
        pending = ctx.memo.get(self.info.code, ())
        if not pending or never_differentiated(ctx):
            return
        for node, operand, op, problem in pending:
            if not ctx.is_claimed(node) and not read_out_as_numbers(ctx, node):
                self._report(ctx, node, operand, op, problem)

    def _report(self, ctx: FileContext, node, operand, op: str, problem: str) -> None:
        value = ctx.value(operand)
        what = value.desc or "a value that"
        ctx.report(self.info, node, f"`{ctx.code(node)}`: `{ctx.code(operand, 40)}` is {what} and can be 0"
                   f"{problem}. Add an eps inside: {op}(x + eps)")


def sqrt_problem(value, op: str) -> str | None:
    """Why sqrt/rsqrt of this value is a hazard, or None: rsqrt(0) is inf in the forward pass; sqrt's
    gradient at 0 is inf, which only matters where autograd records the op."""
    if op == "rsqrt" and value.reaches_zero(SATURATION):
        return "; rsqrt(0) is inf"
    if value.reaches_zero(DEGENERATE) and value.tracked:
        return f", and it carries gradients: the gradient of {op} at 0 is inf (NaN once multiplied by 0)"
    return None
