"""Evidence that a program's results depend on string hashing: it iterates over a set.

PYTHONHASHSEED only changes the order in which a set of strings is iterated (dicts keep insertion
order): `vocab = {w: i for i, w in enumerate(set(words))}` numbers the words differently in each
run. A program that never iterates a set does not depend on it. Sets of literal numbers and
`set(range(...))` iterate in a fixed order and are not evidence.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.statement_parts import parts
from torchlint.static.traverse import nodes_of

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


def set_iteration(module: cst.Module, memo: dict | None = None) -> cst.CSTNode | None:
    """The first place the module iterates over a set (a `for`, a comprehension, `list(s)`,
    `enumerate(s)`, `", ".join(s)`), or None. ``memo``: each top-level statement's part, kept by
    statement object from one check of a document to the next (the language server's)."""
    sets: set[str] = set()  # names bound to a set anywhere in the module
    iterated: list[tuple[cst.BaseExpression, cst.CSTNode]] = []
    for bound, iterates in parts(module, memo, _part):
        sets.update(bound)
        iterated.extend(iterates)
    for iterable, node in iterated:
        if _makes_set(iterable) or (isinstance(iterable, cst.Name) and iterable.value in sets):
            return node
    return None


def _part(statement: cst.CSTNode) -> tuple[set[str], list[tuple[cst.BaseExpression, cst.CSTNode]]]:
    """The names one top-level statement binds to a set, and what it iterates, in source order."""
    sets: set[str] = set()
    iterated: list[tuple[cst.BaseExpression, cst.CSTNode]] = []
    for node in nodes_of(statement, (cst.Assign, cst.AnnAssign, cst.For, cst.CompFor, cst.Call)):
        if isinstance(node, cst.Assign):
            if _makes_set(node.value):
                sets.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None and _makes_set(node.value) and isinstance(node.target, cst.Name):
                sets.add(node.target.value)
        elif isinstance(node, (cst.For, cst.CompFor)):
            iterated.append((node.iter, node))
        else:
            func = node.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
            if name in _ORDERED_CONSUMERS:
                iterated.extend((arg.value, node) for arg in node.args)
    return sets, iterated
