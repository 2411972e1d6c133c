"""TL206 loss-term-without-gradient: a term of the loss whose autograd history was cut on the way."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts import ops
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.training import BACKWARD, classify
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import children

GRADS = "TL206 autograd.grad"  # memo key: the file calls torch.autograd.grad
MAX_DEPTH = 4  # helper functions (and sums through names) followed from a loss to where a term's history was cut


class LossTermWithoutGradient(Rule):
    info = RuleInfo(
        "TL206", "loss-term-without-gradient", "error",
        "A term of the loss built from `.data`, `.detach()`, `.item()` or NumPy values of the model's "
        "tensors: it adds to the loss's value but nothing to its gradient, so it trains nothing.",
        tags=("autograd", "training-loop"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.qual == "torch.autograd.grad":
            ctx.memo[GRADS] = True
        if classify(ctx, call) == BACKWARD:
            loss = _loss_of(ctx, call)
            if loss is not None:
                function = ctx.enclosing[-1] if ctx.enclosing else None
                ctx.memo.setdefault(self.info.code, []).append((call, loss, function))

    def on_end(self, ctx: FileContext) -> None:
        done: set[int] = set()
        scopes: dict[int, dict] = {}
        for backward, loss, function in ctx.memo.get(self.info.code, ()):
            scope = function if function is not None else ctx.module
            defs = scopes.get(id(scope))
            if defs is None:
                defs = scopes[id(scope)] = _assignments(scope)
            # only an `autograd.grad` call can free the graph: no search in a file without one
            freeing = _find(ctx, loss, defs, 0, set(), _frees_graph, _no_gradient) if ctx.memo.get(GRADS) else None
            if freeing is not None and id(freeing) not in done:
                done.add(id(freeing))
                ctx.report(
                    self.info, freeing,
                    f"`{ctx.code(freeing, 50)}` frees the graph it differentiates (no `create_graph=True`, no "
                    f"`retain_graph=True`), and its result is part of the loss that `{ctx.code(backward.node, 40)}` "
                    "then backpropagates through that graph: backward fails (\"Trying to backward through the "
                    "graph a second time\"), and the gradient computed here would carry no gradient itself. "
                    "Pass `create_graph=True` (derivatives in a loss: PINN residuals, gradient penalties)",
                    related=((backward.node, "the backward"),),
                )
                continue
            weighted: set[int] = set()
            terms = _terms(ctx, loss, defs, 0, weighted)
            if len(terms) < 2:
                continue  # a loss that is one cut term fails loudly in backward() ("does not require grad")
            if all(ctx.value(term).tracked is False for term in terms):
                continue  # nothing in it has a gradient: backward() fails loudly
            for term in terms:
                if ctx.value(term).tracked is not False or id(term) in done:
                    continue
                cut = term if _detached_weighted(ctx, term, weighted) else _cut_in(ctx, term, defs, 0, set())
                if cut is None or id(cut) in done:
                    continue
                done.update((id(term), id(cut)))
                how = "computes gradients without `create_graph=True`, so they have no autograd history" \
                    if isinstance(cut, cst.Call) and ctx.call(cut) is not None and \
                    ctx.call(cut).qual == "torch.autograd.grad" else "detaches a term that the loss weights with a " \
                    "setting (a term meant to train)" if cut is term else "cuts the autograd history of a tensor that has one"
                ctx.report(
                    self.info, cut,
                    f"`{ctx.code(cut, 50)}` {how}, and the loss "
                    f"term `{ctx.code(term, 40)}` built from it reaches `{ctx.code(backward.node, 40)}` as a "
                    "constant: it changes the loss's value but adds nothing to the gradient, so what it was "
                    "meant to train is not trained. Compute it with torch ops on the tensor itself (no "
                    "`.data`, `.detach()`, `.item()`, `.numpy()` or `torch.tensor(...)` on the way; "
                    "`create_graph=True` for gradients)",
                    related=((term, "the loss term without gradient"), (backward.node, "the backward")),
                )


def _loss_of(ctx: FileContext, call: CallInfo):
    """The expression being backpropagated: `loss` in `loss.backward()`, `scaler.scale(loss)
    .backward()`, `accelerator.backward(loss)`, `torch.autograd.backward(loss)`."""
    if call.form == "function" or (call.form == "method" and call.args and call.name == "backward"
                                   and ctx.value(call.receiver).kind is not None):
        return call.args[0] if call.args else None
    node = call.receiver
    inner = ctx.call(node) if isinstance(node, cst.Call) else None
    if inner is not None and inner.name == "scale" and inner.args:
        node = inner.args[0]
    return node


def _terms(ctx: FileContext, node, defs: dict, depth: int, weighted: set[int] | None = None) -> list:
    """The summands of a loss expression, through names assigned a sum and constant weights (the
    ids of weighted ones go to ``weighted``)."""
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Add, cst.Subtract)):
            return _terms(ctx, node.left, defs, depth, weighted) + _terms(ctx, node.right, defs, depth, weighted)
        for term, weight in ((node.left, node.right), (node.right, node.left)):
            if (isinstance(node.operator, cst.Multiply) or (term is node.left and isinstance(node.operator, cst.Divide))) \
                    and _weight(weight, ctx.value(weight)):
                found = _terms(ctx, term, defs, depth, weighted)
                if weighted is not None and ctx.value(weight).op != "const":
                    weighted.update(id(item) for item in found)
                return found
        return [node]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _terms(ctx, node.expression, defs, depth, weighted)
    if isinstance(node, cst.Name) and depth < MAX_DEPTH:
        sources = defs.get(node.value, ())
        if len(sources) == 1 and isinstance(sources[0], cst.BinaryOperation):
            return _terms(ctx, sources[0], defs, depth + 1, weighted)
    return [node]


def _detached_weighted(ctx: FileContext, term, weighted: set[int]) -> bool:
    """`criterion(a, b).detach() * opt.beta`: a term the code weights with a setting and detaches
    itself, right there: it was meant to train (its weight is tuned) and cannot."""
    call = ctx.call(term) if isinstance(term, cst.Call) else None
    return id(term) in weighted and call is not None and call.form == "method" and call.name == "detach" \
        and isinstance(call.receiver, cst.Call) and ctx.value(call.receiver).tracked is None


def _weight(node, value) -> bool:
    """A plain number scaling a term: a literal, a constant, or a name or attribute holding one."""
    if value.op == "const":
        return True
    return isinstance(node, (cst.Name, cst.Attribute)) and value.tracked is not True and value.op is None \
        and value.kind is None


def _cut_in(ctx: FileContext, node, defs: dict, depth: int, seen: set[int]):
    """The `.data` / `.detach()` / `.item()` / `.numpy()` / `.tolist()` of a tensor with autograd history,
    or the `torch.autograd.grad(...)` without `create_graph=True`, that an untracked expression is
    computed from, through the names and helper functions it uses."""
    return _find(ctx, node, defs, depth, seen, _cuts)


def _cuts(ctx: FileContext, item) -> bool:
    if isinstance(item, cst.Attribute):
        return item.attr.value == "data" and _has_history(ctx, item.value)
    call = ctx.call(item) if isinstance(item, cst.Call) else None
    if call is None:
        return False
    if call.form == "method" and call.name in ops.DETACHING_METHODS:
        return _has_history(ctx, call.receiver)
    return call.qual == "torch.autograd.grad" and not _true(call.kwargs.get("create_graph"))


def _frees_graph(ctx: FileContext, item) -> bool:
    """`torch.autograd.grad(...)` that neither keeps its graph for a later backward nor builds one."""
    call = ctx.call(item) if isinstance(item, cst.Call) else None
    return call is not None and call.qual == "torch.autograd.grad" and not call.scope.no_grad and \
        "create_graph" not in call.kwargs and "retain_graph" not in call.kwargs


# results no gradient flows back through: comparisons, indices, signs, integer casts
_NO_GRADIENT = frozenset({"lt", "gt", "le", "ge", "eq", "ne", "argmax", "argmin", "argsort", "sign", "bool",
                          "long", "int"})


def _no_gradient(ctx: FileContext, item) -> bool:
    """A value no gradient flows back through: a comparison, a mask (`g.lt(t)`), an integer."""
    if isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute) and item.func.attr.value in _NO_GRADIENT:
        return True
    return isinstance(item, cst.Comparison) or (
        isinstance(item, (cst.Call, cst.Name)) and ctx.value(item).op in ops.INTEGRAL_OPS)



def _true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _find(ctx: FileContext, node, defs: dict, depth: int, seen: set[int], match, stop=None):
    """The first node ``match`` accepts in what an expression is computed from: its own nodes, the
    assignments to the names it uses, the returns of the file's functions it calls (not through
    the nodes ``stop`` accepts)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if match(ctx, item):
            return item
        if stop is not None and stop(ctx, item):
            continue
        if isinstance(item, cst.Call):
            call = ctx.call(item)
            body = getattr(call.callee, "body", None) if call is not None else None
            function = getattr(body, "node", None)
            if isinstance(function, cst.FunctionDef) and depth < MAX_DEPTH:
                inner = _assignments(function)
                for returned in _returns(function):
                    found = _find(ctx, returned, inner, depth + 1, seen, match, stop)
                    if found is not None:
                        return found
        if isinstance(item, cst.Name):  # each assignment is visited once (seen): no depth needed
            stack.extend(defs.get(item.value, ()))
            continue
        if isinstance(item, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        stack.extend(children(item))
    return None


def _has_history(ctx: FileContext, node) -> bool:
    value = ctx.value(node)
    return value.tracked is True and value.kind in (None, "param")


def _assignments(scope) -> dict[str, list]:
    """Name -> the right-hand sides assigned to it in a function (or module), not in nested ones."""
    found: dict[str, list] = {}
    body = scope.body  # the module's statements, or a function's block (`def f(): ...` on one line too)
    stack = list(body if isinstance(body, (list, tuple)) else body.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(item, cst.Assign):
            for target in item.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(item.value)
            continue
        if isinstance(item, (cst.BaseSmallStatement, cst.BaseExpression)):
            continue  # statements only: assignments are not nested in expressions
        stack.extend(children(item))
    return found


def _returns(function: cst.FunctionDef) -> list:
    found, stack = [], [function.body]
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(item, cst.Return) and item.value is not None:
            found.append(item.value)
            continue
        stack.extend(children(item))
    return found
