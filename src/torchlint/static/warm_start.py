"""Warm start for the language server: a document's next check begins from the call-site facts its
last check settled on, instead of from none.

A check walks the file, learns what the file's calls pass each function's parameters
(``callsites``) and walks again until that stops changing. An edit rarely changes what is learned,
so starting from the last check's facts usually settles after one walk instead of two. A fact is
carried over only when it still means the same: its function is still in the tree (unchanged
top-level statements keep their objects from one check to the next, see ``parsing.StatementCache``)
and nothing it refers to (the expression that made it, a function body, a class) lies in a statement
the edit replaced. Whatever is dropped is learned again by the walk, which then walks once more, as
a check without a warm start would.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts.values import Value
from torchlint.static.traverse import held, statements_of

MAX_REPLACED = 8  # more top-level statements replaced than this (a paste, a reformat): start cold
_REFERENCE_DEPTH = 6  # how deep a fact's nested values (items, returns, class attributes) are read


class Settled:
    """What the last check of a document settled on: facts by function node id, and the top-level
    statements they were computed on (kept, so the ids of every node in them stay theirs)."""

    __slots__ = ("facts", "fp16", "quiet", "statements")

    def __init__(self, statements: list, facts: dict, quiet: frozenset[int], fp16: frozenset[int]) -> None:
        self.statements = statements
        self.facts = facts
        self.quiet = quiet
        self.fp16 = fp16


def settled(module: cst.Module, facts: dict, quiet: frozenset[int], fp16: frozenset[int]) -> Settled:
    return Settled(list(module.body), facts, quiet, fp16)


def start(module: cst.Module, last: Settled | None) -> tuple[dict, frozenset[int], frozenset[int]] | None:
    """The facts a walk of ``module`` may start from: the last check's, less what the edit made
    stale; None when there is nothing to carry over (start cold)."""
    if last is None:
        return None
    current = {id(statement) for statement in module.body}
    replaced = [s for s in last.statements if id(s) not in current]
    if len(replaced) > MAX_REPLACED:
        return None
    live = _functions(module)
    facts: dict = {}
    references: dict[tuple[int, str], set[int]] = {}
    for key, params in last.facts.items():
        if key not in live:
            continue
        for name, value in params.items():
            references[(key, name)] = _references(value)
    stale: set[int] = set()
    wanted = set().union(*references.values()) if references else set()
    for statement in replaced if wanted else ():
        stale |= held(statement, wanted)
    for (key, name), refs in references.items():
        if refs & stale:
            continue
        facts.setdefault(key, {})[name] = last.facts[key][name]
    quiet = frozenset(k for k in last.quiet if k in live)
    fp16 = frozenset(k for k in last.fp16 if k in live)
    return facts, quiet, fp16


def _functions(module: cst.Module) -> set[int]:
    """The ids of every function definition in the tree (nested ones too)."""
    return {id(node) for node in statements_of(module, (cst.FunctionDef,))}


def _references(value: Value) -> set[int]:
    """The ids of the syntax nodes a fact refers to: where its values were made, the function bodies
    and classes it carries."""
    found: set[int] = set()
    seen: set[int] = set()
    stack: list = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or id(item) in seen or depth > _REFERENCE_DEPTH:
            continue
        seen.add(id(item))
        if isinstance(item, Value):
            if item.node is not None:
                found.add(id(item.node))
            if item.body is not None and getattr(item.body, "node", None) is not None:
                found.add(id(item.body.node))
            if item.rng is not None:
                found.add(id(item.rng.node))
            stack.extend((inner, depth + 1) for inner in (item.of, item.returns, *item.items))
            stack.extend((alt, depth + 1) for _cls, alt in item.alts)
            stack.extend((cls, depth + 1) for cls, _alt in item.alts)
            if item.cls is not None:
                stack.append((item.cls, depth + 1))
        elif hasattr(item, "methods"):  # a ClassInfo: its methods, attributes and project bases
            stack.extend((method, depth + 1) for method in item.methods.values())
            stack.extend((attr, depth + 1) for attr in item.attrs.values())
            stack.extend((parent, depth + 1) for parent in item.parents)
    return found
