"""Loop variables that carry one training step's autograd graph into the next step's forward.

Truncated backpropagation through time keeps a recurrent state from one window to the next:
`out, (h, c) = model(x, (h, c))`. Each iteration calls backward(), which frees the graph behind
`h` and `c`; unless the state is detached before the next forward, that forward builds on the freed
graph and the next backward fails ("Trying to backward through the graph a second time"), or, with
`retain_graph=True`, backpropagates through every earlier window while memory grows.

Found per training loop (one that calls backward and an optimizer step) from the statements of its
body in order: a name that a model call reads before the body assigns it (so it holds the previous
iteration's value), assigned in the body from a model's output that has autograd history, and not
assigned again after that (a later `h = h.detach()` or `h = repackage(h)` is taken to detach it).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.model_calls import is_model_call, with_history
from torchlint.static.traverse import nodes_of, simple_statements, target_names


@dataclass
class CarriedState:
    name: str
    write: cst.CSTNode  # the assignment from the model's output
    read: cst.Call  # the model call that reads the previous iteration's value
    loop: cst.CSTNode


def carried_states(ctx: FileContext, loops) -> list[CarriedState]:
    found: list[CarriedState] = []
    for loop in loops:
        node = loop.node
        if not isinstance(node, (cst.For, cst.While)):
            continue
        found.extend(_in_loop(ctx, node))
    return found


def _in_loop(ctx: FileContext, loop) -> list[CarriedState]:
    statements = _statements(loop)
    written: set[str] = set()
    first_reads: dict[str, cst.Call] = {}  # read by a model call before any write in the iteration
    writes: dict[str, list[tuple[int, cst.CSTNode, bool]]] = {}  # name -> (position, statement, from history)
    for position, statement in enumerate(statements):
        for call in nodes_of(statement, (cst.Call,)):
            if not is_model_call(ctx, call):
                continue
            for name in _names_read(call):
                if name not in written:
                    first_reads.setdefault(name, call)
        targets, value = _assignment(statement)
        for name in targets:
            history = isinstance(value, cst.Call) and is_model_call(ctx, value) and with_history(ctx, value)
            writes.setdefault(name, []).append((position, statement, history))
            written.add(name)
    found = []
    for name, read in first_reads.items():
        assignments = writes.get(name)
        if not assignments or len(assignments) != 1:
            continue  # never assigned in the loop (state from outside), or reassigned (detached, reset)
        _position, statement, history = assignments[0]
        if history:
            found.append(CarriedState(name, statement, read, loop))
    return found


def _statements(loop) -> list:
    """The loop body's small statements in order, nested blocks included (not nested loops or functions)."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else [loop.body]
    return simple_statements(list(body), (cst.FunctionDef, cst.ClassDef, cst.For, cst.While))


def _assignment(statement) -> tuple[list[str], cst.BaseExpression | None]:
    """Names an assignment binds (tuple targets unpacked) and its value; any other statement binds
    nothing we follow, except an augmented assignment (`h += x`), which counts as a write."""
    if isinstance(statement, cst.Assign):
        names = [n.value for target in statement.targets for n in target_names(target.target)]
        return names, statement.value
    if isinstance(statement, (cst.AugAssign, cst.AnnAssign)) and isinstance(statement.target, cst.Name):
        return [statement.target.value], None
    return [], None


def _names_read(call: cst.Call) -> set[str]:
    return {n.value for arg in call.args for n in nodes_of(arg.value, (cst.Name,))}
