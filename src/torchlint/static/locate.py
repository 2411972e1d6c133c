"""Source positions for just the nodes that were reported.

LibCST's PositionProvider records a range for every node of the module and
costs more than the parse; findings are rare, so instead one code-generation
pass notes the token index where each *reported* node starts and ends, and
token indexes are turned into line/column at the end. When the first line of each top-level
statement is known (a big file parsed in pieces), only the statements that hold a reported node
are written out, each from its own first line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState

from torchlint.static.traverse import held

_NEWLINE = re.compile(r"\r\n|\r|\n")
Span = tuple[int, int, int, int]  # line, column, end_line, end_column (1-based, end exclusive)


class _Locator(CodegenState):
    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.marks: dict[int, tuple[int, int]] = {}
        self.syntactic: set[int] = set()
        self.starts: list[int] = []

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self.starts.append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets:
            start = self.starts.pop()
            if key not in self.syntactic:
                self.marks[key] = (start, len(self.tokens))

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> Iterator[None]:
        key = id(node)
        if key not in self.targets:
            yield
            return
        start = len(self.tokens)
        yield
        self.syntactic.add(key)
        self.marks[key] = (start, len(self.tokens))


class Kept:
    """Positions found in earlier checks of one document (the language server's), whose unchanged
    statements are the same objects from one edit to the next: per statement object, the positions
    of nodes in it; per reported node, the statement holding it."""

    def __init__(self) -> None:
        self.spans: dict[int, tuple] = {}  # id(statement) -> (statement, layout, {id(node): span})
        self.owners: dict[int, tuple] = {}  # id(node) -> (node, statement)
        self.statements: dict[int, cst.CSTNode] = {}  # the statements of the last text located


def locate(module: cst.Module, nodes: Iterable[cst.CSTNode], lines: list[int] | None = None,
           kept: Kept | None = None) -> dict[int, Span]:
    """The span of each of ``nodes`` (by id). ``lines``: the first line of each top-level statement
    (after its leading comment lines), when known. ``kept``: what earlier calls found for this
    document: a statement seen before is not written out again, and a node reported before is
    not searched for again."""
    nodes = list(nodes)
    targets = {id(node) for node in nodes}
    if lines is None or len(lines) != len(module.body):
        return _spans(module, module, targets, 1)
    if kept is not None:
        return _located_with(module, nodes, lines, kept)
    spans: dict[int, Span] = {}
    left = set(targets)
    for statement, line in zip(module.body, lines, strict=True):
        if not left:
            break
        found = held(statement, left)
        if found:
            left -= found
            spans.update(_spans(module, statement, found, line - len(statement.leading_lines)))
    if left:  # a node outside the statements' own parts (layout, the module's header): the whole module
        spans.update(_spans(module, module, left, 1))
    return spans


def _located_with(module: cst.Module, nodes: list[cst.CSTNode], lines: list[int], kept: Kept) -> dict[int, Span]:
    firsts = {id(s): line - len(s.leading_lines) for s, line in zip(module.body, lines, strict=True)}
    current = {id(s): s for s in module.body}
    groups: dict[int, set[int]] = {}
    left: dict[int, cst.CSTNode] = {}
    for node in nodes:
        entry = kept.owners.get(id(node))
        if entry is not None and entry[0] is node and current.get(id(entry[1])) is entry[1]:
            groups.setdefault(id(entry[1]), set()).add(id(node))
        else:
            left[id(node)] = node
    if left:  # nodes not reported before: in the statements new to this text first, then in all
        new = [s for s in module.body if kept.statements.get(id(s)) is not s]
        for statement in new + [s for s in module.body if kept.statements.get(id(s)) is s]:
            found = held(statement, left.keys())
            for key in found:
                kept.owners[key] = (left.pop(key), statement)
                groups.setdefault(id(statement), set()).add(key)
            if not left:
                break
    spans: dict[int, Span] = {}
    for key, found in groups.items():
        spans.update(_kept_spans(module, current[key], found, firsts[key], kept.spans))
    if left:  # a node outside the statements' own parts (layout, the module's header): the whole module
        spans.update(_spans(module, module, set(left), 1))
    # only this text's statements, and the nodes in them, stay
    for key in [key for key in kept.spans if key not in current]:
        del kept.spans[key]
    for key in [key for key, (_, statement) in kept.owners.items() if current.get(id(statement)) is not statement]:
        del kept.owners[key]
    kept.statements = current
    return spans


def _kept_spans(module: cst.Module, statement: cst.CSTNode, found: set[int], first: int,
                kept: dict) -> dict[int, Span]:
    """``_spans`` of ``found`` in ``statement``, from ``kept`` where known: positions relative to the
    statement's first line do not change while the statement object (and the module's layout
    defaults its code is written with) stays the same."""
    layout = (module.default_indent, module.default_newline)
    entry = kept.get(id(statement))
    if entry is None or entry[0] is not statement or entry[1] != layout:
        entry = kept[id(statement)] = (statement, layout, {})
    known = entry[2]
    missing = found - known.keys()
    if missing:
        known.update(_spans(module, statement, missing, 1))
    shift = first - 1
    return {key: (line + shift, column, end_line + shift, end_column)
            for key, (line, column, end_line, end_column) in ((key, known[key]) for key in found)}


def _spans(module: cst.Module, root: cst.CSTNode, targets: set[int], first_line: int) -> dict[int, Span]:
    """Spans of ``targets`` under ``root``, whose text starts at column 1 of ``first_line``."""
    state = _Locator(module, targets)
    root._codegen(state)
    offsets = [0, *accumulate(len(token) for token in state.tokens)]
    code = "".join(state.tokens)
    line_starts = [0, *(match.end() for match in _NEWLINE.finditer(code))]  # lines as Python counts them
    shift = first_line - 1

    def position(token_index: int, is_end: bool) -> tuple[int, int]:
        # a file without a final newline: the module drops the newline token it wrote after the last mark
        offset = offsets[min(token_index, len(offsets) - 1)]
        if is_end:
            # Skip back over trailing whitespace/newlines that belong to the node's tokens.
            while offset > 0 and code[offset - 1] in " \t\r\n":
                offset -= 1
        else:
            while offset < len(code) and code[offset] in " \t\r\n":
                offset += 1
        line = bisect_right(line_starts, offset)
        return line + shift, offset - line_starts[line - 1] + 1

    spans: dict[int, Span] = {}
    for key, (start, end) in state.marks.items():
        line, column = position(start, False)
        end_line, end_column = position(end, True)
        spans[key] = (line, column, end_line, end_column)
    return spans
