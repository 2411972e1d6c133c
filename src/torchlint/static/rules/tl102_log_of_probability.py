"""TL102 log-of-probability: log(softmax(x)) / log(sigmoid(x)) / log of a mixture of softmax outputs."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.interpret.sampling import picked_from, sampled_distribution
from torchlint.static.rules.base import Rule, made_at, spelled
from torchlint.static.traverse import local_assignments

_BETTER = {"softmax": "log_softmax", "sigmoid": "logsigmoid"}
_SAMPLED, _PICKED = "tl102_sampled", "tl102_picked"  # ctx.memo keys


class LogOfProbability(Rule):
    info = RuleInfo(
        "TL102", "log-of-probability", "warning",
        "log of a softmax/sigmoid output underflows to -inf; use log_softmax / logsigmoid.",
        fixable=True, tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        drawn = sampled_distribution(call)
        if drawn is not None:
            ctx.memo.setdefault(_SAMPLED, set()).add(id(ctx.value(drawn).node))
            return
        if call.op != "log" or call.operand is None or ctx.is_claimed(call.node):
            return
        value = ctx.value(call.operand)
        source = picked_from(call.operand, _assignments(ctx)) if value.op == "softmax" else None
        if source is not None and ctx.value(source).node is not None:
            # `log(pi.gather(1, a))`: reported at the end unless the file samples its actions from pi
            ctx.memo.setdefault(_PICKED, {})[id(call.node)] = (call, value, ctx.value(source).node)
            return
        self._report(ctx, call, value)

    def on_end(self, ctx: FileContext) -> None:
        sampled = ctx.memo.get(_SAMPLED, set())
        for call, value, distribution in ctx.memo.get(_PICKED, {}).values():
            if id(distribution) not in sampled:
                self._report(ctx, call, value)

    def _report(self, ctx: FileContext, call: CallInfo, value) -> None:
        if (value.op not in _BETTER and value.op != "mixture") or value.f64:
            return  # in float64 the probability underflows to 0 only past a logit gap of ~745
        if value.op == "mixture":
            ctx.report(self.info, call.node, (
                f"`{ctx.code(call.node)}`: `{ctx.code(call.operand, 40)}` is {value.desc}; its log is -inf "
                "wherever every component underflows to 0 (NaN gradients). Mix in log space: "
                "torch.logsumexp(torch.stack([log(w) + log_softmax(a), log(1 - w) + log_softmax(b)]), 0)"),
                related=made_at(ctx, call.operand, "the mixture is formed here"))
            return
        better = _BETTER[value.op]
        message = (
            f"`{ctx.code(call.node)}`: `{ctx.code(call.operand, 40)}` is {value.desc}; "
            f"log underflows to -inf where {better}(x) stays finite"
        )
        ctx.report(self.info, call.node, message, _fix(ctx, call, value.node, better),
                   related=made_at(ctx, call.operand, f"the {value.op} is applied here"))


def _fix(ctx: FileContext, call: CallInfo, producer_node, better: str) -> PendingFix | None:
    producer = ctx.call(producer_node)
    if producer is None or producer_node is not call.operand or producer.node.lpar:
        return None
    if better == "log_softmax":
        if producer.form == "method":
            new_func = f"{ctx.exact_code(producer.receiver)}.log_softmax"
        elif producer.form == "function":
            new_func = spelled(ctx, producer, "log_softmax")
        else:
            return None
        if new_func is None:
            return None
        text = ctx.exact_code(producer.node)
        old_func = ctx.exact_code(producer.node.func)
        if not text.startswith(old_func):
            return None
        replacement = new_func + text[len(old_func):]
    else:
        logsigmoid = ctx.alias_for("torch.nn.functional.logsigmoid")
        x = producer.operand
        if logsigmoid is None or x is None or len(producer.args) + len(producer.kwargs) > (producer.form != "method"):
            return None
        replacement = f"{logsigmoid}({ctx.exact_code(x)})"
    if not isinstance(call.node, cst.Call):
        return None
    return PendingFix(f"Replace with {better}", "safe", [(call.node, replacement)])


def _assignments(ctx: FileContext) -> dict[str, list]:
    """`local_assignments` of the function being walked (or of the module), once per scope."""
    return ctx.assignments(ctx.enclosing[-1] if ctx.enclosing else ctx.module)
