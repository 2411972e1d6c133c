"""TL303 misordered-step: zero_grad between backward and step, step before backward, clipping misplaced."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, CLIP, STEP, ZERO_GRAD, innermost_training_loops, paths


class MisorderedStep(Rule):
    info = RuleInfo(
        "TL303", "misordered-step", "error",
        "Gradient calls out of order: zero_grad between backward and step, step before backward, clip after step.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for _loop, merged in innermost_training_loops(ctx):
            for steps in paths(merged):
                self._check_path(ctx, steps)

    def _check_path(self, ctx: FileContext, steps) -> None:
        kinds = [a.kind for a in steps]
        if BACKWARD not in kinds or STEP not in kinds:
            return
        first_backward = kinds.index(BACKWARD)
        first_step = kinds.index(STEP)
        if first_step < first_backward:
            self._report(ctx, steps[first_step].node,
                         "step() runs before this iteration's backward(): it applies the previous "
                         "iteration's (or no) gradients; call backward() first")
        pending_backward = False
        stepped = False
        for index, action in enumerate(steps):
            if action.kind == BACKWARD:
                pending_backward, stepped = True, False
            elif action.kind == STEP:
                pending_backward, stepped = False, True
            elif action.kind == ZERO_GRAD and pending_backward and STEP in kinds[index:]:
                self._report(ctx, action.node,
                             "zero_grad() between backward() and step() erases the gradients just "
                             "computed: the step does nothing. Clear gradients before backward()")
            elif action.kind == CLIP and (stepped or BACKWARD not in kinds[:index]):
                where = "after step(): it clips gradients already applied" if stepped else \
                    "before backward(): there are no new gradients to clip yet"
                self._report(ctx, action.node, f"gradient clipping {where}; clip between backward() and step()")

    def _report(self, ctx: FileContext, node, message: str) -> None:
        if not ctx.is_claimed(node):
            ctx.report(self.info, node, f"`{ctx.code(node)}`: {message}")
