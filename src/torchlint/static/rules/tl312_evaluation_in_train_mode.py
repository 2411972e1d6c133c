"""TL312 evaluation-in-train-mode: an evaluation inside a training loop while the model is in train mode."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.model_modes import (
    EVAL,
    FORWARD,
    TRAIN,
    events,
    mode_dependent_shapes,
    mode_shapes,
    mode_of,
    module_shape,
    trains,
)
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.training import enclosing_function
from torchlint.static.rules.base import Rule


class EvaluationInTrainMode(Rule):
    info = RuleInfo(
        "TL312", "evaluation-in-train-mode", "error",
        "An evaluation run by the training loop while the model is still in train mode: dropout is on and "
        "BatchNorm normalises with, and updates its running statistics from, the evaluation batches.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        training = [loop for loop in ctx.loops if trains(ctx, loop)]
        if not training:
            return
        # models with dropout or BatchNorm the file puts in train mode, in a file that puts a model in
        # eval mode somewhere (its author evaluates in eval mode elsewhere: here it was forgotten)
        known = mode_shapes(ctx, TRAIN) & mode_dependent_shapes(ctx)
        if not known:
            return
        reported: set[int] = set()
        for loop in training:
            found = list(events(ctx, loop))
            # each model's mode when the iteration starts: as the code before the loop set it, then as
            # the previous iteration left it
            state = _before(ctx, loop)
            for kind, model, call, site in found:
                if kind in (EVAL, TRAIN):
                    state[model] = (kind, call, site)
            self._check(ctx, found, dict(state), known, reported)
            # and the code after the loop, in the mode the last iteration left (`acc = self.test(model)`)
            self._check(ctx, list(_after(ctx, loop)), state, known, reported)

    def _check(self, ctx: FileContext, found: list, state: dict, known: set[str], reported: set[int]) -> None:
        for kind, model, call, site in found:
            if kind in (EVAL, TRAIN):
                state[model] = (kind, call, site)
                continue
            mode = state.get(model)
            if kind != FORWARD or model not in known or mode is None or mode[0] != TRAIN or \
                    mode[2] is site or id(site.node) in reported:
                continue  # (a train() reached through the evaluating call itself is on purpose: MC dropout)
            reported.add(id(site.node))
            ctx.report(
                self.info, site.node,
                f"`{ctx.code(site.node, 50)}` evaluates `{model}` under no_grad while it is still in train "
                f"mode (`{ctx.code(mode[1].node, 40)}`, and no `{model}.eval()` before this): dropout stays on "
                "and BatchNorm normalises each batch with its own statistics and folds them into its running "
                "ones, so the metric is noisy and the evaluation data leaks into the model. Call "
                f"`{model}.eval()` before evaluating and `{model}.train()` after",
                related=((call.node, "the model runs here, in train mode"),
                         (mode[1].node, f"`{model}` is put in train mode here")),
            )


def _after(ctx: FileContext, loop: Body):
    """The events of the code after ``loop`` in its function's own body, through the calls it makes."""
    function = enclosing_function(ctx, loop)
    entries = function.entries if function is not None else []
    if loop not in entries:
        return ()
    rest = Body("block", loop.node, loop.scope, entries=entries[entries.index(loop) + 1:])
    return events(ctx, rest)


def _before(ctx: FileContext, loop: Body) -> dict[str, tuple]:
    """The modes the function around ``loop`` sets before it, in its own body (`self.model.train()`
    then the loop)."""
    function = enclosing_function(ctx, loop)
    state: dict[str, tuple] = {}
    for entry in function.entries if function is not None else ():
        if entry is loop:
            return state
        if isinstance(entry, CallInfo) and mode_of(entry) is not None:
            state[module_shape(ctx, entry.receiver, {})] = (mode_of(entry), entry, entry)
    return {}  # the loop is nested in another one: no mode set before it in the function's own body
