"""The interface every static rule implements, and helpers they share."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import Value
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.read_out import NUMBERS, only_read_out


DELETE_LINE = "\x00delete-line"  # a replacement that removes the node's whole lines


class Rule:
    """A rule reacts to the walker's events; it overrides only the hooks it needs."""

    info: RuleInfo

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        """A call, resolved to a canonical op where possible."""

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        """A binary operation, visited before its operands (pre-order)."""

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        """An augmented assignment such as `x /= n`."""

    def on_with(self, ctx: FileContext, node: cst.With) -> None:
        """A `with` statement, before its body."""

    def on_end(self, ctx: FileContext) -> None:
        """After the whole file: loop and module logs are complete (ctx.loops, ctx.module_body)."""


def loss_input(call: CallInfo) -> cst.BaseExpression | None:
    """The prediction a loss is given: `F.nll_loss(input, ...)`, `criterion(input, ...)`."""
    return call.param(0, "input") if call.form == "function" else call.operand


def made_at(ctx: FileContext, prediction, what: str) -> tuple[tuple[cst.CSTNode, str], ...]:
    """The expression that produced the loss's input, as a related location (`the sigmoid is applied
    here`), when it is another expression than the argument itself (a model's forward, a helper)."""
    value = ctx.value(prediction)
    node = value.node
    if node is None or node is prediction or not isinstance(node, cst.CSTNode):
        return ()
    if value.origin and value.origin != ctx.path:  # a caller in another module passes it
        return ((node, what, value.origin),)
    return ((node, what),)


def alternatives(ctx: FileContext, prediction, made: Callable[[Value], str]) -> list[tuple[str, Value, tuple]]:
    """The value of `prediction` (related: where it is made, described by `made(value)`), then, where
    it is a model output whose class is chosen by configuration (`MLP() if ... else CNN()`), what each
    class returns: (when, value, related) with `when` like " when the model is `MLP`" and the class's
    return as the related location."""
    value = ctx.value(prediction)
    found: list[tuple[str, Value, tuple]] = [("", value, made_at(ctx, prediction, made(value)))]
    for cls, result in value.alts:
        node = result.node
        related = ((node, f"`{cls.name}.forward` returns this", cls.module),) if isinstance(node, cst.CSTNode) else ()
        found.append((f" when the model is `{cls.name}`", result, related))
    return found


def spelled(ctx: FileContext, call: CallInfo, name: str) -> str | None:
    """How to write the function `name` in the same namespace as `call` (torch.log -> torch.log1p)."""
    if call.form != "function" or call.qual is None:
        return None
    func = call.node.func
    if isinstance(func, cst.Attribute):
        return ctx.exact_code(func.value) + "." + name
    module = call.qual.rsplit(".", 1)[0]
    return ctx.alias_for(f"{module}.{name}")


def atom(ctx: FileContext, node: cst.BaseExpression) -> str:
    """Source of `node`, parenthesised unless it is already an atom."""
    text = ctx.exact_code(node)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return text
    return f"({text})"




def read_out(ctx: FileContext) -> set[int]:
    """Ids of the expressions the file turns into plain numbers (`dist.item()`, `x.sqrt().tolist()`):
    metrics and logs, never differentiated."""
    found = ctx.memo.get("read out")
    if found is None:
        found = {id(info.receiver) for info in ctx.calls.values()
                 if info.form == "method" and info.name in NUMBERS and info.receiver is not None}
        ctx.memo["read out"] = found
    return found


def read_out_as_numbers(ctx: FileContext, node) -> bool:
    """A metric or a log: `dist.item()` itself, or a name every use of which reads it out as numbers
    or compares it (`epe = d.sqrt()`, then `epe.mean().item()`; see interpret.read_out)."""
    return id(node) in read_out(ctx) or only_read_out(ctx.module, node, ctx.memo)


def whole_mean(ctx: FileContext, node) -> bool:
    """`torch.mean(err)` / `err.mean()` with no dim: the mean over every element (of a batch, an epoch).
    Its root (an RMSE) is 0 only where every element is exactly 0: no batch of real data gets there."""
    call = ctx.call(node)
    if call is None or call.op != "mean" or "dim" in call.kwargs or "axis" in call.kwargs:
        return False
    return len(call.args) == (0 if call.form == "method" else 1)
