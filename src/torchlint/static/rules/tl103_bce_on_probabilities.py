"""TL103 bce-on-probabilities: binary_cross_entropy / BCELoss fed sigmoid outputs."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext, PendingFix
from torchlint.static.rules.base import Rule, loss_input, made_at, spelled


class BceOnProbabilities(Rule):
    info = RuleInfo(
        "TL103", "bce-on-probabilities", "warning",
        "BCE on sigmoid outputs saturates; feed logits to binary_cross_entropy_with_logits.",
        fixable=True, tags=("numerics", "nan", "loss"),
        options={"mode": "local", "mode:choices": ("local", "always")},
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op != "bce":
            return
        prediction = loss_input(call)
        value = ctx.value(prediction)
        if prediction is None:
            return
        where = "BCELoss" if call.form == "module" else "binary_cross_entropy"
        if call.scope.fp16 and not call.scope.no_grad:
            ctx.report(self.info, call.node, f"`{ctx.code(call.node)}` runs under a float16 autocast, where {where} "
                       "refuses to run (\"unsafe to autocast\": a RuntimeError on CUDA). Give the logits to "
                       "binary_cross_entropy_with_logits / BCEWithLogitsLoss, or compute the loss outside the "
                       "autocast region in float32", related=made_at(ctx, prediction, "the sigmoid is applied here")
                       if value.op == "sigmoid" else ())
            return
        if value.op != "sigmoid":
            return
        if ctx.option(self.info, "mode") == "local" and not _same_function(ctx, call, value.node):
            return  # a model whose forward ends in a sigmoid: its output is part of its interface
        message = (
            f"`{ctx.code(call.node)}`: `{ctx.code(prediction, 40)}` is {value.desc}; {where} on "
            "probabilities saturates at 0/1 (clamped log, vanishing gradient). Pass the logits to "
            "binary_cross_entropy_with_logits / BCEWithLogitsLoss"
        )
        ctx.report(self.info, call.node, message, _fix(ctx, call, prediction, value.node),
                   related=made_at(ctx, prediction, "the sigmoid is applied here"))


def _same_function(ctx: FileContext, call: CallInfo, producer_node) -> bool:
    """The sigmoid is applied next to the loss, where dropping it changes nothing else: a sigmoid
    call, not a model (`D(x)` of an `nn.Sequential(..., nn.Sigmoid())`) whose output is one."""
    producer = ctx.call(producer_node)
    return producer is not None and producer.op == "sigmoid" and producer.scope.function == call.scope.function


def _fix(ctx: FileContext, call: CallInfo, prediction, producer_node) -> PendingFix | None:
    producer = ctx.call(producer_node)
    if call.form != "function" or producer is None or producer_node is not prediction:
        return None
    logits = producer.operand
    new_func = spelled(ctx, call, "binary_cross_entropy_with_logits")
    if logits is None or new_func is None or producer.node.lpar:
        return None
    if len(producer.args) + len(producer.kwargs) > (producer.form != "method"):
        return None
    replacements = [(call.node.func, new_func), (producer.node, ctx.exact_code(logits))]
    return PendingFix("Use binary_cross_entropy_with_logits on the logits", "safe", replacements)
