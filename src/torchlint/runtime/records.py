"""What a watch keeps and reports: events, per-step statistics, per-optimizer tracks, forward calls."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Event:
    code: str
    name: str
    step: int
    message: str
    module: str | None = None
    op: str | None = None
    file: str | None = None
    line: int | None = None
    confirmed: list = field(default_factory=list)  # static findings at the same line, or that explain it


@dataclass
class StepStats:
    """What the one sync of a step read (NaN where unknown); memory in bytes, time in seconds."""

    step: int
    loss: float
    grad_norm: float
    param_norm: float | None  # None on the steps that do not measure it (see watch.PARAM_EVERY)
    memory: int
    seconds: float


@dataclass
class Track:
    """Per optimizer: its history, so that two optimizers (a GAN) do not mix their norms."""

    norms: list[float] = field(default_factory=list)
    param_norms: torch.Tensor | None = None  # per parameter, after its last step
    param_total: float | None = None
    last_step: int | None = None
    param_step: int | None = None  # the step that measured param_norms: the updates since are those compared
    low_steps: int = 0
    lrs: list = field(default_factory=list)  # each group's lr at its last step
    clipped: bool = False  # whether gradients were clipped before its last step
    first_lrs: list | None = None  # each group's lr at its first step


@dataclass
class Call:
    """An outermost forward call of the step: the module, its inputs, the RNG state before it and
    the gradient that reached its output. Only these are kept: what happens inside is recomputed by
    a replay on the slow path, so no activation or gradient of an inner module outlives backward."""

    module: torch.nn.Module
    args: tuple
    kwargs: dict
    rng: tuple
    grad_out: torch.Tensor | None = None
    site: tuple | None = None  # (file, line) that made the call, for models with BatchNorm in training mode


class StopRun(Exception):
    """Raised from the step hook to stop a watched script at its first problem or at --max-steps."""
