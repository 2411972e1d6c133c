"""A DataLoader's `worker_init_fn` that reseeds the global generators with a seed every worker shares.

`worker_init_fn(worker_id)` runs in each worker. Seeding `random`/NumPy/torch there from a value
that depends neither on the worker (its id, `torch.initial_seed()`, `get_worker_info()`) nor on
anything else that changes (a call we cannot see through) gives every worker the same stream, and
every epoch the same again (PyTorch's own per-worker reseeding is overwritten). The seed is followed
through the function's own assignments (`worker_seed = rank + seed`); parameters bound by
`functools.partial` or defaults, module names and literals count as shared.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import positional_names
from torchlint.static.interpret.scopes import Body

GLOBAL_RESEEDS = frozenset({"random.seed", "numpy.random.seed", "torch.manual_seed", "torch.random.manual_seed"})
PARTIALS = frozenset({"functools.partial"})
PLAIN = frozenset({"int", "abs", "hash"})  # calls that keep a shared value shared


def init_function(ctx: FileContext, argument) -> tuple[cst.FunctionDef, Body] | None:
    """The function a `worker_init_fn=` argument runs: a function of this file, also through partial()."""
    node = argument
    if isinstance(node, cst.Call):
        call = ctx.calls.get(id(node))
        if call is None or call.qual not in PARTIALS or not call.args:
            return None
        node = call.args[0]
    value = ctx.value(node)
    body = value.body if value.kind == "function" else None
    if isinstance(body, Body) and isinstance(body.node, cst.FunctionDef):
        return body.node, body
    return None


def shared_reseeds(function: cst.FunctionDef, body: Body) -> list[CallInfo]:
    """The global reseeds in the function whose seed every worker computes alike."""
    names = positional_names(function.params)
    if not names:
        return []
    worker = {names[0]}  # the worker id PyTorch passes
    local: dict[str, cst.BaseExpression] = {}
    for statement in _statements(function):
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0].target, cst.Name):
            local[statement.targets[0].target.value] = statement.value
    found = []
    for entry in body.walk(expand=False):
        if isinstance(entry, CallInfo) and entry.form == "function" and entry.qual in GLOBAL_RESEEDS \
                and entry.args and _shared(entry.args[0], worker, local, set()):
            found.append(entry)
    return found


def _statements(function: cst.FunctionDef):
    """The function's top-level small statements (a seed computed in a branch is not followed)."""
    if not isinstance(function.body, cst.IndentedBlock):
        return
    for line in function.body.body:
        if isinstance(line, cst.SimpleStatementLine):
            yield from line.body


def _shared(node, worker: set[str], local: dict, seen: set[str]) -> bool:
    """Every worker computes the same value: literals, shared names, arithmetic on them."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name):
        name = node.value
        if name in worker or name in seen:
            return False
        if name in local:
            return _shared(local[name], worker, local, seen | {name})
        return True  # a parameter bound by partial() or a default, or a module-level name
    if isinstance(node, cst.Attribute):
        return isinstance(node.value, cst.Name) and _shared(node.value, worker, local, seen)
    if isinstance(node, cst.BinaryOperation):
        return _shared(node.left, worker, local, seen) and _shared(node.right, worker, local, seen)
    if isinstance(node, cst.UnaryOperation):
        return _shared(node.expression, worker, local, seen)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in PLAIN:
        return all(_shared(arg.value, worker, local, seen) for arg in node.args)
    return False  # a call, a subscript, anything else: may differ per worker
