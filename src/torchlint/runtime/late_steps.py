"""Checks read one step late, so that the host never waits for a busy GPU.

Reading a step's check at its optimizer step makes the host wait until the GPU has run the whole
backward pass; then the GPU waits in turn while the host launches the update and the next forward.
On a GPU-bound step that idle time, not the check's kernels, is most of the watch's cost. So when
the GPU is still busy at the step (the host is ahead of it), the step's values are copied to pinned
memory without waiting, and the step is judged when the next one begins, in its own state (its
calls, loss-window records, probes), which the watch hands over. An idle GPU (a host-bound step, or
any CPU run) is read at once, as before.

A late step's update has already run when it is judged, so a replay needs the weights it started
from: they are copied on the GPU before each late update (`WeightsBefore`, one foreach copy, within
a memory budget) and swapped in, pointer for pointer, while the step is judged. A model whose
weights do not fit the budget is judged without replays, and the event says so.
"""

from __future__ import annotations

import contextlib

import torch

from torchlint.runtime import reductions
from torchlint.runtime.ranks import world

BACKUP_SHARE = 0.05  # of the GPU's memory, at most, for the copy of the weights a late step started from
FREE_SHARE = 0.25  # of the memory free when the copy is made


class WeightsBefore:
    """Copies of an optimizer's parameters, refreshed before each late update (no sync)."""

    def __init__(self) -> None:
        self._copies: dict[int, list[torch.Tensor] | None] = {}  # id(optimizer) -> copies (None: over budget)
        self._ids: dict[int, tuple] = {}  # id(optimizer) -> the ids of the parameters copied

    def save(self, optimizer, params: list[torch.Tensor]) -> bool:
        """Copy the parameters as they are now; False when they do not fit the budget."""
        key, ids = id(optimizer), tuple(map(id, params))
        copies = self._copies.get(key, ())
        if copies is None:
            return False
        if self._ids.get(key) != ids:  # first time, or the optimizer's parameters changed
            self._ids[key] = ids
            if not _fits(params):
                self._copies[key] = None
                return False
            copies = self._copies[key] = [torch.empty_like(p, memory_format=torch.preserve_format) for p in params]
        with torch.no_grad():
            torch._foreach_copy_(copies, [p.detach() for p in params])
        return True

    @contextlib.contextmanager
    def swapped_in(self, optimizer, params: list[torch.Tensor]):
        """The parameters hold the saved weights inside the block (their `.data` points there)."""
        copies = self._copies.get(id(optimizer))
        present = [p.data for p in params]
        try:
            for p, copy in zip(params, copies or (), strict=False):
                p.data = copy
            yield
        finally:
            for p, data in zip(params, present, strict=True):
                p.data = data


def _fits(params: list[torch.Tensor]) -> bool:
    """Whether a copy of the weights takes at most BACKUP_SHARE of the GPU's memory and FREE_SHARE of
    what is free now: the copy must never be what makes the user's training run out of memory."""
    size = sum(p.numel() * p.element_size() for p in params)
    device = params[0].device if params else None
    if device is None or device.type != "cuda":
        return reductions.LATE_ON_CPU
    free, total = torch.cuda.mem_get_info(device)
    return size <= min(BACKUP_SHARE * total, FREE_SHARE * free)


class LateSteps:
    """Mixed into `Watch`: the hand-over of a step judged late (its state is set up by `Watch.__init__`)."""

    def _may_read_late(self, device: torch.device) -> bool:
        """Whether a step's check may be read when the next one begins: on CUDA, unless `sync`,
        `snapshot` or several ranks (their exchange is per step) ask otherwise."""
        return (device.type == "cuda" or reductions.LATE_ON_CPU) and not self.sync and not self.snapshot \
            and self.ranks.ranks is None and world() is None

    def _judge_late(self) -> None:
        """Judge the step that was read late, in its own state and weights, then put the present back."""
        step, state, saved = self._late
        self._late = None
        present = self._take_step_state()
        self._put_step_state(state)
        self._late_replays_off = not saved  # without the weights it started from, no replay can run it
        try:
            with self._weights.swapped_in(step.optimizer, step.params) if saved else contextlib.nullcontext():
                self._finish_step(step)
        finally:
            self._late_replays_off = False
            self._put_step_state(present)

    def _take_step_state(self) -> dict:
        """What the slow path reads of the step now ending, handed over; the watch starts afresh."""
        window = self._loss_window
        state = {"calls": self._calls, "keys": self._probe_keys, "probes": self._probes, "loss": self._loss,
                 "site": self._backward_site, "clipped": self._clipped, "grad_bytes": self._grad_bytes,
                 "dead": self._dead.pending, "window": window.take() if window is not None else None}
        self._reset_step_state()
        return state

    def _reset_step_state(self) -> None:
        self._calls, self._probe_keys, self._probes, self._dead.pending = [], [], [], []
        self._loss = self._backward_site = None
        self._clipped, self._grad_bytes = False, 0
        if self._loss_window is not None:
            self._loss_window.clear()

    def _put_step_state(self, state: dict) -> None:
        self._calls, self._probe_keys, self._probes = state["calls"], state["keys"], state["probes"]
        self._loss, self._backward_site, self._clipped = state["loss"], state["site"], state["clipped"]
        self._grad_bytes, self._dead.pending = state["grad_bytes"], state["dead"]
        if self._loss_window is not None and state["window"] is not None:
            self._loss_window.put(state["window"])
