"""Shared by the training-loop rules: what a logged call does to gradients and parameters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.scopes import Body, Mark

BACKWARD, STEP, ZERO_GRAD, CLIP, UNSCALE, GRAD = "backward", "step", "zero_grad", "clip", "unscale", "grad"
CLIP_NAMES = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_gradients"})


@dataclass(frozen=True)
class Action:
    kind: str
    node: cst.CSTNode
    call: CallInfo | None = None


def classify(ctx: FileContext, entry) -> str | None:
    if isinstance(entry, Mark):
        return ZERO_GRAD if entry.kind == "grad_none" else None
    if not isinstance(entry, CallInfo):
        return None
    name = entry.name
    if entry.form == "function":
        qual = entry.qual or ""
        if qual == "torch.autograd.backward":
            return BACKWARD
        if qual == "torch.autograd.grad":
            return GRAD
        if name in CLIP_NAMES and qual.startswith("torch."):
            return CLIP
        return None
    if entry.form != "method":
        return None
    if name == "backward":
        return BACKWARD
    if name == "zero_grad":
        return ZERO_GRAD
    if name in CLIP_NAMES:
        return CLIP
    if name == "unscale_":
        return UNSCALE
    if name == "zero_" and isinstance(entry.receiver, cst.Attribute) and entry.receiver.attr.value == "grad":
        return ZERO_GRAD
    if name == "step" and _is_optimizer(ctx, entry.receiver):
        return STEP
    return None


def _is_optimizer(ctx: FileContext, receiver) -> bool:
    """An optimizer or GradScaler: from its constructor when visible, else from how it is named."""
    value = ctx.value(receiver)
    if value.kind in ("optimizer", "scaler"):
        return True
    if value.kind is not None:  # a scheduler, a model, a dataloader...
        return False
    name = ctx.shape(receiver).lower().rsplit(".", 1)[-1]
    return ("opt" in name or "scaler" in name) and "sched" not in name


def actions(ctx: FileContext, body: Body) -> Iterator[Action]:
    """The gradient actions a body performs, in order, through nested loops and local calls."""
    for entry in body.walk():
        kind = classify(ctx, entry)
        if kind is not None:
            yield Action(kind, entry.node, entry if isinstance(entry, CallInfo) else None)


def trains(kinds: set[str]) -> bool:
    return BACKWARD in kinds and STEP in kinds


def innermost_training_loops(ctx: FileContext) -> list[tuple[Body, list[Action]]]:
    """Loops that run backward and an optimizer step, keeping the innermost of nested ones."""
    found = []
    for loop in ctx.loops:
        steps = list(actions(ctx, loop))
        if not trains({a.kind for a in steps}):
            continue
        nested = [e for e in loop.walk(expand=False) if isinstance(e, Body) and e.kind == "loop"]
        if any(trains({a.kind for a in actions(ctx, inner)}) for inner in nested):
            continue
        found.append((loop, steps))
    return found


def uses_scaler(ctx: FileContext, steps: list[Action]) -> bool:
    for action in steps:
        call = action.call
        if call is None or call.form != "method":
            continue
        receiver = ctx.value(call.receiver)
        if action.kind == STEP and (receiver.kind == "scaler" or "scaler" in ctx.shape(call.receiver).lower()):
            return True
        if action.kind == BACKWARD and isinstance(call.receiver, cst.Call):
            inner = ctx.call(call.receiver)
            if inner is not None and inner.name == "scale":
                return True
    return False


def loop_header(loop: Body) -> cst.CSTNode:
    """The node a loop finding points at: the `for`/`while` statement (reported at its keyword)."""
    return loop.node
