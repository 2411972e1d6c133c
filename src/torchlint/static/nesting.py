"""A cheap guard for input that would crash LibCST's native parser (a segfault, not an exception).

LibCST recurses on the C stack: about 2,000 nested brackets or 7,000 chained operators kill the
process, and deep nesting parses in quadratic time. CPython rejects such input cleanly (more than
200 nested brackets; an expression too deep to build), so a file that *might* be that deep is
first compiled by CPython, and a file CPython rejects is a syntax error without LibCST ever seeing it.
"""

from __future__ import annotations

import ast
import re
import warnings

MAX_DEPTH = 100  # brackets open at once (CPython's own limit is 200)
MAX_CHAIN = 1000  # operator characters in one line at bracket depth 0, or inside one bracket
_KEPT = re.compile(r"[^()\[\]{}\n+\-*/%&|^@<>~]+")
_LONE_BACKSLASH = re.compile(r"^[ \t\f]*\\\r?\n", re.M)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


def might_be_too_deep(source: str) -> bool:
    """An over-estimate (brackets and operators in strings and comments count too). Also true for a
    line that is only a backslash continuation, or a U+FEFF in the text: LibCST accepts those where
    CPython may not."""
    if _LONE_BACKSLASH.search(source) or "\ufeff" in source:  # LibCST also accepts a stray BOM (a second one)
        return True
    depth = chain = 0
    for char in _KEPT.sub("", source):
        if char in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
        elif char == "\n":
            if depth == 0:
                chain = 0
        else:
            chain += 1
            if chain > MAX_CHAIN:
                return True
    return False


def cpython_rejects(source: str, path: str) -> SyntaxError | None:
    """CPython's reason for refusing the source, as a SyntaxError with its position; None if it parses."""
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: not ours to print
            warnings.simplefilter("ignore")
            compile(source, path, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as error:
        return error
    except (RecursionError, MemoryError, ValueError) as error:
        return SyntaxError(f"too deeply nested for the parser ({type(error).__name__})")
    return None
