"""Train/validation splits made by slicing one array twice, a prefix for one dataset and a suffix for
another (`Dataset(x[:-100])`, `Dataset(x[100:])`), whose slices overlap: the rows in both are
validated on after being trained on. Only slices given, at the same position, to two calls of the
same dataset-making callee in one function, outside loops (sliding windows overlap on purpose)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext

DATASET_CALLS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset",
                           "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                           "torch.utils.data.Subset"})


@dataclass(frozen=True)
class OverlappingSplit:
    prefix: cst.Subscript  # `x[:-100]`
    suffix: cst.Subscript  # `x[100:]`
    call: cst.Call  # the call given the suffix


def overlapping_splits(ctx: FileContext) -> list[OverlappingSplit]:
    if "[" not in ctx.source or "Dataset" not in ctx.source and "DataLoader" not in ctx.source:
        return []
    parts: dict[tuple, list[tuple[str, tuple, cst.Subscript, cst.Call]]] = {}
    for call in ctx.calls.values():
        key = _dataset_callee(call)
        if key is None or call.scope.loop_depth:
            continue
        for position, arg in enumerate(call.args):
            sliced = _prefix_or_suffix(ctx, arg)
            if sliced is not None:
                side, bound, base = sliced
                parts.setdefault((call.scope.function, key, position, base), []).append((side, bound, arg, call.node))
    found: list[OverlappingSplit] = []
    reported: set[int] = set()
    for entries in parts.values():
        for side, bound, arg, node in entries:
            if side != "suffix" or id(node) in reported:
                continue
            for other_side, other_bound, other_arg, other_node in entries:
                if other_side == "prefix" and other_node is not node and _overlap(other_bound, bound):
                    found.append(OverlappingSplit(other_arg, arg, node))
                    reported.add(id(node))
                    break
    return found


def _dataset_callee(call: CallInfo):
    """A name for a callee that makes a dataset or a loader of its arguments."""
    if call.form == "function" and call.qual in DATASET_CALLS:
        return call.qual
    callee = call.callee
    if call.form == "local" and callee.kind == "class" and callee.cls is not None and (
            callee.cls.find("methods", "__getitem__") is not None or any(
                base.rsplit(".", 1)[-1].endswith("Dataset") for info in callee.cls.lineage() for base in info.bases)):
        return (callee.cls.module, callee.cls.name)  # a Dataset class, or a class indexed as one
    return None


def _prefix_or_suffix(ctx: FileContext, node) -> tuple[str, tuple, str] | None:
    """("prefix", its end, the sliced code) for `x[:b]`, ("suffix", its start, ...) for `x[a:]`."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
        return None
    part = node.slice[0].slice
    if part.step is not None or (part.lower is None) == (part.upper is None):
        return None
    base = ctx.code(node.value, 200)
    if part.lower is None:
        return "prefix", _bound(ctx, part.upper), base
    return "suffix", _bound(ctx, part.lower), base


def _bound(ctx: FileContext, node) -> tuple:
    """("start", k) for a literal k >= 0, ("end", k) for -k, ("code", text) otherwise."""
    if isinstance(node, cst.Integer):
        return "start", int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return "end", int(node.expression.evaluated_value)
    return "code", ctx.code(node, 200)


def _overlap(end: tuple, start: tuple) -> bool:
    """Whether `x[:end]` and `x[start:]` share rows for every length but a tiny one."""
    if end[0] == "end" and start[0] == "start":
        return end[1] > 0 and start[1] > 0  # x[:-a] and x[b:]: rows b .. n-a are in both
    if end[0] == start[0] == "start":
        return start[1] < end[1]
    if end[0] == start[0] == "end":
        return start[1] > end[1]
    return False
