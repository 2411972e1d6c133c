"""A backward through a forward that ran before an optimizer step updated that module in place.

`D_loss.backward(retain_graph=True)`, `opt_D.step()`, then `G_loss.backward()` where `G_loss` was
computed through `D(...)` before the step: the forward saved D's weights for its backward, and
`step()` has since modified them in place. Since PyTorch 1.5 the second backward raises "one of the
variables needed for gradient computation has been modified by an inplace operation" (earlier
versions silently computed the gradient with the new weights).

Read from the straight-line statements of one block (a loop body, a function, the module's own
code; `with` blocks are entered, branches and nested loops are not): the latest assignment of each
name before it is used, the module calls a loss was computed through (not through `.detach()`,
`.item()` or code under `no_grad`), the optimizer steps in between, and the modules each optimizer
was given (`X.parameters()`, parameter groups, a name bound to them). An optimizer given anything
else is not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.facts.ops import DETACHING_METHODS
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.interpret.unfreezing import OPTIMIZER_PREFIXES, is_optimizer_construction
from torchlint.static.interpret.unoptimized_layers import parameter_sources
from torchlint.static.traverse import nodes_of, simple_statements

_MODULE_KINDS = frozenset({"module", "instance", "either"})
_DEPTH = 8  # assignments followed back from a loss


@dataclass(frozen=True)
class StaleBackward:
    backward: cst.Call  # `G_loss.backward()`
    forward: cst.Call  # `D(x)`: the module call the loss was computed through, before the step
    step: cst.Call  # `opt_D.step()`: updates that module's weights in between


def stale_backwards(ctx: FileContext) -> list[StaleBackward]:
    source = ctx.source
    if "backward" not in source or ".step(" not in source or ".parameters()" not in source:
        return []
    if not any(call.name == "backward" for call in ctx.calls.values()):
        return []
    optimizers = _optimizers(ctx)
    if not optimizers:
        return []
    # only the blocks that run a backward after a step: most functions of a file run neither
    bodies = [body for body in (*ctx.loops, *ctx.functions, ctx.module_body) if body is not None and _steps_then_backward(body)]
    blocks = [body.node.body if isinstance(body.node, (cst.For, cst.While, cst.FunctionDef)) else body.node
              for body in bodies]
    found: dict[int, StaleBackward] = {}
    for block in blocks:
        statements = block.body if isinstance(block, (cst.IndentedBlock, cst.Module)) else ()
        for stale in _in_block(ctx, simple_statements(list(statements), skip=_BRANCHES), optimizers):
            found.setdefault(id(stale.backward), stale)
    return list(found.values())


def _steps_then_backward(body) -> bool:
    """The body's own log has a `step()` and, after it, a `backward()` (nested loops included)."""
    stepped = False
    for entry in body.walk(expand=False):
        name = getattr(entry, "name", None)
        if name == "step":
            stepped = True
        elif name == "backward" and stepped:
            return True
    return False


# compound statements whose code may not run, or runs more than once: not straight-line code
_BRANCHES = (cst.FunctionDef, cst.ClassDef, cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def _optimizers(ctx: FileContext) -> dict[str, set[str]]:
    """The code an optimizer is bound to (`opt_D`, `self.optimizer_d`) -> the modules it was given."""
    found: dict[str, set[str]] = {}
    constructions = [call for call in ctx.calls.values() if call.form == "function" and
                     (call.qual or "").startswith(OPTIMIZER_PREFIXES) and is_optimizer_construction(call.node, ctx.qualify)]
    if not constructions:
        return found
    holders = ctx.holders()
    bound: dict[int, dict[int, list[str]]] = {}
    for call in constructions:
        modules = _modules_given(ctx, call.node)
        holder = holders.get(id(call))
        if modules is None or holder is None:
            continue
        if id(holder) not in bound:
            bound[id(holder)] = _call_assignments(holder.node.body if isinstance(holder.node, cst.FunctionDef)
                                                  else holder.node)
        for target in bound[id(holder)].get(id(call.node), ()):
            found.setdefault(target, set()).update(modules)
    return found


def _modules_given(ctx: FileContext, construction: cst.Call) -> set[str] | None:
    argument = construction.args[0].value if construction.args and construction.args[0].keyword is None else \
        next((a.value for a in construction.args if a.keyword is not None and a.keyword.value == "params"), None)
    sources = parameter_sources(ctx, argument, 2) if argument is not None else None
    if not sources:
        return None
    codes = {dotted_code(node) for node in sources}
    return None if None in codes else codes


def _call_assignments(block) -> dict[int, list[str]]:
    """id of each call assigned in the block's statements (not nested definitions) -> the codes bound."""
    found = {}
    statements = block.body if isinstance(block, (cst.IndentedBlock, cst.Module)) else ()
    for assign in simple_statements(list(statements)):
        if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call):
            found[id(assign.value)] = [c for t in assign.targets if (c := dotted_code(t.target)) is not None]
    return found


