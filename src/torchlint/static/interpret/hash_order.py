"""Evidence that a program's results depend on string hashing: it iterates over a set.

PYTHONHASHSEED only changes the order in which a set of strings is iterated (dicts keep insertion
order): `vocab = {w: i for i, w in enumerate(set(words))}` numbers the words differently in each
run. A program that never iterates a set does not depend on it. Sets of literal numbers and
`set(range(...))` iterate in a fixed order and are not evidence.
"""

from __future__ import annotations

import libcst as cst

_SET_CALLS = frozenset({"set", "frozenset"})
# calls that iterate their argument in its own order (sorted() does not: it fixes the order)
_ORDERED_CONSUMERS = frozenset({"list", "tuple", "enumerate", "iter", "next", "zip", "join"})


def _makes_set(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Set, cst.SetComp)):
        return not (isinstance(node, cst.Set) and all(
            isinstance(e.value, (cst.Integer, cst.Float)) for e in node.elements))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _SET_CALLS:
        argument = node.args[0].value if node.args else None
        return not (isinstance(argument, cst.Call) and isinstance(argument.func, cst.Name)
                    and argument.func.value == "range")
    return False


class _Finder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.sets: set[str] = set()  # names bound to a set anywhere in the module
        self.found: cst.CSTNode | None = None
        self.iterated: list[tuple[cst.BaseExpression, cst.CSTNode]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if _makes_set(node.value):
            self.sets.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and _makes_set(node.value) and isinstance(node.target, cst.Name):
            self.sets.add(node.target.value)

    def visit_For(self, node: cst.For) -> None:
        self.iterated.append((node.iter, node))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.iterated.append((node.iter, node))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if name in _ORDERED_CONSUMERS:
            self.iterated.extend((arg.value, node) for arg in node.args)


def set_iteration(module: cst.Module) -> cst.CSTNode | None:
    """The first place the module iterates over a set (a `for`, a comprehension, `list(s)`,
    `enumerate(s)`, `", ".join(s)`), or None."""
    finder = _Finder()
    module.visit(finder)
    for iterable, node in finder.iterated:
        if _makes_set(iterable) or (isinstance(iterable, cst.Name) and iterable.value in finder.sets):
            return node
    return None
