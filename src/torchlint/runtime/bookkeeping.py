"""Exact checks of the training loop's bookkeeping, without thresholds and without a device sync.

Graphs kept alive (confirms TL402): every `backward()` hangs a tiny marker object on its loss's
autograd node, and every outermost module call on its output's node (`grad_fn.register_prehook`). The node, and so the marker, lives as long
as something references the graph; a weak reference to the marker tells whether the graph of
step N is still alive at step N+k, whatever the number of MiB it holds.

Gradients not cleared (confirms TL301): at each `optimizer.step()` the gradient tensors and their
version counters are noted. If the first `backward()` after the step finds the same gradient
tensors at the same versions, nothing cleared them (`zero_grad` sets them to None, or zeroes them
in place, which bumps the version): this step's gradients add to the last step's. Accumulating
over several backwards between two steps is untouched, as the check runs only on the first
backward after a step, and only on the first few steps (the mistake, when made, is made every step).
"""

from __future__ import annotations

import os
import weakref
from collections import deque

OLD_AFTER = 2  # a graph older than this many steps should be gone (one step of `last_loss = loss` is fine)
ALIVE_TO_REPORT = 3  # old graphs alive at once before it is reported
KEPT_MARKERS = 64
CLEARING_CHECKS = 3  # steps on which the clearing is checked


class _Marker:
    """A pre-hook on an autograd node whose lifetime is that of the node. `keep`, if given, is handed
    the gradient that reaches the node's output `index` (the model output's upstream gradient)."""

    __slots__ = ("__weakref__", "keep", "index")

    def __init__(self, keep=None, index: int = 0) -> None:
        self.keep, self.index = keep, index

    def __call__(self, grad_outputs) -> None:
        if self.keep is not None and self.index < len(grad_outputs) and grad_outputs[self.index] is not None:
            self.keep(grad_outputs[self.index])
        return None


class GraphTracker:
    def __init__(self) -> None:
        self._markers: deque[tuple[int, str, weakref.ref]] = deque(maxlen=KEPT_MARKERS)

    def mark(self, tensor, step: int, what: str = "loss", keep=None) -> None:
        """Follow the graph of a loss (at its backward) or of a model's output (as it is made); `keep`
        receives the gradient that reaches the tensor (one C++ hook does both)."""
        node = tensor.grad_fn
        if node is None:
            return
        marker = _Marker(keep, tensor.output_nr)
        node.register_prehook(marker)
        self._markers.append((step + 1, what, weakref.ref(marker)))  # the step it belongs to

    def kept_alive(self, step: int) -> tuple[list[int], set[str]]:
        """The steps whose graphs (of losses, of model outputs: `what`) are still alive although
        `OLD_AFTER` steps have passed, when at least `ALIVE_TO_REPORT` steps have one (else [])."""
        markers = self._markers
        while markers and markers[0][2]() is None:  # the graphs freed in time, oldest first: forgotten
            markers.popleft()
        old = []
        for s, what, ref in markers:  # in step order
            if s > step - OLD_AFTER:
                break
            if ref() is not None:
                old.append((s, what))
        alive = sorted({s for s, _ in old})
        return (alive, {what for _, what in old}) if len(alive) >= ALIVE_TO_REPORT else ([], set())


class GradClearing:
    """The verdict is given at the next step of the same optimizer: with several optimizers (a GAN's
    generator and discriminator), one's gradients rightly stay untouched while the other's backward
    runs, so a second optimizer switches the check off."""

    def __init__(self) -> None:
        # weak references (param, its grad) and the grad's version at the step: a strong one would
        # keep gradients that zero_grad() dropped alive through the next forward
        self._noted: list[tuple[weakref.ref, weakref.ref, int]] | None = None
        self._optimizer: weakref.ref | None = None
        self._stale = 0  # found at the first backward after the step
        self._site: tuple | None = None  # where that backward was called
        self._checks = 0

    def on_step(self, optimizer, params) -> tuple[int, tuple | None]:
        """At a step: the number of gradients the first backward since this optimizer's previous step
        found uncleared (0 when they were cleared, or when it cannot tell); then note this step's."""
        previous = self._optimizer() if self._optimizer is not None else None
        stale, self._stale = self._stale, 0
        if previous is not None and previous is not optimizer:
            self._checks = CLEARING_CHECKS  # several optimizers: not this check's business
        if self._checks >= CLEARING_CHECKS:
            self._noted = None
            return 0, None
        found = (stale if previous is optimizer else 0), self._site
        self._optimizer = weakref.ref(optimizer)
        self._noted = [(weakref.ref(p), weakref.ref(p.grad), p.grad._version) for p in params if p.grad is not None]
        return found

    def on_backward(self, site) -> None:
        """At the first backward after a step: are all the step's gradients untouched since?"""
        if not self._noted:
            return
        noted, self._noted, self._site = self._noted, None, site
        self._checks += 1
        stale = 0
        for param_ref, grad_ref, version in noted:
            param, grad = param_ref(), grad_ref()
            if param is not None and grad is not None and param.grad is grad and grad._version == version:
                stale += 1
        self._stale = stale if stale == len(noted) else 0


def kept_alive_event(step: int, steps: list[int], kinds: set[str]):
    from torchlint.runtime.catalog import GRAPH_KEPT_ALIVE
    from torchlint.runtime.records import Event

    shown = ", ".join(str(s) for s in steps[:6]) + (", ..." if len(steps) > 6 else "")
    return Event(GRAPH_KEPT_ALIVE.code, GRAPH_KEPT_ALIVE.name, step,
                 f"step {step}: the autograd graphs of the {' and '.join(sorted(WHAT[k] for k in kinds))} of steps "
                 f"{shown} are still alive: something keeps a tensor of every step (a running total without "
                 ".item(), a list of losses or predictions), so memory grows with every step. Keep .item() or "
                 ".detach() instead (TL402)")


WHAT = {"loss": "losses", "output": "model outputs"}


def not_cleared_event(step: int, count: int, site):
    from torchlint.runtime.catalog import GRADIENTS_NOT_CLEARED
    from torchlint.runtime.records import Event

    where = f" (line {site[1]} of {os.path.basename(site[0])})" if site else ""
    # no line of its own: the static TL301 finding that explains it is attached (see confirm.explain)
    return Event(GRADIENTS_NOT_CLEARED.code, GRADIENTS_NOT_CLEARED.name, step,
                 f"step {step}: backward(){where} started while the {count} gradients of step {step - 1} were still "
                 "there, untouched since optimizer.step(): nothing called zero_grad(), so this step's gradients "
                 "add to every previous step's (TL301)")
