"""`from torchlint.integrations.transformers import TorchlintCallback` for the Hugging Face `Trainer`.

    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[TorchlintCallback()])

From `on_train_begin` to `on_train_end` the callback wraps `torchlint.watch` around the model and the
optimizer the Trainer built (the same cheap checks as `torchlint run`, one device sync per step).
After the step that made an event it sets `control.should_training_stop`, so `train()` returns
normally; the event is printed once (world process zero) and appended to `state.log_history` as
`{"torchlint/TL901": <step>, "step": <global step>}`. Before the first step the optimizer it will
train with is checked (TL110: an eps that rounds to 0 on float16 parameters). Under `torchlint run`
the process-wide watch already sees every step: the callback then only adds the Trainer's set-up
checks and leaves the watching to it.
"""

from __future__ import annotations

import sys
from typing import Any

from transformers import TrainerCallback

from torchlint.integrations.common import describe, optimizer_events, process_watch, user_site
from torchlint.runtime.records import Event

FIX = "raise adam_epsilon in TrainingArguments (or the eps of the optimizer you pass) to 1e-4, or train float32 " \
      "or bfloat16 parameters"
NO_CLIPPING = "; TrainingArguments(max_grad_norm={value}) switches the Trainer's gradient clipping off"
_OPEN: list[TorchlintCallback] = []  # callbacks whose watch is on: train() raised before on_train_end


class TorchlintCallback(TrainerCallback):
    """Runtime checks for `Trainer.train()`: NaN/Inf with the op and line that made it, exploding
    and vanishing gradients, memory growth; the optimizer's eps against float16 parameters."""

    def __init__(self, stop_on_event: bool = True, **options: Any) -> None:
        self.stop_on_event = stop_on_event
        self.options = options  # Watch options: explode_factor, warmup, snapshot
        self.watch = None
        self.events: list[Event] = []  # set-up events (step 0) first, then the watch's
        self._site: tuple[str | None, int | None] = (None, None)
        self._max_grad_norm = None
        self._reported = 0

    def on_init_end(self, args, state, control, **kwargs) -> None:
        self._site = user_site()  # the `Trainer(...)` line

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs) -> None:
        for stale in list(_OPEN):  # a train() that raised never reached on_train_end
            stale._close(None)
        if self._site == (None, None):  # added after the Trainer was made: the `train()` line
            self._site = user_site()
        self._max_grad_norm = args.max_grad_norm
        self.events = optimizer_events(optimizer, model, FIX, self._site) if optimizer is not None else []
        self._reported = 0
        process = process_watch()
        if process is not None:  # `torchlint run` watches the steps and reports these with its own
            process.setup.extend(self.events)
            if self.annotate not in process.annotators:
                process.annotators.append(self.annotate)
            return
        self._publish(state, self.events)
        if model is None or optimizer is None:
            return
        from torchlint.runtime.watch import Watch

        self.watch = Watch(model, getattr(optimizer, "optimizer", optimizer), stop_at_first=True, ranks=True,
                           **self.options).__enter__()
        _OPEN.append(self)

    def on_step_end(self, args, state, control, **kwargs) -> None:
        if self.watch is None or not self.watch.agreed_events():
            return
        self._collect()
        self._publish(state, self.events)
        if self.stop_on_event:
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs) -> None:
        self._close(state)

    def annotate(self, events: list[Event]) -> None:
        """Name the Trainer's setting behind an event: clipping switched off under an explosion."""
        if self._max_grad_norm is None or self._max_grad_norm > 0:
            return
        note = NO_CLIPPING.format(value=self._max_grad_norm)
        for event in events:
            if event.code == "TL903" and not event.message.endswith(note):
                event.message += note

    def _close(self, state) -> None:
        if self in _OPEN:
            _OPEN.remove(self)
        if self.watch is None:
            return
        watch, self.watch = self.watch, None
        watch.__exit__(None, None, None)  # checks the last update too
        self._collect(watch)
        if state is not None:
            self._publish(state, self.events)

    def _collect(self, watch=None) -> None:
        found = (watch or self.watch).events
        setup = [e for e in self.events if e.step == 0]
        self.annotate(found)
        self.events = setup + [e for e in found if e not in setup]

    def _publish(self, state, events: list[Event]) -> None:
        fresh = events[self._reported:]
        self._reported = len(events)
        for event in fresh:
            state.log_history.append({f"torchlint/{event.code}": float(event.step), "step": state.global_step})
            if state.is_world_process_zero:
                print(describe(event), file=sys.stderr)
