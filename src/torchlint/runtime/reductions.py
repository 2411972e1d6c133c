"""The cheap path's measures: what is finite, norms, memory in use; and which files are the user's."""

from __future__ import annotations

import os

import torch

from torchlint.runtime.catalog import MEMORY_GROWTH
from torchlint.runtime.records import Event

MEMORY_WINDOW = 20  # steps
MEMORY_MIN_GROWTH = 8 * 2**20  # bytes over the window


def installed(path: str) -> bool:
    """A file of an installed package or of the standard library, not of the user's project."""
    import sysconfig

    parts = os.path.abspath(path).split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    stdlib = sysconfig.get_paths().get("stdlib")
    return bool(stdlib) and os.path.abspath(path).startswith(stdlib + os.sep)


FUSED_ON_CPU = False  # tests set it to run the GPU's fused check on CPU


def finiteness(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """One value per tensor, finite exactly when the tensor is. On a GPU, their max-abs values by one
    fused foreach kernel (NaN stays NaN, Inf stays Inf, finite values never overflow): the kernel
    count does not grow with the number of modules. On CPU, where kernels cost no launch and that
    fused kernel is 2-16x slower than a sum, one sum per tensor accumulated in float32 (as before)."""
    if tensors[0].device.type != "cpu" or FUSED_ON_CPU:
        return list(torch._foreach_norm(tensors, float("inf")))
    return [t.sum(dtype=torch.float32) if t.dtype in (torch.float16, torch.bfloat16) else t.sum() for t in tensors]


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a DTensor (FSDP2, tensor parallelism), the tensor itself otherwise: the
    checks read what this rank holds, and the ranks' exchange combines them."""
    return tensor.to_local() if type(tensor).__name__ == "DTensor" else tensor


def norms(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Per-tensor L2 norms in float32, stacked (no sync); of this rank's shards for sharded tensors."""
    if not tensors:
        return torch.zeros(1, device=device)
    # accumulated in float32: a float16 norm overflows at 65504 although every element is finite
    tensors = [local(t) for t in tensors]
    return torch.stack([n.to(device) for n in torch._foreach_norm(tensors, 2, dtype=torch.float32)])


def total_norm(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    return torch.linalg.vector_norm(norms(tensors, device))


def memory_in_use(device: torch.device) -> int:
    """Allocated CUDA memory (a host-side counter: no sync) or the process RSS."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device)
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_event(history: list, step: int, device: torch.device) -> Event | None:
    """TL904 when memory rose in 80% of the last MEMORY_WINDOW steps, by more than MEMORY_MIN_GROWTH."""
    if not history or not history[-1].memory or len(history) <= MEMORY_WINDOW:
        return None
    window = [s.memory for s in history[-MEMORY_WINDOW - 1:]]
    rises = sum(b > a for a, b in zip(window, window[1:], strict=False))
    growth = window[-1] - window[0]
    if rises < 0.8 * MEMORY_WINDOW or growth <= max(MEMORY_MIN_GROWTH, 0.05 * window[0]):
        return None
    per_step = growth / MEMORY_WINDOW / 2**20
    where = "allocated CUDA memory" if device.type == "cuda" else "resident memory"
    return Event(MEMORY_GROWTH.code, MEMORY_GROWTH.name, step,
                 f"step {step}: {where} grew in {rises} of the last {MEMORY_WINDOW} steps, "
                 f"{per_step:.1f} MiB per step ({window[0] / 2**20:.0f} -> {window[-1] / 2**20:.0f} MiB): "
                 "something keeps each iteration alive, such as a loss accumulated without .item() (TL402)")
