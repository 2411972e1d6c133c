"""TL402 graph-kept-alive: a loss tensor accumulated across iterations."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOSS_OPS
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.scopes import Body, Mark
from torchlint.static.interpret.stores import kept_arguments
from torchlint.static.interpret.training import BACKWARD, body_entries, classify
from torchlint.static.rules.base import Rule, atom
from torchlint.static.traverse import called_name, nodes_of

CUTS_GRAPH = frozenset({"item", "detach", "tolist", "numpy", "float", "int"})


class GraphKeptAlive(Rule):
    info = RuleInfo(
        "TL402", "graph-kept-alive", "warning",
        "A loss or output tensor accumulated across iterations keeps its graph alive; use .item()/.detach().",
        tags=("memory",),
    )

    def on_end(self, ctx: FileContext) -> None:
        done: set[int] = set()
        for loop in ctx.loops:
            if loop.scope.no_grad:
                continue
            receivers = _backward_receivers(ctx, loop.walk())
            if not receivers:
                continue  # summing losses inside one forward (multi-task, per-codebook) is fine
            self._kept_by_calls(ctx, loop, receivers, done)
            self._kept_by_step_methods(ctx, loop, done)
            # names are compared only with the loop's own backward calls: `loss` in a function the loop
            # calls is another variable (`loss = train(...)` may be the float that function returns)
            receivers = _backward_receivers(ctx, loop.walk(expand=False))
            holders = _holders(ctx, loop, receivers)
            feeders = None
            for entry in loop.entries:
                target = None
                if isinstance(entry, Mark) and entry.kind == "accumulate" and isinstance(entry.node.operator, cst.AddAssign):
                    target, node = entry.value, entry.node
                elif isinstance(entry, CallInfo) and entry.form == "method" and entry.name in ("append", "extend") \
                        and len(entry.args) == 1:
                    target, node = entry.args[0], entry.node
                elif isinstance(entry, CallInfo) and entry.form == "method" and entry.name == "add_" \
                        and len(entry.args) == 1 and not (isinstance(entry.receiver, cst.Name) and _assigned(
                            loop.node, entry.receiver.value, entry.node)):  # (not a tensor made this iteration)
                    target, node = entry.args[0], entry.node  # `stats["loss"].add_(loss)`: a running sum kept
                if target is None or entry.scope.no_grad or _cuts_graph(ctx, target):
                    continue
                if isinstance(entry, CallInfo) and entry.name == "append" and \
                        _differentiated_later(ctx, loop, entry.receiver):
                    continue
                if isinstance(entry, Mark) and isinstance(entry.node.target, cst.Name) and \
                        _assigned(loop.node, entry.node.target.value, entry.node):
                    continue  # `loss = a; loss += b` builds this step's loss: nothing outlives the step
                if isinstance(entry, Mark) and _freed_and_reset(ctx, loop, entry, target):
                    continue
                value = ctx.value(target)
                if value.tracked is False:
                    continue  # `.item()`, `.detach()` inside a called function: no graph to keep
                shape = ctx.shape(target)
                if feeders is None:
                    feeders = _feeders(ctx, loop.node, receivers, unpacked=False)
                if shape in holders:
                    ctx.report(
                        self.info, node,
                        f"`{ctx.code(node)}` keeps `{ctx.code(target, 30)}`, which holds `{holders[shape]}` with "
                        f"its autograd graph: memory grows every step. Store `{holders[shape]}.detach()` (or "
                        "`.item()`) in it first, or keep only the numbers you need",
                    )
                elif value.op in LOSS_OPS or value.op == "matmul" or shape in receivers or \
                        (value.tracked is True and value.op is not None and not value.kind) or \
                        (isinstance(target, cst.Name) and target.value in feeders):
                    ctx.report(
                        self.info, node,
                        f"`{ctx.code(node)}` keeps `{ctx.code(target, 30)}` as a tensor that still carries its "
                        "autograd graph: memory grows every step. Keep "
                        + (f"`{ctx.code(target, 30)}.detach()` (or `.detach().cpu()`)" if value.op == "matmul"
                           else f"`{ctx.code(target, 30)}.item()`"),
                    )

        for function in ctx.functions:
            # A step function (backward outside any loop of its own) runs once per iteration of
            # whatever loop calls it, here or in another module (a runner's `train()`).
            if function.scope.no_grad:
                continue
            receivers = _backward_receivers(ctx, function.entries)
            if receivers:
                self._kept_by_calls(ctx, function, receivers, done)

    def _kept_by_step_methods(self, ctx: FileContext, loop: Body, done: set[int]) -> None:
        """`self.step_outputs.append(log)` in a method the training loop calls each step, where `log`
        (or an item of the dict it is) carries autograd history: the object keeps every step's graph."""
        own = {id(entry) for entry in loop.walk(expand=False)}
        for entry, _cond, _via in body_entries(ctx, loop):
            if not isinstance(entry, CallInfo) or id(entry) in own or entry.form != "method" or \
                    entry.name != "append" or len(entry.args) != 1 or entry.scope.no_grad or \
                    id(entry.node) in done or not _on_self(entry.receiver):
                continue
            value = ctx.value(entry.args[0])
            held = [item for item in value.items if item.tracked] if value.kind == "dict" else []
            if not (held or (value.tracked and value.op is not None and not value.kind)) or \
                    _cuts_graph(ctx, entry.args[0]):
                continue
            done.add(id(entry.node))
            what = f"`{ctx.code(entry.args[0], 30)}`" + (", a dict holding tensors with their autograd graph," if held
                                                         else ", a tensor with its autograd graph,")
            ctx.report(
                self.info, entry.node,
                f"`{ctx.code(entry.node, 50)}` keeps {what} on the object at every training step: each step's "
                "graph stays alive until the list is cleared and memory grows. Store `.detach()`ed tensors or "
                "`.item()` numbers",
            )

    def _kept_by_calls(self, ctx: FileContext, body: Body, receivers: set[str], done: set[int]) -> None:
        """`meter.update(loss)` where the method adds its argument to the object (`self.sum += val`)."""
        feeders = None
        for entry in body.entries:
            if not isinstance(entry, CallInfo) or entry.scope.no_grad or id(entry.node) in done:
                continue
            callee = getattr(entry.callee, "body", None)
            if not isinstance(callee, Body):
                continue
            for position, statement in kept_arguments(ctx, callee).items():
                argument = _argument(entry, callee, position)
                if argument is None:
                    continue
                if feeders is None:
                    feeders = _feeders(ctx, body.node, receivers)
                kept = next((e for e in _elements(argument) if _carries_graph(ctx, e, receivers, feeders)), None)
                if kept is None:
                    continue
                done.add(id(entry.node))
                method = ctx.code(entry.node.func, 40)
                ctx.report(
                    self.info, entry.node,
                    f"`{method}` adds `{ctx.code(kept, 30)}` to its object's state "
                    f"(`{ctx.code(statement, 40)}`), and that tensor carries its autograd graph: every step's graph "
                    f"stays alive and memory grows. Pass "
                    + (f"the `.item()` of each loss in `{ctx.code(kept, 30)}`" if _holds_loss(ctx, kept, receivers)
                       else f"`{atom(ctx, kept)}.item()`") + " (or `.detach()`)",
                    related=((statement, "kept here", callee.origin),),
                )
                break


