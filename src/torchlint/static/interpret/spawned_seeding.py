"""Seeding that stays in the parent of `torch.multiprocessing.spawn`: each worker starts a fresh
interpreter whose `random`, NumPy and torch generators are seeded from the OS, so a seed set before
the spawn does not reach the workers' weight initialisation, shuffling or augmentation."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.seeding import SEEDERS, SEEDS_EVERYTHING

SPAWNERS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn",
                      "torch.multiprocessing.start_processes"})


@dataclass(frozen=True)
class ParentOnlySeed:
    seed: cst.Call  # the parent's seeding call
    spawn: cst.Call
    worker: str  # the worker function's name


def parent_only_seeds(ctx: FileContext) -> list[ParentOnlySeed]:
    if "spawn" not in ctx.source:
        return []
    found = []
    for call in ctx.calls.values():
        if call.form != "function" or call.qual not in SPAWNERS or not call.args:
            continue
        if call.qual.endswith("start_processes") and not _spawn_method(call):
            continue
        worker = ctx.value(call.args[0])
        if worker.kind != "function" or not isinstance(worker.body, Body):
            continue
        if any(_seeds(entry) for entry in worker.body.walk()):
            continue  # the worker seeds itself
        seed = _parent_seed(ctx, call)
        if seed is not None:
            found.append(ParentOnlySeed(seed, call.node, worker.body.node.name.value))
    return found


def _spawn_method(call: CallInfo) -> bool:
    method = call.kwargs.get("start_method")
    return method is None or (isinstance(method, cst.SimpleString) and method.evaluated_value == "spawn")


def _seeds(entry) -> bool:
    """A call that seeds a global generator, or a seed-everything helper (`set_seed(s)`)."""
    if not isinstance(entry, CallInfo):
        return False
    if entry.form == "function" and entry.qual in SEEDERS:
        return True
    name = entry.name if entry.form in ("function", "method") else \
        (entry.node.func.value if isinstance(entry.node.func, cst.Name) else "")
    return name in SEEDS_EVERYTHING


def _parent_seed(ctx: FileContext, spawn: CallInfo) -> cst.Call | None:
    """The seeding call that runs before the spawn in the same function (or at module level)."""
    for body in [*ctx.functions, ctx.module_body]:
        if body is None or not any(entry is spawn for entry in body.walk(expand=False)):
            continue
        seen_spawn = False
        for entry in body.walk(expand=False):
            if entry is spawn:
                seen_spawn = True
            elif not seen_spawn and _seeds(entry):
                return entry.node
        if seen_spawn:
            return None
    return None
