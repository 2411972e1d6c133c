"""An analysis's part of each top-level statement, kept from one check of a document to the next.

The language server parses a document through a statement cache: an unchanged top-level statement
is the same object after an edit (``parsing.StatementCache``). A purely syntactic analysis computed
per statement therefore needs to redo only the statements an edit replaced. Outside the server
(``memo`` None) every part is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import libcst as cst

Part = TypeVar("Part")


def parts(module: cst.Module, memo: dict | None, part: Callable[[cst.CSTNode], Part]) -> list[Part]:
    """``part(statement)`` for each top-level statement of ``module``, in order; those kept in
    ``memo`` (by statement object) are reused, and ``memo`` keeps only this module's statements."""
    found: list[Part] = []
    for statement in module.body:
        entry = memo.get(id(statement)) if memo is not None else None
        if entry is None or entry[0] is not statement:
            entry = (statement, part(statement))
            if memo is not None:
                memo[id(statement)] = entry
        found.append(entry[1])
    if memo is not None and len(memo) > len(module.body):
        current = {id(statement) for statement in module.body}
        for key in [key for key in memo if key not in current]:
            del memo[key]
    return found
