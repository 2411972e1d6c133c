"""Backward passes taken for an input's gradient (an adversarial attack, Langevin sampling): the
function that runs one reads the `.grad` of a tensor it made require grad. Such a backward also
leaves gradients in the model's parameters, which a later optimizer step applies unless cleared."""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.training import Action
from torchlint.static.traverse import nodes_of


def input_gradient(ctx: FileContext, action: Action) -> bool:
    """The backward's function reads the `.grad` of a tensor it made require grad (`x.requires_grad_()`,
    `delta = torch.zeros(..., requires_grad=True)`): it is there for that input's gradient."""
    if action.call is None:
        return False
    function = _function_of(ctx, action)
    if function is None:
        return False
    marked: set[str] = set()
    read: set[str] = set()
    looped: set[str] = set()  # `for p in model.parameters(): p.requires_grad_()`: parameters, not inputs
    for node in nodes_of(function, (cst.Call, cst.Attribute, cst.Assign, cst.For)):
        if isinstance(node, cst.For):
            looped.update(name.value for name in nodes_of(node.target, (cst.Name,)))
        elif isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(node.value, cst.Name):
            read.add(node.value.value)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value == "requires_grad_" and isinstance(node.func.value, cst.Name):
            marked.add(node.func.value.value)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if isinstance(node.value, cst.Call) and any(
                    arg.keyword is not None and arg.keyword.value == "requires_grad" and
                    isinstance(arg.value, cst.Name) and arg.value.value == "True" for arg in node.value.args):
                marked.add(name)
    return bool((marked & read) - looped)


def _function_of(ctx: FileContext, action: Action) -> cst.FunctionDef | None:
    """The function whose body (its loops included, not the calls it makes) holds the action's call."""
    for body in ctx.functions:
        if isinstance(body.node, cst.FunctionDef) and any(entry is action.call for entry in body.walk(expand=False)):
            return body.node
    return None
