"""TL201 data-attribute: a `.data` write while a graph that saved the tensor is alive."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.scopes import Mark
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, classify


MODULE_METHODS = frozenset({"parameters", "named_parameters", "train", "eval", "zero_grad", "state_dict"})


def _forward(ctx: FileContext, entry, modules: set[str]) -> bool:
    """A call that runs a model's forward pass: a module instance, or a callee the file also treats
    as a module (`model.parameters()`, `model.train()`)."""
    if not isinstance(entry, CallInfo) or entry.scope.no_grad or entry.form not in ("local", "module"):
        return False
    callee = entry.callee
    if callee.kind == "instance":
        return callee.cls is not None and callee.cls.is_module
    if callee.kind == "module":
        return entry.op in (None, "linear", "sequential", "embedding")
    return ctx.shape(entry.node.func) in modules


class DataAttribute(Rule):
    info = RuleInfo(
        "TL201", "data-attribute", "warning",
        "Writing through `.data` while a graph that saved the tensor is alive gives silently wrong gradients.",
        tags=("autograd",),
    )

    def on_end(self, ctx: FileContext) -> None:
        writes = [e for e in ctx.timeline if isinstance(e, Mark) and e.kind == "data_write"]
        if not writes:
            return  # nothing to report: the loops' expanded walks below can be long (calls are followed)
        for entry in writes:
            if _activation(entry):
                self._report(ctx, entry, f"`{ctx.code(entry.node.value, 30)}` is an activation computed with "
                             "gradients: backward will use the values the forward pass saved, as if this "
                             "write never happened")
        modules = {ctx.shape(c.receiver) for c in ctx.calls.values()
                   if c.form == "method" and c.name in MODULE_METHODS and c.receiver is not None}
        for loop in ctx.loops:
            alive = None
            for entry in loop.walk():
                if _forward(ctx, entry, modules):
                    alive = alive or entry
                elif classify(ctx, entry) == BACKWARD:
                    alive = None
                elif isinstance(entry, Mark) and entry.kind == "data_write" and alive is not None \
                        and entry.value.kind == "param" and not entry.scope.init:
                    self._report(ctx, entry, f"it changes a parameter after `{ctx.code(alive.node, 30)}` ran "
                                 "the forward pass and before backward(): the gradients are computed for the "
                                 "old weights, silently (autograd does not see `.data` writes)")

    def _report(self, ctx: FileContext, mark: Mark, why: str) -> None:
        if ctx.is_claimed(mark.node):
            return
        ctx.report(self.info, mark.node, f"`{ctx.code(mark.node)}` is written through `.data`: {why}. Write it "
                   "after backward() under `with torch.no_grad():` (an in-place change autograd can check)")


def _activation(mark: Mark) -> bool:
    """A write to a non-leaf tensor that carries autograd history, where gradients are on."""
    value = mark.value
    return value.kind is None and bool(value.tracked) and not mark.scope.no_grad and not mark.scope.init
