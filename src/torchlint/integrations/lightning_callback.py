"""The Lightning callback, for either import path (`lightning.pytorch` or `pytorch_lightning`).

Lightning only accepts callbacks derived from the `Callback` class of the package its `Trainer`
comes from, so the class is made once per base (``make_callback``). It wraps `torchlint.watch`
around the fit: the LightningModule and its first optimizer are watched with the same cheap checks
as `torchlint run` (one device sync per step), the first event stops the fit cleanly
(`trainer.should_stop`), and the events are logged as metrics and printed once on rank zero.
"""

from __future__ import annotations

import sys
from typing import Any

from torchlint.runtime.records import Event


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
            if not optimizers:
                return
            self.watch = Watch(pl_module, optimizers[0], stop_at_first=True, **self.options).__enter__()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if self.watch is None or not self.watch.events:
                return
            self._publish(trainer)
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
            self.events = list(watch.events)
            self._publish(trainer, watch)

        def _publish(self, trainer, watch=None) -> None:
            events = (watch or self.watch).events
            fresh = events[self._reported:]
            if not fresh:
                return
            self._reported = len(events)
            for event in fresh:
                if trainer.logger is not None:
                    trainer.logger.log_metrics({f"torchlint/{event.code}": float(event.step)}, step=event.step)
                if trainer.is_global_zero:
                    print(describe(event), file=sys.stderr)

    TorchlintCallback.__module__ = f"torchlint.integrations.{framework}"
    return TorchlintCallback


def describe(event: Event) -> str:
    """One event as the text report prints it (with the static findings it confirms)."""
    from torchlint.report.text import display_path

    where = f"{display_path(event.file)}:{event.line}: " if event.file else ""
    lines = [f"torchlint: {where}{event.code} {event.name} at step {event.step}: {event.message}"]
    lines.extend(f"  confirms {f.code} {f.name} (static) at {display_path(f.path)}:{f.line}"
                 for f in event.confirmed)
    return "\n".join(lines)