def _argument(call: CallInfo, callee: Body, position: int):
    if position < len(call.args):
        return call.args[position]
    params = params_of(callee.node.params)
    name = params[position + 1].name.value if position + 1 < len(params) else None
    return call.kwargs.get(name) if name else None


def _elements(node):
    if isinstance(node, (cst.List, cst.Tuple)):
        return [element.value for element in node.elements]
    return [node]


def _carries_graph(ctx: FileContext, node, receivers: set[str], feeders: set[str]) -> bool:
    if _cuts_graph(ctx, node):
        return False
    value = ctx.value(node)
    if value.tracked is False:
        return False
    shape = ctx.shape(node)
    if value.tracked or value.op in LOSS_OPS or shape in receivers or _holds_loss(ctx, node, receivers):
        return True
    return bool(_names_in(node) & feeders)


def _holds_loss(ctx: FileContext, node, receivers: set[str]) -> bool:
    """The dict or object the differentiated loss sits in (`losses["total"].backward()`)."""
    shape = ctx.shape(node)
    return bool(shape) and any(r.startswith((shape + "[", shape + ".")) for r in receivers)


def _feeders(ctx: FileContext, node, receivers: set[str], unpacked: bool = True) -> set[str]:
    """Names the differentiated loss is built from in this body (`loss = a + b` -> a, b), and
    (``unpacked``) the values unpacked from the same call as the loss (`loss, parts = model.step(x)`):
    one graph, unless the call cut them from it (`{"nll": nll.item()}`)."""
    found: set[str] = set()
    for small in _small_statements(node):
        if not isinstance(small, cst.Assign):
            continue
        for target in small.targets:
            if ctx.shape(target.target) in receivers:
                found |= _names_in(small.value)
            elif unpacked and isinstance(target.target, (cst.Tuple, cst.List)):
                names = [e.value for e in target.target.elements]
                if any(ctx.shape(n) in receivers for n in names):
                    found |= {n.value for n in names if isinstance(n, cst.Name)}
    return found


