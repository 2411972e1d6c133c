"""TL303 misordered-step: zero_grad between backward and step, step before backward, clipping misplaced,
zero_grad every iteration of a loop that steps every k-th iteration (accumulation undone)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.torch_support import of_file
from torchlint.static.interpret.accumulation import cleared_inner_loops, schedule_counts_updates
from torchlint.static.interpret.input_gradients import input_gradient
from torchlint.static.interpret.periodic import is_periodic
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.training import (BACKWARD, CLIP, SCHEDULE, STEP, ZERO_GRAD, Action, actions,
                                                 gates_in, innermost_training_loops, is_optimizer, paths)


class MisorderedStep(Rule):
    info = RuleInfo(
        "TL303", "misordered-step", "error",
        "Gradient calls out of order: zero_grad between backward and step, step before backward, clip after "
        "step, zero_grad every iteration while step() runs every k-th (accumulation undone).",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        innermost = innermost_training_loops(ctx)
        for loop, merged in innermost:
            for steps in paths(merged):
                self._check_path(ctx, steps)
            self._check_accumulation(ctx, loop, merged)
            self._check_schedule_period(ctx, loop, merged)
        for clears, step in cleared_inner_loops(ctx):
            self._report(ctx, clears.node,
                         f"runs on every iteration of the loop that accumulates gradients for "
                         f"`{ctx.code(step.node, 40)}` right after it: each micro-batch clears what the previous "
                         "backward() added, so the step applies only the last micro-batch's gradient. Zero "
                         "the gradients once per step: before the accumulation loop, or after step()")
        # an epoch loop that steps its scheduler before the epoch's training steps (in a called function)
        inner = {id(loop) for loop, _ in innermost}
        for loop in ctx.loops:
            if id(loop) in inner:
                continue
            merged = actions(ctx, loop)
            kinds = {a.kind for a in merged}
            if BACKWARD in kinds and STEP in kinds and SCHEDULE in kinds:
                for steps in paths(merged):
                    self._check_schedule(ctx, steps)

    def _check_accumulation(self, ctx: FileContext, loop, steps: list[Action]) -> None:
        """Backward every iteration, step() only every k-th, zero_grad() every iteration: each step
        applies the last micro-batch's gradients only, the others were cleared before it ran."""
        inside = [(a, gates_in(loop, a)) for a in steps]
        zeros = [(a, g) for a, g in inside if a.kind == ZERO_GRAD and g is not None
                 and not ctx.is_claimed(a.node) and not _defined_here(a)]
        if not zeros:
            return
        gradient = [(a, g) for a, g in inside if a.kind in (BACKWARD, STEP) and g is not None]
        for position, (step, gates) in enumerate(gradient):
            if step.kind != STEP or not gates:
                continue
            feeding, feeding_gates = gradient[position - 1]  # the backward before it (the last one, cyclically)
            if feeding.kind != BACKWARD:
                continue
            # Every iteration that runs that backward also clears: the zero_grad has none of its gates but
            # the backward's (it may share a `if batch is None: continue`).
            clearing = [a for a, g in zeros if all(gate in feeding_gates for gate in g)
                        and _same_optimizer(ctx, a, step)]
            if not clearing:
                continue
            period = next(((test, value) for test, value in gates if is_periodic(ctx, loop, test)), None)
            if period is None or any(is_periodic(ctx, loop, test) for test, _v in feeding_gates):
                continue  # not every k-th, or the step has its own backward under that condition (a GAN)
            test, value = period
            when = f"`{ctx.code(test, 40)}`" + ("" if value else " is false")
            self._report(ctx, clearing[0].node,
                         f"runs every iteration, but step() only when {when}: the gradients of the "
                         "iterations in between are cleared before a step uses them, so gradient "
                         "accumulation does nothing. Zero the gradients next to step(), under its condition")
            return

    def _check_schedule_period(self, ctx: FileContext, loop, steps: list[Action]) -> None:
        """step() every k-th iteration, the scheduler every iteration, and a schedule the file counts in
        optimizer updates (`len(loader) * epochs // k`): it runs k times too fast."""
        inside = [(a, gates_in(loop, a)) for a in steps]
        for step, gates in inside:
            if step.kind != STEP or not gates:
                continue
            period = next((test for test, value in gates if value and is_periodic(ctx, loop, test)), None)
            if period is None:
                continue
            counted = schedule_counts_updates(ctx, period)
            if counted is None:
                continue
            for schedule, schedule_gates in inside:
                if schedule.kind != SCHEDULE or schedule_gates is None or schedule.call is None or \
                        schedule.call.args or any(is_periodic(ctx, loop, test) for test, _ in schedule_gates):
                    continue
                self._report(ctx, schedule.node,
                             f"runs every iteration, but the optimizer steps only when `{ctx.code(period, 40)}`, "
                             f"and the schedule is counted in optimizer updates (divided by `{counted}`): it "
                             f"advances `{counted}` times per update, so warm-up and decay end that many times "
                             "too early. Step the scheduler next to optimizer.step(), under its condition")
                return
            return

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
        self._check_schedule(ctx, steps)
        pending_backward = False
        stepped = False
        multiple = kinds.count(BACKWARD) > 1
        for index, action in enumerate(steps):
            if action.kind == BACKWARD and not (multiple and input_gradient(ctx, action)):
                pending_backward, stepped = True, False  # (a backward for an input's gradient is no loss's)
            elif action.kind == STEP:
                pending_backward, stepped = False, True
            elif action.kind == ZERO_GRAD and pending_backward and STEP in kinds[index:] and \
                    BACKWARD not in kinds[index:kinds.index(STEP, index)]:  # (a backward before the step refills them)
                self._report(ctx, action.node,
                             "zero_grad() between backward() and step() erases the gradients just "
                             "computed: the step does nothing. Clear gradients before backward()")
            elif action.kind == CLIP and (stepped and STEP not in kinds[index:] or BACKWARD not in kinds[:index]):
                # (a step after the clip: two optimizers, the clipped parameters' one steps last)
                where = "after step(): it clips gradients already applied" if stepped else \
                    "before backward(): there are no new gradients to clip yet"
                self._report(ctx, action.node, f"gradient clipping {where}; clip between backward() and step()")

    def _check_schedule(self, ctx: FileContext, steps: list[Action]) -> None:
        """`scheduler.step()` before this iteration's `optimizer.step()` (the steps on the same branch:
        not the warm-up epochs' `if` when the scheduler is in the `else`): the schedule runs one step
        ahead (PyTorch warns that its first value is skipped). A step with an argument (an epoch, a
        metric for ReduceLROnPlateau) follows another protocol and is left alone."""
        if SCHEDULE in (a.kind for a in steps) and _scheduler_first_era(ctx):
            return
        for index, action in enumerate(steps):
            call = action.call
            if action.kind != SCHEDULE or call is None or call.args or call.kwargs:
                continue
            along = [(position, a) for position, a in enumerate(steps)
                     if a.kind == STEP and _compatible(a.gates, action.gates)]
            if along and all(position > index for position, _ in along):
                self._report(ctx, action.node,
                             f"the learning-rate scheduler steps before `{ctx.code(along[0][1].node, 40)}` in "
                             "each iteration, so the schedule runs one step ahead of the updates and its first "
                             "value is never used (PyTorch warns about this order). Call scheduler.step() "
                             "after optimizer.step()")
                return

    def _report(self, ctx: FileContext, node, message: str) -> None:
        if not ctx.is_claimed(node):
            ctx.report(self.info, node, f"`{ctx.code(node)}`: {message}")


