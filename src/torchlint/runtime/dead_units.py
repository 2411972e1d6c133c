"""TL913: ReLU layers whose units have died: zero for every input of the batch, check after check.

On the steps that read the parameter norms (steps 1-5, then every 10th), the output of each
`nn.ReLU` module (up to MAX_LAYERS of them, in the order they ran) gets one reduction: the share of
its units that are 0 for every input of the batch (a channel of a [B, C, H, W] output, a feature of
a [B, F] one; 3-dimensional outputs, which may be either, are left alone). A layer is reported when
at least DEAD_SHARE of its units are dead on CHECKS consecutive such steps, with at least MIN_VALUES
values per unit so that a small batch cannot make a healthy unit look dead. A dead ReLU gets no
gradient and does not come back.
"""

from __future__ import annotations

import torch

from torchlint.runtime.catalog import DEAD_UNITS
from torchlint.runtime.records import Event

DEAD_SHARE = 0.5
CHECKS = 3
MIN_VALUES = 32
MAX_LAYERS = 64


def dead_share(output: torch.Tensor) -> torch.Tensor | None:
    """The share of units never positive in this batch, as a 0-d tensor (no read), or None."""
    if output.dim() == 2:
        reduce, per_unit = (0,), output.shape[0]
    elif output.dim() >= 4:
        reduce = (0, *range(2, output.dim()))
        per_unit = output.numel() // max(output.shape[1], 1)
    else:
        return None
    if per_unit < MIN_VALUES:
        return None
    with torch.no_grad():
        return (output.detach().amax(dim=reduce) <= 0).float().mean()


class DeadUnits:
    """Per ReLU layer, the run of consecutive checks on which it was mostly dead."""

    def __init__(self) -> None:
        self.pending: list[tuple[torch.nn.Module, torch.Tensor]] = []  # this step's (layer, share)
        self._runs: dict[int, list[tuple[int, float]]] = {}  # id(layer) -> [(step, share)]

    def watch(self, module, output) -> None:
        if isinstance(module, torch.nn.ReLU) and isinstance(output, torch.Tensor) and len(self.pending) < MAX_LAYERS:
            share = dead_share(output)
            if share is not None:
                self.pending.append((module, share))

    def judge(self, step: int, shares: list[float], name_of) -> Event | None:
        """With this step's shares, read in the step's one sync (see `Watch._check_step`)."""
        found = None
        seen = set()
        for (module, _), share in zip(self.pending, shares, strict=True):
            key = id(module)
            if key in seen:  # a layer called twice in the step: its first call counts
                continue
            seen.add(key)
            run = self._runs.setdefault(key, [])
            if share >= DEAD_SHARE:
                run.append((step, share))
            else:
                run.clear()
            if len(run) >= CHECKS and found is None:
                found = (module, list(run[-CHECKS:]))
        self.pending.clear()
        if found is None:
            return None
        module, run = found
        name = name_of(module)
        steps = ", ".join(str(s) for s, _ in run)
        return Event(DEAD_UNITS.code, DEAD_UNITS.name, step,
                     f"step {step}: {run[-1][1]:.0%} of the units of `{name}` (ReLU) were 0 for every input of the "
                     f"batch at steps {steps}: dead ReLUs get no gradient and do not come back. Usual causes: a "
                     "learning rate too high for the first steps (one large update pushed the biases negative; a "
                     "warm-up helps) or an initialisation that leaves most pre-activations negative; LeakyReLU or "
                     "GELU cannot die", module=name)
