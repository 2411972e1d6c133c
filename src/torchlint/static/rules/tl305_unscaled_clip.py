"""TL305 unscaled-clip: clipping scaled gradients (GradScaler without unscale_ first)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import (
    BACKWARD,
    CLIP,
    UNSCALE,
    actions,
    classify,
    innermost_training_loops,
    paths,
    uses_scaler,
)


class UnscaledClip(Rule):
    info = RuleInfo(
        "TL305", "unscaled-clip", "error",
        "Gradient clipping with a GradScaler but no scaler.unscale_(optimizer) before it clips scaled gradients.",
        tags=("training-loop", "mixed-precision"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for _loop, merged in innermost_training_loops(ctx):
            for steps in paths(merged):
                self._check_path(ctx, steps)
        # A step function (an optimizer wrapper's `step(loss)`) that backpropagates through the scaler
        # and clips: its order is wrong wherever its caller's loop is, even one this file cannot see.
        if not any(classify(ctx, call) == CLIP for call in ctx.calls.values()):
            return  # most files never clip: no function's actions are worth expanding
        for function in ctx.functions:
            merged = actions(ctx, function)
            kinds = {action.kind for action in merged}
            if BACKWARD in kinds and CLIP in kinds and uses_scaler(merged):
                for steps in paths(merged):
                    self._check_path(ctx, steps, scaled_before=False)  # only what it scales itself

    def _check_path(self, ctx: FileContext, steps, scaled_before: bool = True) -> None:
        if uses_scaler(steps):
            unscaled = False
            scaled = scaled_before  # no backward seen yet: in a loop, a helper that clips what the loop scaled
            for action in steps:
                if action.kind == UNSCALE:
                    unscaled = True
                elif action.kind == BACKWARD:
                    # the gradients a clip sees come from the latest backward: a plain one (the
                    # branch without AMP) made unscaled gradients
                    scaled, unscaled = action.scaled, False
                elif action.kind == CLIP and scaled and not unscaled:
                    ctx.report(
                        self.info, action.node,
                        f"`{ctx.code(action.node)}` clips gradients still multiplied by the GradScaler's scale "
                        "(2**16 by default), so max_norm is meaningless; call scaler.unscale_(optimizer) first",
                    )
