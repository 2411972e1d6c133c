"""Opt-in (`snapshot=True`, `--snapshot`): the state an optimizer step starts from, kept in
preallocated buffers so that the update of a step that went non-finite can be replayed.

The other checks need no copy: they run in the step pre-hook, before `optimizer.step()` changes
anything. An update that leaves NaN parameters is only seen at the next step, when the state it
started from is gone; this keeps it. The buffers are allocated once (again only when the layout
changes, as when Adam creates its state) and refilled each step with one foreach copy: one pass over
parameters, gradients and optimizer state.
"""

from __future__ import annotations

import copy

import torch


def _entries(optimizer: torch.optim.Optimizer) -> list[tuple[int, str, torch.Tensor]]:
    """(parameter index, "param" | "grad" | state key, live tensor) for every tensor of a step."""
    entries = []
    for index, param in enumerate(p for group in optimizer.param_groups for p in group["params"]):
        entries.append((index, "param", param.data))
        if param.grad is not None and not param.grad.is_sparse:
            entries.append((index, "grad", param.grad))
        entries.extend((index, key, value) for key, value in optimizer.state.get(param, {}).items()
                       if isinstance(value, torch.Tensor))
    return entries


class Snapshot:
    """Copies of an optimizer's tensors and settings; `restore` puts them back."""

    def __init__(self) -> None:
        self.step: int | None = None
        self._layout: list | None = None
        self._keys: list[tuple[int, str]] = []
        self._buffers: list[torch.Tensor] = []
        self._groups: list[dict] = []
        self._scalars: dict[int, dict] = {}

    def save(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        entries = _entries(optimizer)
        layout = [(i, k, tuple(t.shape), t.dtype, t.device) for i, k, t in entries]
        if layout != self._layout:
            self._buffers = [torch.empty_like(t) for _, _, t in entries]
            self._layout, self._keys = layout, [(i, k) for i, k, _ in entries]
        if entries:
            torch._foreach_copy_(self._buffers, [t for _, _, t in entries])
        self._groups = [{k: copy.copy(v) for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self._scalars = {i: {k: copy.copy(v) for k, v in optimizer.state.get(p, {}).items()
                             if not isinstance(v, torch.Tensor)} for i, p in enumerate(params)}
        self.step = step

    def restore(self, optimizer: torch.optim.Optimizer) -> None:
        """Parameters and gradients are copied back in place; each parameter's optimizer state is
        made what it was (emptied if it did not exist yet), reusing its tensors where shapes agree."""
        saved = dict(zip(self._keys, self._buffers, strict=True))
        params = [p for g in optimizer.param_groups for p in g["params"]]
        with torch.no_grad():
            for index, param in enumerate(params):
                param.data.copy_(saved[(index, "param")])
                grad = saved.get((index, "grad"))
                if grad is None:
                    param.grad = None
                elif param.grad is None or param.grad.shape != grad.shape:
                    param.grad = grad.clone()
                else:
                    param.grad.copy_(grad)
                live = optimizer.state.get(param, {})
                state = dict(self._scalars.get(index, {}))
                for (i, key), buffer in saved.items():
                    if i != index or key in ("param", "grad"):
                        continue
                    current = live.get(key)
                    if isinstance(current, torch.Tensor) and current.shape == buffer.shape:
                        state[key] = current.copy_(buffer)
                    else:
                        state[key] = buffer.clone()
                if state:
                    optimizer.state[param] = state
                else:
                    optimizer.state.pop(param, None)
        for group, settings in zip(optimizer.param_groups, self._groups, strict=True):
            group.update(settings)
