"""Gradient accumulation: an inner loop that clears on every micro-batch, and a schedule counted in
optimizer updates.

`for step in ...: for _ in range(accum): zero_grad(); backward()` then `step()` right after the
inner loop (through the file's functions and methods: `self.micro_step(batch)`): each inner
iteration clears what the one before added, so the step applies the last micro-batch only. An
inner loop whose gradients are cleared again before the next backward and step (per-sample
gradient norms) is not one.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.training import (
    BACKWARD,
    CLIP,
    STEP,
    UNSCALE,
    ZERO_GRAD,
    Action,
    gates_in,
    loop_actions,
)
from torchlint.static.traverse import nodes_of


def cleared_inner_loops(ctx: FileContext) -> list[tuple[Action, Action]]:
    """(the clearing, the step it undoes) for each such inner loop."""
    found: list[tuple[Action, Action]] = []
    for loop in ctx.loops:
        deeper = _in_inner_loops(ctx, loop)
        own = [a for a in loop_actions(ctx, loop) if id(a.node) not in deeper]
        if any(a.kind == STEP for a in own):
            continue  # stepped in this loop: the one-loop form (TL303's periodic check)
        every = [a for a in own if gates_in(loop, a) == ()]
        clears = next((a for a in every if a.kind == ZERO_GRAD), None)
        if clears is None or not any(a.kind == BACKWARD for a in every) or _harvests_gradients(loop):
            continue
        step = _step_after(ctx, loop, loop_actions(ctx, loop))
        if step is not None:
            found.append((clears, step))
    return found


def _harvests_gradients(loop: Body) -> bool:
    """The loop reads `.grad` after its backward (in its own code or a function it calls): each
    pass's gradients are taken before the next clears them (PCGrad's per-task gradients, per-sample
    gradients), not accumulated."""
    roots = [loop.node]
    for entry in loop.walk():
        body = getattr(getattr(entry, "callee", None), "body", None)
        if isinstance(body, Body) and isinstance(body.node, cst.FunctionDef):
            roots.append(body.node)
    for root in roots:
        assigned = {id(target.target) for node in nodes_of(root, (cst.Assign,)) for target in node.targets}
        if any(node.attr.value == "grad" and id(node) not in assigned for node in nodes_of(root, (cst.Attribute,))):
            return True
    return False


def _in_inner_loops(ctx: FileContext, loop: Body) -> set[int]:
    """The nodes of the actions that run in loops nested in `loop` (once per inner iteration)."""
    found: set[int] = set()
    for entry in loop.walk():
        if isinstance(entry, Body) and entry.kind == "loop" and entry is not loop:
            found.update(id(a.node) for a in loop_actions(ctx, entry))
    return found


def _step_after(ctx: FileContext, inner: Body, own: list[Action]) -> Action | None:
    """The optimizer step an enclosing loop runs right after `inner` (no backward or clearing in
    between; unscaling and clipping may come first)."""
    mine = {id(a.node) for a in own}
    for outer in ctx.loops:
        if outer is inner:
            continue
        sequence = loop_actions(ctx, outer)
        positions = [i for i, a in enumerate(sequence) if id(a.node) in mine]
        if len(positions) != len(own):
            continue
        following = [a for a in sequence[positions[-1] + 1:] if a.kind not in (CLIP, UNSCALE)]
        if following and following[0].kind == STEP:
            return following[0]
    return None


def schedule_counts_updates(ctx: FileContext, test: cst.BaseExpression) -> str | None:
    """For a step gated by `(i + 1) % K == 0`: K's code when the file counts its schedule in optimizer
    updates, a number of batches divided by K (`epochs * len(loader) // K`); else None."""
    for node in nodes_of(test, (cst.BinaryOperation,)):
        if isinstance(node.operator, cst.Modulo):
            period = ctx.code(node.right, 80)
            divided = re.compile(r"len\([^\n]*?/{1,2}\s*\(?\s*" + re.escape(period) + r"\b")
            return period if divided.search(ctx.source) else None
    return None
