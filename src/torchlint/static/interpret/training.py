"""What a training loop does to gradients and parameters, in order, per path.

A loop's actions are read from its body log expanded through the functions and methods it calls
(so a `fit()` loop that calls `self.train_step()` is judged on `train_step`), and through an
optimizer closure (`optimizer.step(closure)` runs the closure's backward first). Each action keeps
the flags it runs under (`if use_amp:`), so a rule can judge each path on its own: the `else`
branch of `if scaler is not None:` has no scaler.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import product

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.interpret.scopes import Body, Mark

BACKWARD, STEP, ZERO_GRAD, CLIP, UNSCALE, GRAD = "backward", "step", "zero_grad", "clip", "unscale", "grad"
SCHEDULE = "schedule"  # a learning-rate scheduler's step()
CLIP_NAMES = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_gradients"})
MAX_FLAGS = 5  # more flags than this in one loop (32 paths): judge the merged actions only


@dataclass(frozen=True)
class Action:
    kind: str
    node: cst.CSTNode
    call: CallInfo | None = None
    cond: tuple[tuple[str, bool], ...] = ()
    scaled: bool = False  # a backward of scaler.scale(loss), or a scaler's step
    gates: tuple = ()  # the if-tests it runs under (Scope.gates), through the call sites that led to it


def classify(ctx: FileContext, entry) -> str | None:
    if isinstance(entry, Mark):
        return ZERO_GRAD if entry.kind == "grad_none" else None
    if not isinstance(entry, CallInfo):
        return None
    name = entry.name
    if entry.form == "function":
        qual = entry.qual or ""
        if qual in ("torch.autograd.backward", "torch.distributed.autograd.backward"):
            return BACKWARD
        if qual == "torch.autograd.grad":
            return GRAD
        if name in CLIP_NAMES and qual.startswith("torch."):
            return CLIP
        return None
    if entry.form != "method":
        return None
    if name == "backward":
        return BACKWARD
    if name == "zero_grad":
        return ZERO_GRAD
    if name in CLIP_NAMES:
        return CLIP
    if name == "unscale_":
        return UNSCALE
    if name == "zero_" and isinstance(entry.receiver, cst.Attribute) and entry.receiver.attr.value == "grad":
        return ZERO_GRAD
    if name == "step" and is_optimizer(ctx, entry.receiver):
        return STEP
    if name == "step" and is_scheduler(ctx, entry.receiver):
        return SCHEDULE
    return None


def is_scheduler(ctx: FileContext, receiver) -> bool:
    """A learning-rate scheduler: from its constructor when visible, else from how it is named."""
    value = ctx.value(receiver)
    if value.kind == "scheduler":
        return True
    if value.kind is not None:
        return False
    return "sched" in ctx.shape(receiver).lower().rsplit(".", 1)[-1]


def is_optimizer(ctx: FileContext, receiver) -> bool:
    """An optimizer or GradScaler: from its constructor when visible, else from how it is named."""
    value = ctx.value(receiver)
    if value.kind in ("optimizer", "scaler"):
        return True
    if value.kind is not None:  # a scheduler, a model, a dataloader...
        return False
    name = ctx.shape(receiver).lower().rsplit(".", 1)[-1]
    return ("opt" in name or "scaler" in name) and "sched" not in name


def _scaled(ctx: FileContext, kind: str, call: CallInfo) -> bool:
    if call.form != "method":
        return False
    receiver = call.receiver
    if kind == STEP:
        return ctx.value(receiver).kind == "scaler" or "scaler" in ctx.shape(receiver).lower()
    if kind == BACKWARD and isinstance(receiver, cst.Call):
        inner = ctx.call(receiver)
        return inner is not None and inner.name == "scale"
    return False


EXPANSION_BUDGET = 20_000  # entries one body's analysis may visit through followed calls


def body_entries(ctx: FileContext, body: Body) -> list[tuple[object, tuple, tuple]]:
    """`entries` of a body from its start, expanded once per file and shared by the rules."""
    cache = ctx.memo.setdefault("body_entries", {})
    found = cache.get(id(body))
    if found is None:
        found = cache[id(body)] = list(entries(body, (), {id(body)}))
    return found


def actions(ctx: FileContext, body: Body) -> list[Action]:
    """The gradient actions a body performs, in order, through nested loops, calls and closures."""
    found: list[Action] = []
    for entry, cond, via in body_entries(ctx, body):
        kind = classify(ctx, entry)
        if kind is None:
            continue
        call = entry if isinstance(entry, CallInfo) else None
        gates = via + entry.scope.gates
        if kind == STEP and call is not None:
            found.extend(replace(a, cond=cond + a.cond, gates=gates + a.gates)
                         for a in _closure_actions(ctx, call))
        found.append(Action(kind, entry.node, call, cond,
                            _scaled(ctx, kind, call) if call is not None else False, gates))
    return found


def entries(body: Body, cond: tuple, seen: set[int], budget: list[int] | None = None,
            via: tuple = (), renames: dict[str, str] | None = None) -> Iterator[tuple[object, tuple, tuple]]:
    """Calls and marks in order, each with the flags it runs under (the flags of the call sites that
    led into its function, then its own), and the gates of those call sites (`via`: an entry runs
    under `via + entry.scope.gates`).

    A flag a function tests on one of its parameters (`if grad_scaler is not None:`) is renamed to
    what the call site passed (`self.scaler`), so one flag tested in the caller and in the callee is
    one flag: its two values are never combined.

    Calls are followed along every path, which is exponential in a file whose functions call each
    other a lot (a recursive-descent parser): past the budget of entries, calls are no longer followed."""
    if budget is None:
        budget = [EXPANSION_BUDGET]
    for entry in body.entries:
        if isinstance(entry, Body):
            yield from entries(entry, cond, seen, budget, via, renames)
            continue
        budget[0] -= 1
        own = _renamed(entry.scope.cond, renames) if renames else entry.scope.cond
        if own is None:
            continue  # under a test of a parameter the call site passes None or True for: never runs
        yield entry, cond + own, via
        callee = getattr(getattr(entry, "callee", None), "body", None)
        if isinstance(callee, Body) and id(callee) not in seen and budget[0] > 0:
            seen.add(id(callee))
            inner = _call_renames(entry, callee, renames)
            yield from entries(callee, cond + own, seen, budget, via + entry.scope.gates, inner)
            seen.discard(id(callee))


_CONSTANT = {"None": False, "True": True}  # arguments whose flag value is known: `f(optimizer=None)`


def _renamed(cond: tuple, renames: dict[str, str]) -> tuple | None:
    """The flags in the caller's terms; None when one contradicts a constant the call passed."""
    found = []
    for name, value in cond:
        renamed = renames.get(name, name)
        if renamed in _CONSTANT:
            if _CONSTANT[renamed] != value:
                return None
            continue
        found.append((renamed, value))
    return tuple(found)