def _scheduler_first_era(ctx: FileContext) -> bool:
    """The project installs PyTorch older than 1.1, whose schedulers were stepped at the start of each
    epoch, before the optimizer (the order 1.1 reversed; pytorch-semseg pins 0.4.1)."""
    support = of_file(ctx)
    return support is not None and support.installs_before(1, 1)


def _defined_here(zero: Action) -> bool:
    """A zero_grad() of the project's own (an accumulation wrapper): judged by the calls in its body."""
    return zero.call is not None and isinstance(getattr(zero.call.callee, "body", None), Body)


def _same_optimizer(ctx: FileContext, zero: Action, step: Action) -> bool:
    """Unless both calls name optimizers and they differ (`opt_d.zero_grad()` vs `opt_g.step()`)."""
    if zero.call is None or step.call is None or zero.call.receiver is None:
        return True
    stepped = step.call.receiver
    if step.scaled and step.call.args:  # scaler.step(optimizer)
        stepped = step.call.args[0]
    if stepped is None or not is_optimizer(ctx, zero.call.receiver) or not is_optimizer(ctx, stepped):
        return True
    return ctx.shape(zero.call.receiver) == ctx.shape(stepped)


def _compatible(gates: tuple, others: tuple) -> bool:
    """Two actions can run in the same iteration: no `if` test they both run under is true for one and
    false for the other."""
    return not any(test is other and value != other_value for test, value in gates for other, other_value in others)
