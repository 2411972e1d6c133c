"""What frameworks wrap around a model, seen from the watch: DistributedDataParallel, `torch.compile`
and Lightning's forward redirection; and torch's warning about torchlint's global hooks."""

from __future__ import annotations

import contextlib
import warnings

import torch


@contextlib.contextmanager
def quiet_about_global_hooks():
    """torch warns that `torch.compile(module)` runs global hooks once more for its wrapper: those are
    torchlint's, and the warning is not the program's business. Only that filter is added and removed."""
    warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks")
    entry = warnings.filters[0]
    try:
        yield
    finally:
        if entry in warnings.filters:
            warnings.filters.remove(entry)
            warnings._filters_mutated()


def is_ddp(module) -> bool:
    return isinstance(module, torch.nn.parallel.DistributedDataParallel)


def unwrapped(module):
    """The model inside a DDP wrapper (replays must not run DDP's collectives on one rank alone) and
    inside a `torch.compile` wrapper (replays run it eagerly, op by op), however they nest."""
    while True:
        if is_ddp(module):
            module = module.module
        elif type(module).__name__ == "OptimizedModule" and hasattr(module, "_orig_mod"):
            module = module._orig_mod
        else:
            return module


def redirected(module) -> bool:
    """A LightningModule called through Lightning's forward redirection (DDP and other wrapping
    strategies): its `forward` is patched for this one call to run `training_step`, so the call can
    be neither replayed nor named as the model's forward. The watch looks through it, at the modules
    `training_step` calls, as it does without a wrapper."""
    return "forward" in vars(module) and hasattr(type(module), "training_step")


def replays_alone(module) -> bool:
    """Whether one rank may run this module's forward by itself. Not a model sharded across ranks
    (FSDP, FSDP2's fully_shard, DTensor parameters of tensor parallelism): its forward gathers
    parameters from every rank, so a replay on the rank that found a problem would wait forever."""
    for sub in module.modules():
        if any(cls.__name__ in ("FullyShardedDataParallel", "FSDPModule") for cls in type(sub).__mro__):
            return False
        if any(type(p).__name__ == "DTensor" for p in sub.parameters(recurse=False)):
            return False
    return True
