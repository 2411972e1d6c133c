"""The Lightning callback, for either import path (`lightning.pytorch` or `pytorch_lightning`).

Lightning only accepts callbacks derived from the `Callback` class of the package its `Trainer`
comes from, so the class is made once per base (``make_callback``). It wraps `torchlint.watch`
around the fit: the LightningModule and its first optimizer are watched with the same cheap checks
as `torchlint run` (one device sync per step), the first event stops the fit cleanly
(`trainer.should_stop`), and the events are logged as metrics and printed once on rank zero. At the
fit's start the optimizer is checked against the parameters it updates (TL110: `precision="16-true"`
keeps them float16, and an eps below float16's smallest value rounds to 0). Under `torchlint run` the
process-wide watch already sees every step: the callback then only adds that check to its report.
"""

from __future__ import annotations

import sys
from typing import Any

from torchlint.integrations.common import describe, optimizer_events, process_watch, user_site
from torchlint.runtime.records import Event

FIX = 'use eps=1e-4 in `configure_optimizers`, or precision="16-mixed" (float32 master weights)'


def make_callback(base: type, framework: str) -> type:
    class TorchlintCallback(base):
        """Runtime checks for a Lightning fit: NaN/Inf with the op and line that made it, exploding
        and vanishing gradients, memory growth."""

        def __init__(self, stop_on_event: bool = True, **options: Any) -> None:
            super().__init__()
            self.stop_on_event = stop_on_event
            self.options = options  # Watch options: explode_factor, warmup, snapshot
            self.watch = None
            self.events: list[Event] = []
            self._reported = 0

        def on_fit_start(self, trainer, pl_module) -> None:
            from torchlint.runtime.watch import Watch

            optimizers = [getattr(o, "optimizer", o) for o in trainer.optimizers]
            self.events = optimizer_events(optimizers[0], pl_module, FIX, user_site()) if optimizers else []
            self._reported = 0
            process = process_watch()
            if process is not None:  # `torchlint run` watches the steps and reports this with its own
                process.setup.extend(self.events)
                return
            self._publish(trainer, self.events)
            if not optimizers:
                return
            self.watch = Watch(pl_module, optimizers[0], stop_at_first=True, ranks=True,  # every rank runs it
                               **self.options).__enter__()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if self.watch is None or not self.watch.agreed_events():
                return
            self._collect(self.watch)
            self._publish(trainer, self.events)
            if self.stop_on_event:
                trainer.should_stop = True

        def on_fit_end(self, trainer, pl_module) -> None:
            self._close(trainer)

        def on_exception(self, trainer, pl_module, exception) -> None:
            self._close(trainer)

        def _close(self, trainer) -> None:
            if self.watch is None:
                return
            watch, self.watch = self.watch, None
            watch.__exit__(None, None, None)  # checks the last update too
            self._collect(watch)
            self._publish(trainer, self.events)

        def _collect(self, watch) -> None:
            setup = [e for e in self.events if e.step == 0]
            self.events = setup + [e for e in watch.events if e not in setup]

        def _publish(self, trainer, events: list[Event]) -> None:
            fresh = events[self._reported:]
            self._reported = len(events)
            for event in fresh:
                if trainer.logger is not None:
                    trainer.logger.log_metrics({f"torchlint/{event.code}": float(event.step)}, step=event.step)
                if trainer.is_global_zero:
                    print(describe(event), file=sys.stderr)

    TorchlintCallback.__module__ = f"torchlint.integrations.{framework}"
    return TorchlintCallback

