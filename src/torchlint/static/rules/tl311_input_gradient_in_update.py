"""TL311 input-gradient-in-update: a backward() taken for an input's gradient runs between the step's
zero_grad() and its loss's backward(), so the parameter gradients it also leaves are applied too."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.input_gradients import input_gradient
from torchlint.static.interpret.training import BACKWARD, STEP, ZERO_GRAD, Action, innermost_training_loops, paths
from torchlint.static.rules.base import Rule


class InputGradientInUpdate(Rule):
    info = RuleInfo(
        "TL311", "input-gradient-in-update", "error",
        "A backward() for an input's gradient (an attack, Langevin sampling) between zero_grad() and the "
        "loss's backward(): the parameter gradients it leaves are applied by the step.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        if ".grad" not in ctx.source or "requires_grad" not in ctx.source:
            return
        done: set[int] = set()
        for _loop, merged in innermost_training_loops(ctx):
            if sum(action.kind == BACKWARD for action in merged) < 2:
                continue
            for steps in paths(merged):
                found = _leaked(ctx, steps)
                if found is None or id(found[0].node) in done:
                    continue
                cleared, probe = found
                done.add(id(cleared.node))
                ctx.report(
                    self.info, cleared.node,
                    f"`{ctx.code(cleared.node, 40)}` clears the gradients before `{ctx.code(probe.node, 40)}`, a "
                    "backward() taken for an input's gradient: it also adds the model's parameter gradients, "
                    "and the step applies them with the loss's. Clear the gradients after it (just before the "
                    "loss's backward()), or take the input's gradient with torch.autograd.grad(...)",
                    related=((probe.node, "this backward() also fills the parameters' .grad"),),
                )


def _leaked(ctx: FileContext, steps: list[Action]) -> tuple[Action, Action] | None:
    """(the zero_grad, the input-gradient backward) when, in one iteration's order taken round the
    loop, such a backward comes after the last clearing and before another backward and a step."""
    clears = [index for index, action in enumerate(steps) if action.kind == ZERO_GRAD]
    if not clears:
        return None
    order = steps[clears[-1]:] + steps[:clears[-1]]  # from the last clearing, once round the loop
    probe = None
    for action in order[1:]:
        if action.kind == ZERO_GRAD:
            probe = None
        elif action.kind == BACKWARD and probe is None and input_gradient(ctx, action):
            probe = action
        elif action.kind == STEP and probe is not None and any(
                a.kind == BACKWARD and a is not probe for a in order[order.index(probe):order.index(action)]):
            return order[0], probe
    return None
