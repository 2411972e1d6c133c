"""IPython syntax in a notebook cell made into plain Python, line for line and column for column.

`%matplotlib inline`, `!pip install x`, `?obj` and `obj??` become `pass`; `x = !ls` keeps the target
(`x = _ipython_`); `%time stmt` keeps the statement in place behind a `0;` (`0;    stmt`), so what it
runs is analysed. A `%%time`/`%%timeit`/`%%capture`/`%%prun` cell is analysed without its first line;
any other cell magic (`%%bash`, `%%writefile`, ...) makes the whole cell non-Python. Lines inside
brackets, strings or backslash continuations are never rewritten.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "memit", "debug"})
STATEMENT_MAGICS = frozenset({"time", "timeit", "prun", "memit"})
PLACEHOLDER = "_ipython_"

_MAYBE = re.compile(r"^[ \t]*[%!?]|\?[ \t]*$|=[ \t]*[%!]", re.M)
_MAGIC = re.compile(r"(?P<indent>[ \t]*)(?P<sigil>%%|%|!!|!|\?\??)(?P<rest>.*)")
_ASSIGN = re.compile(r"(?P<target>[ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*)[%!]")
_NAME = re.compile(r"\w+")


@dataclass
class Neutralised:
    text: str
    changed: set[int] = field(default_factory=set)  # 1-based lines that differ from the cell's
    python: bool = True  # False: a cell magic whose body is not Python (`%%bash`)
    indent: int = 0  # columns removed from the start of every line (see cell_repair)
    error: tuple[str, int, int] | None = None  # (message, line, column): it does not compile (see cell_repair)


def neutralise(source: str) -> Neutralised:
    """The cell as Python with the same number of lines; unchanged when it has no IPython syntax."""
    if not _MAYBE.search(source):
        return Neutralised(source)
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        match = _NAME.match(lines[first].lstrip()[2:])
        if match is None or match.group() not in PYTHON_CELL_MAGICS:
            return Neutralised("\n".join("" for _ in lines), set(range(1, len(lines) + 1)), python=False)
        lines[first] = ""
        changed = {first + 1}
    else:
        changed = set()
    scanner = _Scanner()
    continued_magic = False
    for index, line in enumerate(lines):
        if continued_magic:  # the tail of a backslash-continued magic line
            continued_magic = line.rstrip().endswith("\\")
            lines[index] = ""
            changed.add(index + 1)
            continue
        if scanner.at_statement_start:
            replacement = _rewrite(line, scanner)
            if replacement is not None:
                continued_magic = line.rstrip().endswith("\\")
                lines[index] = replacement
                changed.add(index + 1)
                continue
        scanner.feed(line)
    return Neutralised("\n".join(lines), changed)


def _rewrite(line: str, scanner: _Scanner) -> str | None:
    """Python for one IPython line at the start of a statement; None for a Python line."""
    assign = _ASSIGN.match(line)
    if assign is not None and line[assign.end() - 1:].lstrip()[:1] in "%!":
        rest = line[assign.end() - 1:]
        if rest.startswith("%") and not rest.startswith("%%"):
            statement = _statement_magic(rest, expression=True)
            if statement is not None:
                return assign.group("target") + statement
        return assign.group("target") + PLACEHOLDER
    code = scanner.code_of(line).rstrip()
    match = _MAGIC.fullmatch(line)
    if match is None:
        return "pass" if code.endswith("?") and code.strip() else None  # `obj?`, `obj??`
    indent, sigil, rest = match.group("indent", "sigil", "rest")
    if sigil == "%":
        statement = _statement_magic(sigil + rest, expression=False)
        if statement is not None:
            return indent + statement
    return indent + "pass"


def _statement_magic(text: str, expression: bool) -> str | None:
    """`%time stmt` as `0;    stmt` (or `      expr` after `x =`), keeping columns; None if not one."""
    match = re.match(r"%(\w+)([ \t]+)(?P<body>[^-\s].*)", text)
    if match is None or match.group(1) not in STATEMENT_MAGICS:
        return None
    body = match.group("body")
    width = match.start("body")
    candidate = (" " * width if expression else "0;" + " " * (width - 2)) + body
    try:
        ast.parse("x = " + body if expression else candidate)
    except SyntaxError:
        return None
    return candidate


class _Scanner:
    """Enough of Python's tokenizer to know whether a line starts a new statement."""

    def __init__(self) -> None:
        self.depth = 0  # open brackets
        self.quote: str | None = None  # an open triple-quoted string
        self.backslash = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def code_of(self, line: str) -> str:
        """The line without its comment (strings taken into account)."""
        index, quote = 0, None
        while index < len(line):
            char = line[index]
            if quote is None:
                if char == "#":
                    return line[:index]
                if char in "'\"":
                    quote = char
            elif char == "\\":
                index += 1
            elif char == quote:
                quote = None
            index += 1
        return line

    def feed(self, line: str) -> None:
        index, length = 0, len(line)
        self.backslash = False
        while index < length:
            if self.quote is not None:
                end = line.find(self.quote, index)
                slash = line.find("\\", index)
                if slash != -1 and (end == -1 or slash < end):
                    index = slash + 2
                    continue
                if end == -1:
                    if len(self.quote) == 1:  # an unterminated short string ends with its line
                        self.quote = None
                    return
                index = end + len(self.quote)
                self.quote = None
                continue
            char = line[index]
            if char == "#":
                return
            if char in "'\"":
                self.quote = line[index:index + 3] if line[index:index + 3] in ('"""', "'''") else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and index == length - 1:
                self.backslash = True
            index += 1
