"""Whether a tensor written in place in a script's (or notebook's) own code reaches a later backward.

An in-place write to a tensor an op saved for its backward fails only in a backward that runs
through that op, after the write. In a function the written tensor goes back to callers the file
may not show; in a script's top-level code the rest of the program is the statements after the
write. Reading them in order, a name computed from the written tensor carries it, a name assigned
anything else no longer does, and a backward whose loss names a carrier reaches it
(`dlogits = F.softmax(logits, 1); dlogits /= n` in a lesson that only compares `dlogits` with
`logits.grad` reaches none).
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.traverse import nodes_of, simple_statements, target_names


def later_backward_reaches(ctx: FileContext, write: cst.CSTNode, target: cst.BaseExpression) -> bool:
    """False only for a write in the module's own code whose tensor no later backward reaches."""
    if ctx.scope_of(write).function is not None or ctx.enclosing:
        return True
    root = target
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    if not isinstance(root, cst.Name):
        return True
    statements = simple_statements(list(ctx.module.body))
    start = next((i for i, small in enumerate(statements) if any(n is write for n in nodes_of(small, (type(write),)))),
                 None)
    if start is None:
        return True
    carriers = {root.value}
    for small in statements[start + 1:]:
        for call in nodes_of(small, (cst.Call,)):
            if _differentiates(call) and _names(call) & carriers:
                return True
        if isinstance(small, cst.Assign):
            bound = {name.value for t in small.targets for name in target_names(t.target)}
            if _names(small.value) & carriers:
                carriers |= bound
            else:
                carriers -= bound
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                _names(small.value) & carriers:
            carriers.add(small.target.value)
    return False


def _differentiates(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ("backward", "grad")


def _names(node: cst.CSTNode) -> set[str]:
    return {name.value for name in nodes_of(node, (cst.Name,))}
