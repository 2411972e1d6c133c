"""TL301 missing-zero-grad: a training loop that never clears gradients."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOSS_OPS
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, STEP, ZERO_GRAD, innermost_training_loops, loop_header


class MissingZeroGrad(Rule):
    info = RuleInfo(
        "TL301", "missing-zero-grad", "error",
        "A loop that calls backward() and step() but never zero_grad(): gradients add up across iterations.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for loop, steps in innermost_training_loops(ctx):
            if any(a.kind == ZERO_GRAD for a in steps) or _own_gradients(ctx, steps):
                continue
            ctx.report(
                self.info, loop_header(loop),
                "this loop calls backward() and an optimizer step() but never clears the gradients "
                "(zero_grad() / p.grad = None), so every step applies the sum of all previous gradients; "
                "call optimizer.zero_grad() once per step",
            )


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
