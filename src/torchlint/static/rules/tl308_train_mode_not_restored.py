"""TL308 train-mode-not-restored: a training loop that puts its model in eval mode and never back."""

from __future__ import annotations

from collections.abc import Iterator

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.model_modes import (
    EVAL,
    FORWARD,
    TRAIN,
    events,
    has_modes,
    mode_dependent_shapes,
    module_shape,
    mode_shapes,
    trains,
)
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.training import BACKWARD
from torchlint.static.rules.base import Rule


class TrainModeNotRestored(Rule):
    info = RuleInfo(
        "TL308", "train-mode-not-restored", "error",
        "A training loop that puts the model in eval mode (an evaluation inside it) and never back "
        "to train mode: later steps train without dropout and with frozen BatchNorm statistics.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        training = [loop for loop in ctx.loops if trains(ctx, loop)]
        if not training:
            return
        switched = mode_shapes(ctx, TRAIN)
        if not switched:
            return
        layered = mode_dependent_shapes(ctx)
        reported: set[int] = set()
        # the innermost loop first: an evaluation every N batches is reported at the batch loop
        for loop in sorted(training, key=_depth, reverse=True):
            for event, site, model in _left_in_eval(ctx, loop, switched):
                own = module_shape(ctx, event.receiver, {})  # as its function writes it (`self.encoder`)
                if id(event.node) in reported or not (own in layered or has_modes(ctx, ctx.value(event.receiver))):
                    continue
                reported.add(id(event.node))
                ctx.report(
                    self.info, site.node,
                    f"`{ctx.code(site.node, 50)}` puts `{model}` in eval mode and nothing in this loop puts it "
                    "back: every later training step runs with dropout off and BatchNorm using (and no "
                    f"longer updating) its running statistics. Call `{model}.train()` at the start of each "
                    "training step or epoch, or after the evaluation",
                    related=() if site is event else ((event.node, f"`{model}` is put in eval mode here"),),
                )


def _depth(loop: Body) -> int:
    return loop.scope.loop_depth


def _left_in_eval(ctx: FileContext, loop: Body, switched: set[str]) -> Iterator[tuple[CallInfo, CallInfo, str]]:
    """Each eval() of a trained model (one the file puts in train mode somewhere, named as the loop or
    as the eval's own function names it) in one iteration of ``loop`` after which, going round the
    loop, a backward comes before any train() of that model (compared in the loop's terms); with the
    call in the loop leading to it."""
    found = [event for event in events(ctx, loop) if event[0] != FORWARD]
    for index, (kind, model, call, site) in enumerate(found):
        if kind != EVAL or (model not in switched and module_shape(ctx, call.receiver, {}) not in switched):
            continue
        ahead = found[index + 1:] + found[:index]
        for other_kind, other_model, _, other_site in ahead:
            if other_kind == TRAIN and other_model == model:
                break
            # a backward the evaluating call itself may run (a shared train-or-test routine) is not training
            if other_kind == BACKWARD and other_site is not site:
                yield call, site, model
                break
