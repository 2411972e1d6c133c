"""A dataset split drawn twice at random, each draw keeping a different part.

`train, _ = random_split(ds, [n - k, k])` in one place and `_, val = random_split(ds, [n - k, k])` in
another (a data module's `train_dataloader` and `val_dataloader`) assume both calls shuffle the same
way. Without a seeded `generator=`, each call draws its own permutation from the global RNG, which
has moved on between them: the validation part overlaps the training part, and the validation score
is measured partly on training data.

Found from the calls: at least two `random_split` calls without a generator on the same dataset
expression with the same lengths, whose results are unpacked into names that keep different parts, none in both
(`_` for a part not used).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.traverse import nodes_of

SPLIT = "torch.utils.data.random_split"


@dataclass
class RedrawnSplit:
    call: cst.Call  # a later draw
    first: cst.Call  # the draw whose other part it keeps


def redrawn_splits(ctx: FileContext) -> list[RedrawnSplit]:
    if "random_split" not in ctx.source:
        return []
    draws: dict[tuple[str, str], list[tuple[cst.Call, frozenset[int]]]] = {}
    for assign in nodes_of(ctx.module, (cst.Assign,)):
        call = assign.value
        if not isinstance(call, cst.Call) or len(assign.targets) != 1:
            continue
        info = ctx.call(call)
        if info is None or info.qual != SPLIT or "generator" in info.kwargs or len(call.args) != 2:
            continue
        target = assign.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)):
            continue
        kept = frozenset(i for i, element in enumerate(target.elements)
                         if not (isinstance(element.value, cst.Name) and element.value.value == "_"))
        key = (ctx.code(call.args[0].value, 200), ctx.code(call.args[1].value, 200))
        draws.setdefault(key, []).append((call, kept))
    found = []
    for calls in draws.values():
        for position, (call, kept) in enumerate(calls[1:], start=1):
            first = next((c for c, k in calls[:position] if not k & kept), None)
            if first is not None:
                found.append(RedrawnSplit(call, first))
    return found
