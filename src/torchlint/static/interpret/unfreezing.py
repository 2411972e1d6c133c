"""Parameters unfrozen after the only optimizer was built from the trainable ones.

`torch.optim.Adam([p for p in model.parameters() if p.requires_grad])` (or `filter(lambda p:
p.requires_grad, ...)`) holds the parameters trainable at that moment. Setting `requires_grad = True`
on others later (gradual unfreezing) gives them gradients that no optimizer applies: they never
change. Found when the file builds an optimizer filtered by `requires_grad`, never calls
`add_param_group`, and sets `requires_grad = True` (or `requires_grad_()`) in a function that builds
no optimizer after it (and not before the filtered construction in the same function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.static.traverse import children, nodes_of

OPTIMIZER_PREFIXES = ("torch.optim.", "transformers.AdamW", "bitsandbytes.optim.", "apex.optimizers.")


@dataclass
class LateUnfreeze:
    unfreeze: cst.CSTNode  # the `p.requires_grad = True` statement or `requires_grad_()` call
    optimizer: cst.Call  # the construction that took the trainable parameters only


# cheap evidence, in the text, of both halves: a filtered construction and a later unfreezing
_FILTERS = re.compile(r"if\s+[\w.]+\.requires_grad\b|lambda[^:\n]*:\s*[\w.]+\.requires_grad\b")
_UNFREEZES = re.compile(r"\.requires_grad\s*=\s*True\b|\.requires_grad_\(")


def late_unfreezes(module: cst.Module, source: str, qualify) -> list[LateUnfreeze]:
    if not (_FILTERS.search(source) and _UNFREEZES.search(source)):
        return []
    constructions, unfreezes = [], []  # (enclosing function, node, position in source order)
    for function, node, position in _calls_and_assignments(module):
        if isinstance(node, cst.Call):
            if is_optimizer_construction(node, qualify):
                constructions.append((function, node, position))
            elif _add_param_group(node):
                return []
            elif _requires_grad_call(node):
                unfreezes.append((function, node, position))
        elif _sets_requires_grad(node):
            unfreezes.append((function, node, position))
    filtered = [entry for entry in constructions if _filtered(entry[1])]
    if not filtered:
        return []
    home, optimizer, built = filtered[0]
    found = []
    for function, node, position in unfreezes:
        if function is home and position < built:
            continue  # unfrozen first, then the optimizer takes them
        if any(where is function and position < at for where, _call, at in constructions):
            continue  # an optimizer built again after unfreezing, in the same function
        found.append(LateUnfreeze(node, optimizer))
    return found


def _calls_and_assignments(module: cst.Module):
    """(innermost enclosing function or None, node, position) for every call and assignment, in
    source order: one walk of the tree."""
    stack: list = [(child, None) for child in reversed(module.body)]
    position = 0
    while stack:
        node, function = stack.pop()
        if isinstance(node, (cst.Call, cst.Assign)):
            position += 1
            yield function, node, position
        inner = node if isinstance(node, cst.FunctionDef) else function
        stack.extend((child, inner) for child in reversed(children(node)))


def is_optimizer_construction(call: cst.Call, qualify) -> bool:
    """`torch.optim.AdamW(...)` (and the optimizers of transformers, bitsandbytes, apex), not a scheduler."""
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    qual = qualify(call.func) or ""
    return qual.startswith(OPTIMIZER_PREFIXES) and qual.rsplit(".", 1)[-1][:1].isupper() and \
        not qual.startswith("torch.optim.lr_scheduler") and ".swa_utils." not in qual


def _filtered(call: cst.Call) -> bool:
    """The parameters given are those with `requires_grad` set."""
    return bool(call.args) and any(isinstance(n, cst.Attribute) and n.attr.value == "requires_grad"
                                   for n in nodes_of(call.args[0].value, (cst.Attribute,)))


def _add_param_group(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_param_group"


def _requires_grad_call(call: cst.Call) -> bool:
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_"):
        return False
    return not call.args or (isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "True")


def _sets_requires_grad(node: cst.Assign) -> bool:
    return isinstance(node.value, cst.Name) and node.value.value == "True" and any(
        isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in node.targets)
