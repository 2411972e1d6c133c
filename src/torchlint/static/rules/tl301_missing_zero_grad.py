"""TL301 missing-zero-grad: a training loop that never clears gradients."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOSS_OPS
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.training import (
    BACKWARD,
    STEP,
    ZERO_GRAD,
    classify,
    enclosing_function,
    innermost_training_loops,
    loop_header,
    paths,
)
from torchlint.static.rules.base import Rule


class MissingZeroGrad(Rule):
    info = RuleInfo(
        "TL301", "missing-zero-grad", "error",
        "A loop that calls backward() and step() but never zero_grad(): gradients add up across iterations.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for loop, steps in innermost_training_loops(ctx):
            if _own_gradients(ctx, steps):
                continue
            if not any(a.kind == ZERO_GRAD for a in steps):
                once = _cleared_before(ctx, loop)
                if once is not None:  # the fix goes where the clearing is: into the loop
                    ctx.report(
                        self.info, once.node,
                        f"`{ctx.code(once.node, 40)}` runs once, before the training loop, and the loop calls "
                        "backward() and an optimizer step() without clearing the gradients: every step applies "
                        "the sum of all previous gradients. Move it into the loop, before backward()",
                        related=((loop_header(loop), "the training loop"),),
                    )
                    continue
                ctx.report(
                    self.info, loop_header(loop),
                    "this loop calls backward() and an optimizer step() but never clears the gradients "
                    "(zero_grad() / p.grad = None), so every step applies the sum of all previous gradients; "
                    "call optimizer.zero_grad() once per step",
                )
                continue
            uncleared = _uncleared_optimizer(ctx, steps)
            if uncleared is not None:
                step, cleared = uncleared
                ctx.report(
                    self.info, step.node,
                    f"this loop steps `{ctx.code(step.node, 40)}` but clears the gradients only through "
                    f"`{ctx.code(cleared.node, 40)}`, whose optimizer holds other parameters: the gradients "
                    "the first one applies add up across iterations (each step applies the sum of all "
                    "previous ones); zero_grad() every optimizer that steps, or the model",
                    related=((loop_header(loop), "the training loop"),
                             (cleared.node, "only this optimizer's gradients are cleared")),
                )
                continue
            path = _path_without_zero_grad(steps)
            if path is not None and not _other_clearing(loop, path[2]):
                flags, step, _ = path
                ctx.report(
                    self.info, loop_header(loop),
                    f"when {flags}, this loop calls backward() and `{ctx.code(step.node, 40)}` but clears the "
                    "gradients only on the other branch: on this configuration every step applies the sum "
                    "of all previous gradients; call optimizer.zero_grad() on both branches (or before the if)",
                    related=((step.node, "the step on the branch without zero_grad()"),),
                )


def _uncleared_optimizer(ctx: FileContext, steps):
    """(a step, a zero_grad) where the loop steps an optimizer it never clears while it clears another
    built from another module's parameters (`optimizer_E.zero_grad()` but `optimizer_D.step()`).
    Only when every clearing is an optimizer's zero_grad and each optimizer takes one module's
    `.parameters()`, the modules not nested in each other's names."""
    stepped, cleared = {}, {}
    for action in steps:
        if action.kind == ZERO_GRAD:
            receiver = action.call.receiver if action.call is not None else None
            if receiver is None or ctx.value(receiver).kind != "optimizer":
                return None  # `p.grad = None`, `model.zero_grad()`: may clear anything
            cleared.setdefault(ctx.code(receiver, 80), action)
        elif action.kind == STEP and action.call is not None and not action.scaled:
            receiver = action.call.receiver
            if receiver is not None and ctx.value(receiver).kind == "optimizer":
                stepped.setdefault(ctx.code(receiver, 80), (action, receiver))
    if not cleared or len(stepped) < 2:
        return None
    sources = {}
    for name in (*cleared, *stepped):
        holder = cleared[name].call.receiver if name in cleared else stepped[name][1]
        source = _parameters_of(ctx, holder)
        if source is None:
            return None
        sources[name] = source
    for name, (action, _receiver) in stepped.items():
        if name in cleared:
            continue
        if all(_disjoint(sources[name], sources[other]) for other in cleared):
            return action, next(iter(cleared.values()))
    return None


def _parameters_of(ctx: FileContext, optimizer) -> str | None:
    """`D` for an optimizer built as `torch.optim.Adam(D.parameters(), ...)`."""
    made = ctx.value(optimizer).node
    if not isinstance(made, cst.Call) or not made.args:
        return None
    first = made.args[0].value
    if isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and \
            first.func.attr.value == "parameters" and not first.args:
        return ctx.code(first.func.value, 80)
    return None


def _disjoint(a: str, b: str) -> bool:
    return a != b and not a.startswith(b + ".") and not b.startswith(a + ".")


def _path_without_zero_grad(steps) -> tuple[str, object, dict] | None:
    """A combination of the loop's flags (`if args.amp:` / `else:`) on which backward and step run
    but no zero_grad does: the flags in words and that path's step."""
    for path in paths(steps):
        kinds = {a.kind for a in path}
        if BACKWARD in kinds and STEP in kinds and ZERO_GRAD not in kinds:
            conds = {pair for a in path for pair in a.cond}
            if not conds:
                continue
            words = " and ".join(f"`{name}` is {'true' if value else 'false'}" for name, value in sorted(conds))
            return words, next(a for a in path if a.kind == STEP), dict(conds)
    return None


def _other_clearing(loop, assignment: dict[str, bool]) -> bool:
    """A call on that path whose name says it clears gradients but that is not an optimizer's or a
    model's zero_grad (`self.mp_trainer.zero_grad()`, `zero_master_grads(...)`): it may well do it."""
    for entry in loop.walk():
        if not isinstance(entry, CallInfo):
            continue
        func = entry.node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if "zero" in name and "grad" in name and all(
                assignment.get(flag, value) == value for flag, value in entry.scope.cond):
            return True
    return False


def _own_gradients(ctx: FileContext, steps) -> bool:
    """Gradients that never accumulate in `.grad`: distributed autograd keeps them per context
    (`dist_autograd.backward(context_id, [loss])`), and an optimizer whose step() is given the loss or a
    closure (`higher`'s differentiable optimizers, LBFGS) computes them itself."""
    for action in steps:
        call = action.call
        if call is None:
            if action.kind == BACKWARD:
                return True  # a closure given to step() that we cannot see into may clear them
            continue
        if action.kind == BACKWARD and ((call.qual or "").startswith("torch.distributed.autograd")
                                        or "dist_autograd" in ctx.shape(call.receiver or call.node.func)):
            return True
        if action.kind == STEP and call.args:
            given = ctx.value(call.args[0])
            if given.kind == "function" or isinstance(call.args[0], cst.Lambda) or given.tracked \
                    or given.op in LOSS_OPS:
                return True  # not `scaler.step(optimizer)`
    return False


def _cleared_before(ctx: FileContext, loop) -> CallInfo | None:
    """A `zero_grad()` the function around the training loop calls before it (and not in it)."""
    function = enclosing_function(ctx, loop)
    for entry in function.walk(expand=False) if function is not None else ():
        if entry is loop:
            break
        if isinstance(entry, CallInfo) and classify(ctx, entry) == ZERO_GRAD:
            return entry
    return None
