"""A one-line progress display on stderr (step, loss, grad norm), only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    """Call with each step's StepStats; `close()` clears the line. Quiet in CI and when piped."""

    def __init__(self, stream=None, total: int | None = None, interval: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.interval = interval
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)()) and not os.environ.get("CI")
        self._last = 0.0
        self._shown = False

    def __call__(self, stats) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._last < self.interval:
            return
        self._last = now
        step = f"{stats.step}/{self.total}" if self.total else str(stats.step)
        self.stream.write(f"\r\x1b[2Ktorchlint: step {step}  loss {stats.loss:.4g}  grad norm {stats.grad_norm:.3g}")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False
