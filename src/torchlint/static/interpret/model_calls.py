"""Calls of models and layers: which calls run a model, and whether their output has autograd history."""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext


def with_history(ctx: FileContext, call: cst.Call) -> bool:
    """A model's output with autograd history: known so, or (a tuple of outputs and state, whose history
    the walker does not split) a torch layer's or an `nn.Module` subclass's call outside `no_grad`."""
    tracked = ctx.value(call).tracked
    if tracked is not None:
        return tracked
    info = ctx.call(call)
    if info.scope.no_grad:
        return False
    callee = info.callee
    if callee.kind == "module":
        return True
    bases = callee.cls.bases if callee.cls is not None else []
    return any(base.rsplit(".", 1)[-1] == "Module" for base in bases)


def is_model_call(ctx: FileContext, call: cst.Call) -> bool:
    info = ctx.call(call)
    return info is not None and info.form in ("local", "module") and info.callee.kind in ("instance", "module") \
        and isinstance(call.func, (cst.Name, cst.Attribute))
