"""TL204 needless-retain-graph: retain_graph=True with no later backward in that scope."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.scopes import Body
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, GRAD, classify
from torchlint.static.traverse import held, nodes_of, target_names


class NeedlessRetainGraph(Rule):
    info = RuleInfo(
        "TL204", "needless-retain-graph", "warning",
        "backward(retain_graph=True) with no later backward through the graph keeps it alive for nothing.",
        tags=("autograd", "memory"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for body in [ctx.module_body, *ctx.functions]:
            if body is None:
                continue
            calls = [e for e in body.walk(expand=False) if classify(ctx, e) in (BACKWARD, GRAD)]
            for index, call in enumerate(calls):
                # In a loop the graph is rebuilt every iteration; a function called once per graph may
                # legitimately retain it for its caller, so only loops are judged.
                if _retains(call) and index == len(calls) - 1 and call.scope.loop_depth > 0 \
                        and not _graph_outlives_iteration(ctx, body, call):
                    ctx.report(
                        self.info, call.node,
                        f"`{ctx.code(call.node)}`: retain_graph=True but no later backward or autograd.grad "
                        "in this scope uses the graph; it only keeps every saved activation alive. Drop it, "
                        "or find the stale reference that made 'backward through the graph a second time' fail",
                    )


def _retains(call: CallInfo) -> bool:
    """retain_graph=True where it changes something: with create_graph=True it is already the default,
    and the graph is kept for the higher-order backward that follows."""
    flag, create = call.kwargs.get("retain_graph"), call.kwargs.get("create_graph")
    return isinstance(flag, cst.Name) and flag.value == "True" and \
        not (isinstance(create, cst.Name) and create.value == "True")


def _graph_outlives_iteration(ctx: FileContext, body: Body, call: CallInfo) -> bool:
    """The loop around the call does not make a new graph each iteration, or drops it itself: the
    output differentiated (`out` of `grad(out[j], x)`) was made before the loop, so the next
    iteration differentiates the same graph again; or the loop `del`s it after the backward."""
    loop = _innermost_loop(body, call)
    differentiated = call.receiver if call.form == "method" else (call.args[0] if call.args else None)
    root = _root(differentiated)
    if loop is None or root is None:
        return False
    if any(root.value in {n.value for n in target_names(node.target)}
           for node in nodes_of(loop.node, (cst.Del,))):
        return True
    value = ctx.value(root)
    made = value.items[-1].node if value.kind == "list" and value.items else value.node
    return made is not None and not held(loop.node, {id(made)})


def _innermost_loop(body: Body, call: CallInfo) -> Body | None:
    for entry in body.entries:
        if isinstance(entry, Body):
            inner = _innermost_loop(entry, call)
            if inner is not None:
                return inner
            if any(e is call for e in entry.walk(expand=False)):
                return entry if entry.kind == "loop" else None
    return body if body.kind == "loop" and any(e is call for e in body.entries) else None


def _root(node) -> cst.Name | None:
    """`out` of `out[j]`, `[out[j]]`, `out.sum()`, `losses[-1]` (None: not a plain name)."""
    while True:
        if isinstance(node, (cst.List, cst.Tuple)) and node.elements:
            node = node.elements[0].value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        else:
            return node if isinstance(node, cst.Name) else None
