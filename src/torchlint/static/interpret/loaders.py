"""The DataLoaders a file builds: which dataset classes they load, with how many worker processes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_WORKERS_AT, _INIT_FN_AT = 5, 10  # positions of num_workers and worker_init_fn in DataLoader(...)


@dataclass(frozen=True)
class LoaderUse:
    node: cst.Call
    datasets: tuple[Any, ...]  # ClassInfo of each dataset object it may load
    workers: int | None  # num_workers: 0 when not given, None when not known
    seeded: bool  # a worker_init_fn is given: it runs in every worker before any item is loaded
    persistent: bool  # persistent_workers=True: workers outlive an epoch
    path: str  # the file that builds it

    @property
    def copies_state(self) -> bool:
        """Whether the dataset's state is copied into several workers, or into a fresh worker every
        epoch, with nothing run in the workers that could reseed it."""
        if self.seeded or self.workers == 0:
            return False
        return not (self.workers == 1 and self.persistent)


def loader_uses(ctx: FileContext) -> list[LoaderUse]:
    uses = []
    for call in ctx.calls.values():
        if call.form == "function" and call.qual in DATALOADERS:
            persistent = call.kwargs.get("persistent_workers")
            uses.append(LoaderUse(call.node, tuple(_dataset_classes(ctx, call.param(0, "dataset"))),
                                  _workers(ctx, call), _given(call, _INIT_FN_AT, "worker_init_fn"),
                                  isinstance(persistent, cst.Name) and persistent.value == "True", ctx.path))
    return uses


def _workers(ctx: FileContext, call: CallInfo) -> int | None:
    argument = call.param(_WORKERS_AT, "num_workers")
    if argument is None:
        return _spread_workers(ctx, call)
    return _count(ctx.value(argument))


def _count(value) -> int | None:
    return int(value.const) if value.op == "const" and value.const is not None else None


def _spread_workers(ctx: FileContext, call: CallInfo) -> int | None:
    """num_workers from `DataLoader(ds, **params)`: the dict literal's entry, 0 when a known dict has
    none, unknown otherwise."""
    spreads = [arg.value for arg in call.node.args if arg.star == "**"]
    if not spreads:
        return 0
    for spread in spreads:
        value = ctx.value(spread)
        if value.kind != "dict" or not value.node or None in value.keys:
            return None
        if "num_workers" in value.keys:
            return _count(value.items[value.keys.index("num_workers")])
    return 0


def _given(call: CallInfo, position: int, name: str) -> bool:
    """The argument is passed (not as None), or may be: `DataLoader(ds, **kwargs)`."""
    if any(arg.star == "**" for arg in call.node.args):
        return True
    argument = call.param(position, name)
    return argument is not None and not (isinstance(argument, cst.Name) and argument.value == "None")


def _dataset_classes(ctx: FileContext, node) -> list:
    """The classes of the dataset argument, also inside a wrapper (`Subset(ds, idx)`, `ConcatDataset([a, b])`)."""
    found = []
    stack = [node] if node is not None else []
    while stack and len(found) < 8:
        item = stack.pop()
        value = ctx.value(item)
        if value.kind == "instance" and value.cls is not None:
            found.append(value.cls)
        elif value.kind == "list":
            found.extend(v.cls for v in value.items if v.kind == "instance" and v.cls is not None)
        elif isinstance(item, cst.Call) and value.kind is None:
            stack.extend(arg.value for arg in item.args)
        elif isinstance(item, (cst.List, cst.Tuple)):
            stack.extend(element.value for element in item.elements)
    return found
