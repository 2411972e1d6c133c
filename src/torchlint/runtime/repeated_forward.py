"""TL914: a model with BatchNorm run twice on the same batch in one training step.

The common shape is a second forward pass for a metric (`acc = (model(x).argmax(1) == y)...`) after
the one that made the loss. In training mode each pass updates BatchNorm's running statistics, so
that batch counts twice in them, and the forward is computed twice. Two passes on different tensors
(the two views of contrastive learning, a siamese pair) are not reported, nor are models without
BatchNorm (R-Drop runs a transformer twice on one batch on purpose, for two dropout masks).
"""

from __future__ import annotations

import os

import torch

from torchlint.runtime.catalog import REPEATED_FORWARD
from torchlint.runtime.records import Event


def has_batchnorm(types: set[type]) -> bool:
    return any(issubclass(t, torch.nn.modules.batchnorm._BatchNorm) for t in types)


def first_tensor(args: tuple, kwargs: dict) -> torch.Tensor | None:
    return next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)


def same_batch_event(watch, call) -> Event | None:
    """The event when an earlier outermost call of this step ran the same model on the same tensor
    (once per run). `call` is the outermost call that just ended, of a model with BatchNorm in
    training mode: its site is noted, for a later call to name."""
    from torchlint.runtime.replay import user_frame

    call.site = user_frame()
    batch = first_tensor(call.args, call.kwargs)
    if batch is None or any(e.code == REPEATED_FORWARD.code for e in watch.events):
        return None
    earlier = next((c for c in watch._calls if c.module is call.module and c.site is not None
                    and first_tensor(c.args, c.kwargs) is batch), None)
    if earlier is None:
        return None
    step, name = watch.step + 1, watch._name_of(call.module)
    file, line = call.site
    first = f"line {earlier.site[1]}" if earlier.site[0] == file else f"{os.path.basename(earlier.site[0])}:{earlier.site[1]}"
    return Event(REPEATED_FORWARD.code, REPEATED_FORWARD.name, step,
                 f"step {step}: `{name}` ran a second time on the same batch (first at {first}) in training "
                 "mode: BatchNorm's running statistics count this batch twice and the forward pass is computed "
                 "twice. Reuse the first output (`out.detach()` for a metric), or run the second pass under "
                 "torch.no_grad() with the model in eval mode", module=name, file=file, line=line)