def _in_block(ctx: FileContext, statements: list, optimizers: dict[str, set[str]]) -> list[StaleBackward]:
    assigned: dict[str, list[tuple[int, cst.BaseExpression, bool]]] = {}
    steps: list[tuple[int, cst.Call, set[str]]] = []
    found = []
    for index, small in enumerate(statements):
        for call in nodes_of(small, (cst.Call,)):
            modules = _step_of(ctx, call, optimizers)
            if modules is not None:
                steps.append((index, call, modules))
            loss = _backward_of(call)
            if loss is not None and steps:
                stale = _stale(ctx, call, loss, index, assigned, steps)
                if stale is not None:
                    found.append(stale)
        if isinstance(small, cst.Assign):
            for target in small.targets:
                for code in _target_codes(target.target):
                    assigned.setdefault(code, []).append((index, small.value, False))
        elif isinstance(small, cst.AugAssign):
            code = dotted_code(small.target)
            if code is not None:
                assigned.setdefault(code, []).append((index, small.value, True))
    return found


def _target_codes(target) -> list[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [code for element in target.elements for code in _target_codes(element.value)]
    code = dotted_code(target)
    return [code] if code is not None else []


def _step_of(ctx: FileContext, call: cst.Call, optimizers: dict[str, set[str]]) -> set[str] | None:
    """The modules `opt.step()` (or `scaler.step(opt)`) updates; None for any other call."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "step":
        return None
    for candidate in (func.value, call.args[0].value if call.args else None):
        code = dotted_code(candidate) if candidate is not None else None
        if code in optimizers:
            return optimizers[code]
        made = ctx.value(candidate).node if candidate is not None else None
        if isinstance(made, cst.Call) and is_optimizer_construction(made, ctx.qualify):
            return _modules_given(ctx, made)
    return None


def _backward_of(call: cst.Call) -> cst.BaseExpression | None:
    """The loss of `loss.backward()`."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward":
        return func.value
    return None


def _stale(ctx, backward, loss, index, assigned, steps) -> StaleBackward | None:
    for made_at, forward, module in _forwards(ctx, loss, index, assigned, _DEPTH, set()):
        for step_at, step, modules in steps:
            if made_at < step_at < index and any(_same_module(module, given) for given in modules):
                return StaleBackward(backward, forward, step)
    return None


def _same_module(called: str, given: str) -> bool:
    """`model.encoder(x)` runs through `model`'s parameters, and `model(x)` through `model.encoder`'s."""
    return called == given or called.startswith(given + ".") or given.startswith(called + ".")


def _forwards(ctx, expression, at: int, assigned, depth: int, seen: set) -> list[tuple[int, cst.Call, str]]:
    """(statement index, call, module code) of the module calls ``expression`` (at statement ``at``)
    was computed through, following names back to their latest assignment before their use."""
    found = []
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in DETACHING_METHODS:
                continue  # `x.detach()`: no graph behind it
            info = ctx.call(node)
            module = info is not None and info.form in ("local", "module") and info.callee.kind in _MODULE_KINDS
            if module and not info.scope.no_grad:
                code = dotted_code(func)
                if code is not None:
                    found.append((at, node, code))
            elif isinstance(func, cst.Attribute):
                stack.append(func.value)  # `prob.log()`: computed from prob
            stack.extend(arg.value for arg in node.args)
            continue
        code = dotted_code(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if code is not None and code in assigned and depth > 0:
            earlier = [item for item in assigned[code] if item[0] < at]
            if earlier:
                made_at, value, augmented = earlier[-1]
                key = (code, made_at)
                if key not in seen:
                    seen.add(key)
                    found.extend(_forwards(ctx, value, made_at, assigned, depth - 1, seen))
                    if augmented:
                        found.extend(_forwards(ctx, node, made_at, assigned, depth - 1, seen))
            continue
        if isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, (cst.BinaryOperation,)):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(element.value for element in node.elements)
        elif isinstance(node, cst.Subscript):
            stack.append(node.value)
        elif isinstance(node, cst.IfExp):
            stack.extend((node.body, node.orelse))
    return found