def _names_in(node) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            names.add(item.value)
        elif isinstance(item, cst.BinaryOperation):
            stack.extend((item.left, item.right))
        elif isinstance(item, cst.UnaryOperation):
            stack.append(item.expression)
        elif isinstance(item, cst.IfExp):
            stack.extend((item.body, item.orelse))  # `sum(losses) if isinstance(losses, tuple) else losses`
        elif isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute):
            if item.func.attr.value not in CUTS_GRAPH:
                stack.append(item.func.value)  # `a.mean()`, not `a.item()`
        elif isinstance(item, cst.Call) and isinstance(item.func, cst.Name) and item.func.value == "sum":
            stack.extend(arg.value for arg in item.args)  # `sum(losses)`: a total of the losses
    return names


def _holders(ctx: FileContext, loop, receivers: set[str]) -> dict[str, str]:
    """`out` for `out["loss"].backward()` / `out.loss.backward()`: the object holding the loss,
    unless the loop puts something else (a detached copy) in that slot."""
    found: dict[str, str] = {}
    compact = None
    for receiver in receivers:
        match = re.fullmatch(r"([A-Za-z_]\w*)(\[[^\]]+\]|\.\w+)", receiver)
        if match is None:
            continue
        if compact is None:
            compact = "".join(ctx.exact_code(loop.node).split())
        if re.search(re.escape(receiver) + r"=(?!=)", compact):
            continue
        found[match.group(1)] = receiver
    return found


def _backward_receivers(ctx: FileContext, entries) -> set[str]:
    """What the backward calls among ``entries`` differentiate, as written (`loss`, `out["loss"]`)."""
    return {ctx.shape(e.receiver) for e in entries
            if isinstance(e, CallInfo) and e.receiver is not None and classify(ctx, e) == BACKWARD}


def _assigned(loop_node, name: str, statement, after: bool = False) -> bool:
    """``name`` is plainly assigned in the loop body before ``statement`` (``after``: after it), in
    source order. Before: `loss = a; loss += b` builds one step's loss, `total = torch.zeros(1);
    total.add_(loss)` a fresh tensor. After: `total += loss; ...; total = 0` resets a running sum."""
    seen = False
    for small in _small_statements(loop_node):
        if small is statement or (isinstance(small, cst.Expr) and small.value is statement):
            if not after:
                return False
            seen = True
        elif seen == after and isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
            return True
    return False


