"""The peak memory of one training step, replayed over the traced graph at given sizes.

The sum ``weights + gradients + optimizer state + saved activations`` misses what is alive only for
a moment: in the forward pass the outputs not yet consumed, in the backward pass the gradients of
activations in flight (a [B, H, T, T] attention gradient next to the saved weights). This replays
the step over the graph's nodes with the sizes at ``--dims``:

- forward, in node order: a node's output storage is allocated when it runs and freed after its
  last user ran, unless a node saved it for backward; saved storages stay;
- backward, in reverse order: the gradient of an activation is allocated when the backward of its
  last user runs and freed after its producer's backward (views share their input's gradient); a
  saved storage is freed after the backward of the first node that saved it; a parameter's
  gradient appears at the backward of its last user and stays.

The optimizer's step holds every gradient and what its update allocates for a moment, measured
by running torch's single-tensor implementation on meta tensors. Weights and optimizer state are
resident throughout (gradients are set to None between steps, as
``zero_grad`` does by default). Values are numbers: the peak is a maximum over the graph, which has
no closed form in the symbols.
"""

from __future__ import annotations

import weakref
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from torchlint.graph.costs import nbytes


def training_peak(gm: torch.fx.GraphModule, sizes: dict, value, resident: float, gradients: float = 0.0,
                  optimizer_extra: float = 0.0) -> float:
    """Bytes at the step's highest point: in the forward pass, the backward pass or the optimizer's
    step (all ``gradients`` alive, plus what the step allocates for a moment, ``optimizer_extra``);
    ``value`` turns a sympy size into a number."""
    nodes = [n for n in gm.graph.nodes if "cost" in n.meta]
    index = {n: i for i, n in enumerate(nodes)}
    last_use = {n: max((index[u] for u in n.users if u in index), default=len(nodes)) for n in nodes}
    size = {key: value(bytes_) for key, bytes_ in sizes.items()}
    saved_by: dict[int, int] = {}  # storage -> first node that saves it
    for i, node in enumerate(nodes):
        for key in node.meta["cost"].saved_keys:
            saved_by.setdefault(key, i)

    forward_peak, kept = _forward(nodes, index, last_use, size)
    backward_peak = _backward(gm, nodes, index, last_use, size, saved_by, kept, value)
    return resident + max(forward_peak, backward_peak, kept + gradients + optimizer_extra)


def _forward(nodes, index, last_use, size) -> tuple[float, float]:
    """The forward pass's peak of activations, and the bytes still alive at its end that no node saved."""
    refs: Counter = Counter()
    saved: set[int] = set()
    live = peak = 0.0
    for i, node in enumerate(nodes):
        for key in node.meta["storages"]:
            if refs[key] == 0 and key not in saved:
                live += size[key]
            refs[key] += 1
        for key in node.meta["cost"].saved_keys:
            if key not in saved:
                saved.add(key)
                if refs[key] == 0:
                    live += size[key]
        peak = max(peak, live)
        for source in node.all_input_nodes:
            if source in index and last_use[source] == i:
                for key in source.meta["storages"]:
                    refs[key] -= 1
                    if refs[key] == 0 and key not in saved:
                        live -= size[key]
    kept = sum(size[key] for key, count in refs.items() if count > 0 and key not in saved)
    return peak, kept


def _backward(gm, nodes, index, last_use, size, saved_by, kept: float, value) -> float:
    grads = {}  # node -> bytes of its output's gradient
    for node in nodes:
        fake = node.meta.get("fake")
        if node.op in ("get_attr", "output", "placeholder") or not isinstance(fake, torch.Tensor):
            continue
        if not fake.requires_grad:
            continue
        own = set(node.meta["storages"])
        if any(own & set(source.meta.get("storages", ())) for source in node.all_input_nodes):
            continue  # a view: its gradient is its input's
        grads[node] = value(nbytes(fake))
    param_grads = _parameter_grads(gm, nodes, index)
    live = sum(size[key] for key in saved_by) + kept
    peak = live
    arrive: dict[int, float] = Counter()
    for node, grad in grads.items():
        arrive[min(last_use[node], len(nodes) - 1)] += float(grad)
    for position, grad in param_grads:
        arrive[position] += float(grad)
    freed_saves: dict[int, float] = Counter()
    for key, first in saved_by.items():
        freed_saves[first] += size[key]
    for i in range(len(nodes) - 1, -1, -1):
        live += arrive.get(i, 0.0)
        peak = max(peak, live)
        node = nodes[i]
        if node in grads:
            live -= float(grads[node])
        live -= freed_saves.get(i, 0.0)
    return peak


def _parameter_grads(gm, nodes, index) -> list[tuple[int, int]]:
    """(backward position, bytes) of each trainable parameter's gradient: its last user's index."""
    last: dict[int, tuple[int, int]] = {}

    def note(param, position):
        if isinstance(param, torch.Tensor) and param.requires_grad:
            size = param.numel() * param.element_size()
            previous = last.get(id(param))
            last[id(param)] = (max(position, previous[0]) if previous else position, size)

    modules = dict(gm.named_modules())
    for node in nodes:
        if node.op == "call_module" and str(node.target) in modules:
            for param in modules[str(node.target)].parameters():
                note(param, index[node])
        elif node.op == "get_attr":
            try:
                param = gm.get_parameter(str(node.target))
            except AttributeError:
                continue
            users = [index[u] for u in node.users if u in index]
            if users:
                note(param, max(users))
    return list(last.values())


class LiveStorage(TorchDispatchMode):
    """Bytes of tensor storage alive while active, and their peak: each op's new output storage
    counts from its creation until it is freed (an in-place op's output is its input: not new)."""

    def __init__(self, start: int = 0) -> None:
        super().__init__()
        self.live = self.peak = start
        self.keys: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {a.untyped_storage()._cdata for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)}
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = storage._cdata
            if key in inputs or key in self.keys:
                continue
            self.keys.add(key)
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, key, storage.nbytes())
        return out

    def _free(self, key: int, size: int) -> None:
        self.keys.discard(key)
        self.live -= size


OPTIMIZERS = {"adamw": ("AdamW", {}), "adam": ("Adam", {}), "sgd": ("SGD", {"lr": 0.1}),
              "momentum": ("SGD", {"lr": 0.1, "momentum": 0.9}), "rmsprop": ("RMSprop", {}),
              "adagrad": ("Adagrad", {})}


def optimizer_step_extra(model: torch.nn.Module, optimizer: str) -> float:
    """Bytes the optimizer's step allocates for a moment beyond weights, gradients and its state,
    measured by running torch's own single-tensor implementation on meta tensors of the same shapes."""
    if optimizer not in OPTIMIZERS:
        return 0.0
    name, options = OPTIMIZERS[optimizer]
    seen: set[int] = set()
    params = []
    for param in model.parameters():
        if param.requires_grad and id(param) not in seen:
            seen.add(id(param))
            copy = torch.nn.Parameter(torch.empty(param.shape, dtype=param.dtype, device="meta"))
            copy.grad = torch.empty_like(copy)
            params.append(copy)
    if not params:
        return 0.0
    step = getattr(torch.optim, name)(params, foreach=False, **options)

    step.step()  # the state is made here
    with torch.no_grad(), LiveStorage() as live:
        step.step()
    return float(live.peak)
