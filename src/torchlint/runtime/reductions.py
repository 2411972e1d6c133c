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


FUSED_ON_CPU = False  # tests set it to run the GPU's check on CPU
LATE_ON_CPU = False  # tests set it to read checks one step late on CPU, as on a busy GPU
MAX_OUTPUTS = 8  # floating-point tensors of one outermost call's output that are checked


def float_outputs(output) -> list[torch.Tensor]:
    """The non-empty floating-point tensors of a model's output: the tensor itself, or those of a
    tuple, a list or a dict (a Hugging Face ModelOutput), one level down, at most MAX_OUTPUTS."""
    if isinstance(output, torch.Tensor):
        items = (output,)
    elif isinstance(output, (tuple, list)):
        items = output
    elif isinstance(output, dict):
        items = output.values()
    else:
        return []
    found = [t for t in items if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()]
    return found[:MAX_OUTPUTS]


def finiteness(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """One 0-d value per tensor, finite exactly when the tensor is. On a GPU, the max-abs value (one
    reduction kernel per tensor; NaN stays NaN, Inf stays Inf, finite values never overflow). On
    CPU, where that reduction is 2-16x slower than a sum, a sum accumulated in float32 for halves (a
    sum may overflow: an Inf alone is only reported when it reaches the loss or the gradients)."""
    if tensors[0].device.type != "cpu" or FUSED_ON_CPU:
        return [torch.linalg.vector_norm(t, float("inf")) for t in tensors]
    return [t.sum(dtype=torch.float32) if t.dtype in (torch.float16, torch.bfloat16) else t.sum() for t in tensors]


def grad_norm_list(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each gradient's L2 norm in float32, as 0-d tensors (one foreach kernel on a GPU, no read); of
    this rank's shards for sharded tensors."""
    if not grads:
        return []
    return list(torch._foreach_norm([local(g) for g in grads], 2, dtype=torch.float32))


class Reading:
    """A step's values on their way to the host: stacked in one kernel (in one dtype) and, on a
    GPU, copied into pinned memory without waiting; `values()` waits only if the copy is not done."""

    def __init__(self, values: list[torch.Tensor], device: torch.device) -> None:
        self._event = None
        if not values:
            self._host = None
            return
        # one dtype: a CUDA stack of mixed dtypes copies its inputs one by one (73 extra copies per
        # step were measured on a bfloat16 encoder), of one dtype it is a single batched kernel
        dtype = torch.float64 if any(v.dtype == torch.float64 for v in values) else torch.float32
        values = [v if v.dtype == dtype else v.to(dtype) for v in values]
        try:
            stacked = torch.stack(values)
        except RuntimeError:  # on several devices (a model split across GPUs)
            stacked = torch.stack([v.to(device) for v in values])
        if stacked.device.type == "cuda":
            self._host = torch.empty(stacked.shape, dtype=stacked.dtype, pin_memory=True)
            self._host.copy_(stacked, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record()
        else:
            self._host = stacked

    def ready(self) -> bool:
        return not LATE_ON_CPU and (self._event is None or self._event.query())

    def values(self) -> list[float]:
        """The values, after the one wait for the device (none if it is done already)."""
        if self._host is None:
            return []
        if self._event is not None:
            self._event.synchronize()
        return self._host.tolist()


def device_busy(device: torch.device) -> bool:
    """Whether the GPU still runs work the program queued (the host is ahead of it): then a step's
    check is read when the next step begins instead of making the host wait for it now."""
    if device.type != "cuda":
        return LATE_ON_CPU
    event = torch.cuda.Event()
    event.record()
    return not event.query()


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


_STATM: dict[int, int] = {}  # pid -> an open descriptor of its /proc/self/statm, read again at each step


def memory_in_use(device: torch.device) -> int:
    """Allocated CUDA memory (a host-side counter: no sync) or the process RSS."""
    if device.type == "cuda":
        return _cuda_allocated(device)
    try:
        pid = os.getpid()  # a forked child must not read its parent's
        if pid not in _STATM:
            _STATM[pid] = os.open("/proc/self/statm", os.O_RDONLY)
        return int(os.pread(_STATM[pid], 128, 0).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _cuda_allocated(device: torch.device) -> int:
    """The caching allocator's bytes in use, read from its raw counters: `torch.cuda.memory_allocated`
    flattens every statistic into a new dict first, 0.5 ms a call measured on an H200's host."""
    try:
        index = device.index if device.index is not None else torch.cuda.current_device()
        return int(torch._C._cuda_memoryStats(index)["allocated_bytes"]["all"]["current"])
    except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
        return torch.cuda.memory_allocated(device)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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
