"""Top-level code that runs after a program's last training statement.

A notebook or a script runs its top-level statements in order. A statement trains when it calls
`backward()`, `step()`, `fit()`, `train()` (grad_mode.DIFFERENTIATING) or a function or class of
the file that calls one (directly or through the file's other definitions). What runs after the
last such statement (picking test images to plot, printing a few predictions) cannot change the
trained weights: an unseeded draw there is the sample a lesson shows, not a run that differs. A
function of the file counts as running there when every statement that names it comes after that
point.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.grad_mode import DIFFERENTIATING
from torchlint.static.traverse import called_name, nodes_of

_DEFINITIONS = (cst.FunctionDef, cst.ClassDef)


def runs_after_training(ctx, node) -> bool:
    """``node`` is in a top-level statement after the last one that trains, or in a top-level function
    only named there; False in a program that trains nothing (nothing to be after)."""
    facts = ctx.memo.get("after training")
    if facts is None:
        facts = ctx.memo["after training"] = _facts(ctx)
    where, last, named = facts
    if last < 0:
        return False
    index = where.get(id(node))
    if index is None:
        return False
    statement = ctx.module.body[index]
    if isinstance(statement, cst.FunctionDef):
        uses = named.get(statement.name.value, ())
        return bool(uses) and min(uses) > last
    return not isinstance(statement, cst.ClassDef) and index > last


def _facts(ctx) -> tuple[dict[int, int], int, dict[str, list[int]]]:
    """(call id -> index of its top-level statement, index of the last training statement, name of a
    top-level definition -> indexes of the other top-level statements that name it)."""
    body = ctx.module.body
    called = {s.name.value: {called_name(call) for call in nodes_of(s, (cst.Call,))}
              for s in body if isinstance(s, _DEFINITIONS)}
    trainers = {name for name, names in called.items() if names & DIFFERENTIATING}
    for _ in range(3):  # definitions calling the ones that train (a `main` calling `fit`)
        trainers |= {name for name, names in called.items() if names & trainers}
    definitions = set(called)
    where: dict[int, int] = {}
    named: dict[str, list[int]] = {}
    last = -1
    for index, statement in enumerate(body):
        definition = isinstance(statement, _DEFINITIONS)
        for node in nodes_of(statement, (cst.Call, cst.Name)):
            if isinstance(node, cst.Call):
                where[id(node)] = index
                if not definition and called_name(node) in DIFFERENTIATING:
                    last = index
            elif not definition and node.value in definitions:
                named.setdefault(node.value, []).append(index)
                if node.value in trainers:
                    last = index
    return where, last, named
