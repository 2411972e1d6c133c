"""What a method does with its arguments across calls: which ones it adds to the object's state.

`AverageMeter.update(self, val)` doing `self.sum += val * n`, or `Logger.log(self, losses)` doing
`for v in losses: self.history.append(v)`, keeps every argument it is given alive as long as the
object lives. Asked of the method's recorded body (its own module's walk, so a meter defined in
`utils/meters.py` answers for a loop in `train.py`), and cached per body.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.scopes import Body, Mark
from torchlint.static.traverse import nodes_of, target_names

KEEPING_METHODS = frozenset({"append", "extend", "add", "insert"})


def kept_arguments(ctx: FileContext, body: Body) -> dict[int, cst.CSTNode]:
    """Argument position (after `self`) -> the statement that adds it to `self`'s state."""
    cache = ctx.memo.setdefault("kept_arguments", {})
    found = cache.get(id(body))
    if found is None:
        found = cache[id(body)] = _kept(ctx, body) if isinstance(body.node, cst.FunctionDef) else {}
    return found


def _kept(ctx: FileContext, body: Body) -> dict[int, cst.CSTNode]:
    params = [p.name.value for p in params_of(body.node.params)]
    if len(params) < 2 or params[0] != "self":
        return {}
    origin = {name: index - 1 for index, name in enumerate(params) if index}
    for name in _detached_rebinds(body.node):
        origin.pop(name, None)  # `v = v.data.sum()`: what is kept no longer carries the argument's graph
    found: dict[int, cst.CSTNode] = {}
    _scan(ctx, body, origin, found)
    return found


def _scan(ctx: FileContext, body: Body, origin: dict[str, int], found: dict[int, cst.CSTNode]) -> None:
    for entry in body.entries:
        if isinstance(entry, Body):
            inner = dict(origin)
            node = entry.node
            if isinstance(node, cst.For):
                source = _source(ctx, node.iter, origin)
                if source is not None:
                    for name in _names(node.target):
                        inner[name] = source
            _scan(ctx, entry, inner, found)
        elif isinstance(entry, Mark) and entry.kind == "accumulate":
            node = entry.node
            if isinstance(node.operator, cst.AddAssign) and on_self(node.target):
                source = _source(ctx, node.value, origin)
                if source is not None:
                    found.setdefault(source, node)
        elif isinstance(entry, CallInfo) and entry.form == "method" and entry.name in KEEPING_METHODS \
                and entry.receiver is not None and on_self(entry.receiver) and entry.args:
            source = _source(ctx, entry.args[-1], origin)
            if source is not None:
                found.setdefault(source, entry.node)


_DETACHING = frozenset({"detach", "item", "tolist", "numpy"})  # (not `cpu`: a copy that keeps the graph)


def _detached_rebinds(function: cst.FunctionDef) -> set[str]:
    """Names the function rebinds to a value cut from the graph (`v = v.data.sum()`, `v = v.item()`)."""
    found = set()
    for node in nodes_of(function.body, (cst.Assign,)):
        if _cuts(node.value):
            found.update(name for target in node.targets for name in _names(target.target))
    return found


# Tensor methods whose result keeps the receiver's autograd graph (`val.cpu()` is a copy with history)
_KEEPS_GRAPH = frozenset({"cpu", "cuda", "to", "float", "double", "half", "clone", "mean", "sum", "view", "reshape",
                          "squeeze", "unsqueeze", "flatten", "contiguous"})


def _source(ctx: FileContext, node: cst.BaseExpression, origin: dict[str, int]) -> int | None:
    """The argument an expression is made of: `val`, `val * n`, `vals[key]`, `enumerate(vals)`, `vals.items()`,
    `val.cpu()`, `allreduce(val)` (a function of the project that returns what it computes from it)."""
    if isinstance(node, cst.Name):
        return origin.get(node.value)
    if isinstance(node, cst.Subscript):  # `losses[key]`: an item of a dict or list argument
        return _source(ctx, node.value, origin)
    if isinstance(node, cst.BinaryOperation):
        left = _source(ctx, node.left, origin)
        return left if left is not None else _source(ctx, node.right, origin)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("enumerate", "zip", "list", "tuple", "reversed") \
                and node.args:
            return _source(ctx, node.args[0].value, origin)
        if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values"):
            return _source(ctx, func.value, origin)
        if isinstance(func, cst.Attribute) and func.attr.value in _KEEPS_GRAPH:
            return _source(ctx, func.value, origin)
        if isinstance(func, cst.Name) and node.args and _passes_graph(ctx, node):
            return _source(ctx, node.args[0].value, origin)
    return None


def _passes_graph(ctx: FileContext, node: cst.Call) -> bool:
    """A call of a function of the project that computes its result with gradients on and never
    cuts it from the graph (`def allreduce(t): return t / world_size`)."""
    call = ctx.call(node)
    body = getattr(getattr(call, "callee", None), "body", None)
    function = getattr(body, "node", None)
    if call is None or call.form != "local" or not isinstance(function, cst.FunctionDef) or body.scope.no_grad:
        return False
    returns = list(nodes_of(function.body, (cst.Return,)))
    return not _cuts(function.body) and bool(returns) and all(r.value is not None for r in returns)


def _cuts(node: cst.CSTNode) -> bool:
    """Code that takes something out of the graph: `.data`, `.detach()`, `.item()`, `.tolist()`, `.numpy()`."""
    return any(isinstance(part, cst.Attribute) and part.attr.value in ("data", *_DETACHING)
               for part in nodes_of(node, (cst.Attribute,)))


def on_self(node: cst.BaseExpression) -> bool:
    """`self.x`, `self.x[i]`, `self.x.y`: state that outlives the call."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
        if isinstance(node, cst.Name):
            return node.value == "self"
    return False


def _names(target: cst.BaseExpression) -> list[str]:
    return [name.value for name in target_names(target)]
