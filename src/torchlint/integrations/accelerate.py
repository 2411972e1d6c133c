"""`torchlint.integrations.accelerate.watch` for a training loop written with Hugging Face Accelerate.

    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    with watch(accelerator, model, optimizer) as w:
        for batch in loader:
            ...
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    print(w.events)

The same cheap checks as `torchlint run` (one device sync per optimizer step) on the unwrapped model
and the optimizer inside Accelerate's `AcceleratedOptimizer`. `accelerator.backward(loss)` is wrapped
while the block runs, so the loss read is the one the loop computed (before Accelerate divides it by
the accumulation steps or scales it for float16) and a non-finite loss names the line that called it.
At the first event (printed once, on the main process, and passed to `accelerator.log` as
`{"torchlint/TL901": step}`) the `optimizer.step()` that found it raises before updating and the
`with` block ends there; the code after it runs. `stop_on_event=False` keeps the loop going.
"""

from __future__ import annotations

import sys
from typing import Any

from torchlint.integrations.common import describe, optimizer_events, process_watch, user_site
from torchlint.runtime.watch import StopRun, Watch

FIX = "use eps=1e-4, or keep float32 parameters (Accelerator(mixed_precision=...) keeps them)"


class watch:  # noqa: N801 - used like a function: `with watch(accelerator, model, optimizer) as w:`
    """Watch a model and optimizer prepared by `accelerator`; `__enter__` gives the `Watch`, whose
    `events` list, after the block, starts with the set-up events (TL110, step 0)."""

    def __init__(self, accelerator, model, optimizer, stop_on_event: bool = True, **options: Any) -> None:
        self.accelerator = accelerator
        self.model = accelerator.unwrap_model(model)  # hooks on the user's module, not on DDP or compile wrappers
        self.optimizer = getattr(optimizer, "optimizer", optimizer)
        self.stop_on_event = stop_on_event
        self.options = options  # Watch options: explode_factor, warmup, snapshot, on_step
        self.watch: Watch | None = None
        self.setup: list = []
        self._printed: set[int] = set()
        self._saved = None

    def __enter__(self) -> Watch:
        if process_watch() is not None:  # under `torchlint run`: the process-wide watch sees these steps
            self.watch = process_watch()
            return self.watch
        on_step = self.options.pop("on_step", None)

        def stepped(stats) -> None:
            if on_step is not None:
                on_step(stats)
            self._publish(self.watch.agreed_events())
            if self.watch.agreed_events() and self.stop_on_event:
                raise StopRun()

        self.watch = Watch(self.model, self.optimizer, stop_at_first=True, on_step=stepped, ranks=True,
                           **self.options)
        self.setup = optimizer_events(self.optimizer, self.model, FIX, user_site())
        self._publish(self.setup)
        self.watch.__enter__()
        self._saved = vars(self.accelerator).get("backward")
        self.accelerator.backward = wrap_backward(self.accelerator.backward, lambda: self.watch)
        return self.watch

    def __exit__(self, exc_type, *exc) -> bool:
        if self.watch is process_watch():
            return False
        if self._saved is not None:
            self.accelerator.backward = self._saved
        else:
            vars(self.accelerator).pop("backward", None)
        self.watch.__exit__(exc_type, *exc)  # checks the last update too
        self._publish(self.watch.events)
        self.watch.events[:0] = self.setup
        return exc_type is not None and issubclass(exc_type, StopRun)

    def _publish(self, events) -> None:
        for event in events:
            if id(event) in self._printed:
                continue
            self._printed.add(id(event))
            self.accelerator.log({f"torchlint/{event.code}": float(event.step)})
            if self.accelerator.is_main_process:
                print(describe(event), file=sys.stderr)


def wrap_backward(original, current):
    """`accelerator.backward` that tells the watch `current()` the loss the user passed and the line
    that passed it (Accelerate divides and scales the loss, then calls `backward()` inside itself)."""

    def backward(loss, *args, **kwargs):
        site = user_site()
        result = original(loss, *args, **kwargs)
        watcher = current()
        if watcher is not None and hasattr(loss, "numel") and loss.numel() == 1 and not watcher._replaying:
            watcher._loss = loss.detach()
            if site[0] is not None:
                watcher._backward_site = site
        return result

    backward.__torchlint_wrapped__ = True
    return backward