def _freed_and_reset(ctx: FileContext, loop: Body, mark: Mark, added) -> bool:
    """`total += loss` in a loop that also calls `loss.backward()` (or `total.backward()`) and resets
    `total = 0` after the sum (every log interval, every accumulation round): backward frees what the
    graphs saved, and the reset bounds how many of them the sum holds."""
    if not isinstance(mark.node.target, cst.Name) or not isinstance(added, cst.Name):
        return False
    name = mark.node.target.value
    if not any(isinstance(entry, CallInfo) and isinstance(entry.receiver, cst.Name) and
               entry.receiver.value in (added.value, name) and classify(ctx, entry) == BACKWARD
               for entry in loop.entries):
        return False
    return _assigned(loop.node, name, mark.node, after=True)


def _small_statements(node):
    """The simple statements below a compound statement, in source order (no visitor: cheap)."""
    for field in ("body", "handlers", "orelse", "finalbody"):
        child = getattr(node, field, None)
        if child is None:
            continue
        for item in child if isinstance(child, (list, tuple)) else [child]:
            if isinstance(item, cst.SimpleStatementLine):
                yield from item.body
            elif isinstance(item, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                for inner in item.body:
                    if isinstance(inner, cst.SimpleStatementLine):
                        yield from inner.body
                    elif isinstance(inner, cst.BaseSmallStatement):
                        yield inner
                    else:
                        yield from _small_statements(inner)
            elif isinstance(item, cst.CSTNode):
                yield from _small_statements(item)


def _cuts_graph(ctx: FileContext, node) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Call):
            call = ctx.call(item)
            if call is not None and call.name in CUTS_GRAPH:
                return True
            stack.extend(arg.value for arg in item.args)
            if isinstance(item.func, cst.Attribute):
                stack.append(item.func.value)
        elif isinstance(item, cst.BinaryOperation):
            stack.extend((item.left, item.right))
    return False


def _differentiated_later(ctx: FileContext, loop: Body, collection) -> bool:
    """The losses a loop collects are backpropagated from the collection after the loop (`loss =
    losses[i]`, `for loss in losses`, `sum(losses)`, then `.backward()`): their graphs are kept for
    that backward."""
    if not isinstance(collection, (cst.Name, cst.Attribute)):
        return False
    scope = next((f.node for f in ctx.functions if isinstance(f.node, cst.FunctionDef)
                  and f.node.name.value == loop.scope.function), None) if loop.scope.function else ctx.module
    if scope is None:
        return False
    inside = {id(node) for node in nodes_of(loop.node, (cst.Call, cst.Assign, cst.For))}
    after, seen = [], False
    for node in nodes_of(scope, (cst.Call, cst.Assign, cst.For)):
        seen = seen or node is loop.node
        if seen and id(node) not in inside and node is not loop.node:
            after.append(node)
    derived = {ctx.shape(collection)}
    # names bound from it: `loss = losses[i]`, `for loss in losses`, `total = sum(losses)`
    bindings = [(t.target, n.value) for n in after if isinstance(n, cst.Assign) for t in n.targets] + \
        [(n.target, n.iter) for n in after if isinstance(n, cst.For)]
    for _round in range(3):
        grown = {target.value for target, value in bindings
                 if isinstance(target, cst.Name) and _shapes(ctx, value) & derived}
        if grown <= derived:
            break
        derived |= grown
    for call in after:
        if not isinstance(call, cst.Call) or called_name(call) not in ("backward", "grad"):
            continue
        differentiated = [arg.value for arg in call.args] + \
            ([call.func.value] if isinstance(call.func, cst.Attribute) else [])
        if any(_shapes(ctx, node) & derived for node in differentiated):
            return True
    return False


def _shapes(ctx: FileContext, node) -> set[str]:
    return {ctx.shape(n) for n in nodes_of(node, (cst.Name, cst.Attribute))}


def _on_self(node) -> bool:
    """`self.outputs`: a list the object keeps from one call to the next."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
