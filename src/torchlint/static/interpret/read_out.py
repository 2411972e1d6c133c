"""Whether a value is only ever read out as numbers: `epe = dist.sqrt()` then `epe.mean().item()`,
`(epe < 1).float().mean().item()`. Such a value is a metric; nothing differentiates it.

Decided on the syntax of the function that names the value: every later use of the name is inside
a call that turns a tensor into plain numbers (`.item()`, `.tolist()`, `.numpy()`), inside a
comparison (a mask, which has no gradient), or a rebinding of the name to a view or selection of
itself (`epe = epe.view(-1)[valid]`). Any other use (returned, passed on, added to a loss) counts
as differentiable.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.parsing import statement_memo
from torchlint.static.statement_parts import parts
from torchlint.static.traverse import nodes_of, statements_in

NUMBERS = frozenset({"item", "tolist", "numpy"})  # methods that turn a tensor into plain numbers


def only_read_out(module: cst.Module, node: cst.CSTNode, memo: dict | None = None) -> bool:
    """``node`` is the whole value of `name = node` in a function, and every use of `name` there
    reads it out as numbers or compares it. ``memo``: where the file's index of such assignments is
    kept between questions (a file's ``ctx.memo``)."""
    index = memo.get(_INDEX) if memo is not None else None
    if index is None:
        index = {}
        for part in parts(module, statement_memo(module, _INDEX), _assignments_in_functions):
            for key, found in part.items():
                index.setdefault(key, found)
        if memo is not None:
            memo[_INDEX] = index
    found = index.get(id(node))
    return found is not None and _uses_ok(*found)


_INDEX = "read_out.assignments"


def _assignments_in_functions(statement: cst.CSTNode) -> dict[int, tuple[cst.CSTNode, str]]:
    """id of the value of each `name = value` in a function of the statement -> (the body of the
    first function, in file order, that holds it, name)."""
    index: dict[int, tuple[cst.CSTNode, str]] = {}
    for function in statements_in((statement,), (cst.FunctionDef,)):
        for assign in nodes_of(function.body, (cst.Assign,)):
            if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
                index.setdefault(id(assign.value), (function.body, assign.targets[0].target.value))
    return index


def _uses_ok(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Name):
        return node.value != name
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
            and node.targets[0].target.value == name:
        # `epe = epe.view(-1)[valid]`: the same values, checked at their uses; another value: its uses
        return _base(node.value) == name and _uses_ok_below(node.value, name) or _uses_ok(node.value, name)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in NUMBERS:
        return True
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.Attribute):
        return _uses_ok(node.value, name)  # `x.epe` names an attribute, not the variable
    if isinstance(node, cst.Arg):
        return _uses_ok(node.value, name)  # `f(epe=...)`: the keyword is not the variable
    return all(_uses_ok(child, name) for child in node.children)


def _base(node: cst.CSTNode) -> str | None:
    """The variable a chain of attribute accesses, method calls and subscripts starts from."""
    while True:
        if isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        else:
            return node.value if isinstance(node, cst.Name) else None


def _uses_ok_below(node: cst.CSTNode, name: str) -> bool:
    """The arguments and indices of a chain on `name` (`epe.view(-1)[valid.view(-1)]`) use it no other way."""
    while True:
        if isinstance(node, cst.Call):
            if not all(_uses_ok(arg, name) for arg in node.args):
                return False
            node = node.func
        elif isinstance(node, cst.Subscript):
            if not all(_uses_ok(element, name) for element in node.slice):
                return False
            node = node.value
        elif isinstance(node, cst.Attribute):
            node = node.value
        else:
            return True
