"""TL114 naive-logsumexp: log(sum(exp(x))) -> logsumexp(x)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.rules.base import Rule, atom, spelled


class NaiveLogsumexp(Rule):
    info = RuleInfo(
        "TL114", "naive-logsumexp", "warning",
        "log(sum(exp(x))) overflows for x > 88; logsumexp subtracts the max first.",
        fixable=True, tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op != "log" or call.operand is None or ctx.is_claimed(call.node):
            return
        total = ctx.value(call.operand)
        exp = total.of
        if total.op != "sum" or exp is None or exp.op != "exp":
            return
        if exp.of is not None and (exp.of.shifted or exp.of.op in ("sub", "shift")):
            return  # exp(x - m) is the stable form written out
        if exp.node is not None:
            ctx.claim(exp.node)
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}` overflows to inf once any input exceeds 88 (float32); use "
            "logsumexp, which subtracts the max first",
            _fix(ctx, call, total, exp),
        )


def _fix(ctx: FileContext, call: CallInfo, total, exp) -> PendingFix | None:
    sum_call = ctx.call(total.node)
    exp_call = ctx.call(exp.node)
    if sum_call is None or exp_call is None or total.node is not call.operand:
        return None
    if sum_call.operand is not exp_call.node or exp_call.operand is None:
        return None
    dim = sum_call.param(1, "dim")
    if dim is None or any(key not in ("dim", "keepdim") for key in sum_call.kwargs):
        return None
    x = exp_call.operand
    keepdim = sum_call.kwargs.get("keepdim")
    extra = f", keepdim={ctx.exact_code(keepdim)}" if keepdim is not None else ""
    if call.form == "method":
        replacement = f"{atom(ctx, x)}.logsumexp({ctx.exact_code(dim)}{extra})"
    else:
        if not (call.qual or "").startswith("torch."):
            return None
        logsumexp = spelled(ctx, call, "logsumexp")
        if logsumexp is None:
            return None
        replacement = f"{logsumexp}({ctx.exact_code(x)}, {ctx.exact_code(dim)}{extra})"
    return PendingFix("Use logsumexp", "safe", [(call.node, replacement)])