def _call_renames(call, callee: Body, outer: dict[str, str] | None) -> dict[str, str] | None:
    """Parameter name -> the code the call passes for it (a name or attribute), through outer renames."""
    function = callee.node
    if not isinstance(call, CallInfo) or not isinstance(function, cst.FunctionDef):
        return None
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if params and params[0] in ("self", "cls") and isinstance(call.node.func, cst.Attribute):
        params = params[1:]  # a bound method: the receiver is `self`
    passed = dict(zip(params, call.args, strict=False))  # extra arguments: *args
    passed.update(call.kwargs)
    renames = {}
    for name, argument in passed.items():
        code = dotted_code(argument)
        if code is not None and code != name:
            renames[name] = (outer or {}).get(code, code)
        elif code == name and outer and name in outer:
            renames[name] = outer[name]  # passed on under the same name: what the outer call passed
    return renames or None


def _closure_actions(ctx: FileContext, step: CallInfo) -> list[Action]:
    """`optimizer.step(closure)`: the closure runs (and usually backpropagates) before the update."""
    closure = step.param(1, "closure")  # positions count the receiver: step(self, closure)
    if closure is None or isinstance(closure, (cst.Integer, cst.Float)) or _scaled(ctx, STEP, step):
        return []  # `scaler.step(optimizer)` is given the optimizer, not a closure
    value = ctx.value(closure)
    call = ctx.call(closure)
    if call is not None and call.name == "partial" and call.args:  # functools.partial(self.step_fn, ...)
        value = ctx.value(call.args[0])
    if isinstance(value.body, Body):
        inner = [a for a in actions(ctx, value.body) if a.kind != STEP]
        if inner:
            return inner
    # A closure we cannot see into: L-BFGS-style closures exist to compute the loss and backward.
    return [Action(BACKWARD, closure, None, step.scope.cond, gates=step.scope.gates)]


def trains(kinds: set[str]) -> bool:
    return BACKWARD in kinds and STEP in kinds


def loop_actions(ctx: FileContext, body: Body) -> list[Action]:
    """`actions` of a body, computed once per file (shared by the rules: do not modify)."""
    cache = ctx.memo.setdefault("loop_actions", {})
    found = cache.get(id(body))
    if found is None:
        found = cache[id(body)] = actions(ctx, body)
    return found


def innermost_training_loops(ctx: FileContext) -> list[tuple[Body, list[Action]]]:
    """Loops that run backward and an optimizer step, keeping the innermost of nested ones: a loop
    nested in another through a call (an epoch loop calling `train_one_epoch()`) counts as nested."""
    cached = ctx.memo.get("training_loops")
    if cached is not None:
        return cached
    found = []
    for loop in ctx.loops:
        steps = loop_actions(ctx, loop)
        if not trains({a.kind for a in steps}):
            continue
        nested = [e for e in loop.walk() if isinstance(e, Body) and e.kind == "loop" and e is not loop]
        if any(trains({a.kind for a in loop_actions(ctx, inner)}) for inner in nested):
            continue
        found.append((loop, steps))
    ctx.memo["training_loops"] = found
    return found


def enclosing_function(ctx: FileContext, loop: Body) -> Body | None:
    """The function whose body holds ``loop`` (at any depth of loops): where the code before the
    loop sets things up (a `zero_grad()`, a `model.train()`)."""
    for body in ctx.functions:
        if any(entry is loop for entry in body.walk(expand=False)):
            return body
    return None


def paths(steps: list[Action]) -> Iterator[list[Action]]:
    """The action sequences of each combination of the flags the actions run under."""
    flags = sorted({name for action in steps for name, _ in action.cond})
    if not flags or len(flags) > MAX_FLAGS:
        yield steps
        return
    for values in product((True, False), repeat=len(flags)):
        assignment = dict(zip(flags, values, strict=True))
        yield [a for a in steps if all(assignment.get(name, value) == value for name, value in a.cond)]


def uses_scaler(steps: list[Action]) -> bool:
    return any(action.scaled for action in steps)


def gates_in(loop: Body, action: Action) -> tuple | None:
    """The gates an action runs under inside one iteration of `loop` (None: not reached from it)."""
    outer = loop.scope.gates
    gates = action.gates
    if len(gates) < len(outer) or any(a is not b for a, b in zip(gates, outer, strict=False)):
        return None
    return gates[len(outer):]


def loop_header(loop: Body) -> cst.CSTNode:
    """The node a loop finding points at: the `for`/`while` statement (reported at its keyword)."""
    return loop.node
