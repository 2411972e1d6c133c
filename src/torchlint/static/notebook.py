"""Jupyter notebooks (nbformat 4) as one program, and back.

The code cells, in order and with IPython syntax neutralised (see magics.py), are joined into one
source; a line of it maps to (cell, line in cell), where cells are numbered from 1 counting every
cell of the notebook, markdown included. The raw JSON is scanned for where each cell's `source`
strings lie, so a position in a cell maps to a line and column of the .ipynb file, and a cell's
`source` can be replaced without touching a byte elsewhere. Only the stdlib json module is used.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from json.decoder import scanstring

from torchlint.static.cell_repair import cell_python

SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


class NotebookError(ValueError):
    """Not a notebook torchlint can read; line and column in the raw file."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line, self.column = line, column


@dataclass
class Cell:
    number: int  # 1-based, among all the notebook's cells
    source: str


@dataclass
class Notebook:
    text: str  # the raw JSON
    cells: list[Cell]  # the code cells
    _layout: dict[int, _SourceLayout] | None = None
    _line_starts: list[int] | None = None

    def layout(self, number: int) -> _SourceLayout:
        if self._layout is None:
            self._layout = {layout.number: layout for layout in _scan_sources(self.text)}
        return self._layout[number]

    def raw_position(self, number: int, line: int, column: int) -> tuple[int, int]:
        """(line, column) in the .ipynb text of a 1-based (line, column) in a cell's source."""
        cell = next(c for c in self.cells if c.number == number)
        offset = _offset(cell.source, line, column)
        raw = self.layout(number).raw_offset(offset)
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        row = bisect_right(self._line_starts, raw)
        return row, raw - self._line_starts[row - 1] + 1


def parse_notebook(text: str) -> Notebook:
    """The code cells of an nbformat 4 notebook; NotebookError for anything else."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a notebook: invalid JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None
    if isinstance(data, dict) and data.get("nbformat", 4) != 4:
        raise NotebookError(f"unsupported notebook format: nbformat {data.get('nbformat')} (4 is read)")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: no `cells` list at the top level")
    cells = []
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"not a notebook: cell {number} has a `source` that is not text")
        cells.append(Cell(number, source))
    return Notebook(text, cells)


@dataclass
class Program:
    """The code cells joined: ``source`` and, per cell, its first line in it."""

    source: str
    cells: list[Cell]
    starts: list[int]  # 1-based line of ``source`` where each cell begins
    changed: list[set[int]]  # per cell: lines the magics (or a repair) rewrote
    python: list[bool]  # per cell: False for a non-Python cell magic (`%%bash`)
    indents: list[int]  # per cell: columns IPython strips from every line (cell_repair)
    errors: list[tuple[str, int, int] | None]  # per cell: its syntax error, as the cell reads

    def cell_of(self, line: int) -> tuple[int, int]:
        """(index into ``cells``, 1-based line in that cell) of a line of ``source``."""
        index = max(0, bisect_right(self.starts, line) - 1)
        return index, line - self.starts[index] + 1


def build_program(cells: list[Cell], blank: frozenset[int] = frozenset()) -> Program:
    """Join the cells; a cell whose number is in ``blank`` keeps its lines but no code."""
    pieces, starts, changed, python, indents, errors = [], [], [], [], [], []
    line = 1
    for cell in cells:
        result = cell_python(cell.source)
        text = result.text
        count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if cell.number in blank:
            text = "\n" * count
        elif count and not text.endswith("\n"):
            text += "\n"
        starts.append(line)
        pieces.append(text)
        changed.append(result.changed)
        python.append(result.python)
        indents.append(result.indent)
        errors.append(result.error)
        line += count
    return Program("".join(pieces), cells, starts, changed, python, indents, errors)


def _offset(text: str, line: int, column: int) -> int:
    """The string index of a 1-based (line, column) of ``text``, clamped to its end."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found == -1:
            return len(text)
        start = found + 1
    return min(start + column - 1, len(text))


# --- where the sources lie in the raw JSON ------------------------------------------------------

_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
_STRUCTURE = re.compile(r'["\[\]{}]')


@dataclass
class _SourceLayout:
    number: int
    start: int  # raw offsets of the whole `source` value
    end: int
    pieces: list[tuple[int, str]] = field(default_factory=list)  # each JSON string: offset, raw token
    is_list: bool = True

    def raw_offset(self, offset: int) -> int:
        """The raw offset of the character at ``offset`` of the decoded source."""
        for start, token in self.pieces:
            decoded = 0
            index = 1  # after the opening quote
            while index < len(token) - 1:
                if decoded == offset:
                    return start + index
                if token[index] == "\\":
                    step = 2
                    if token[index + 1] == "u":
                        step = 6
                        high = int(token[index + 2:index + 6], 16)
                        if 0xD800 <= high < 0xDC00 and token[index + 6:index + 8] == "\\u":
                            step = 12
                    index += step
                else:
                    index += 1
                decoded += 1
            offset -= decoded
            if offset == 0 and (start, token) == self.pieces[-1]:
                return start + len(token) - 1  # the end of the last line
        return self.start


def _skip(text: str, index: int) -> int:
    """The end of the JSON value starting at ``index`` (the text is known to be valid JSON)."""
    char = text[index]
    if char == '"':
        return scanstring(text, index + 1)[1]
    if char not in "[{":
        return _SCALAR.match(text, index).end()
    depth = 0
    while True:
        match = _STRUCTURE.search(text, index)
        index = match.end()
        if match.group() == '"':
            index = scanstring(text, index)[1]
        elif match.group() in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return index


def _members(text: str, index: int):
    """(key, value start, value end) of the object at ``index``."""
    index = _SPACE.match(text, index + 1).end()
    while text[index] != "}":
        key, index = scanstring(text, index + 1)
        index = _SPACE.match(text, index).end() + 1  # the colon
        start = _SPACE.match(text, index).end()
        end = _skip(text, start)
        yield key, start, end
        index = _SPACE.match(text, end).end()
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()


def _elements(text: str, index: int):
    """(start, end) of each element of the array at ``index``."""
    index = _SPACE.match(text, index + 1).end()
    while text[index] != "]":
        end = _skip(text, index)
        yield index, end
        index = _SPACE.match(text, end).end()
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()


def _scan_sources(text: str) -> list[_SourceLayout]:
    root = _SPACE.match(text).end()
    layouts = []
    for key, start, _ in _members(text, root):
        if key != "cells":
            continue
        for number, (cell_start, _cell_end) in enumerate(_elements(text, start), start=1):
            if text[cell_start] != "{":
                continue
            for name, value, value_end in _members(text, cell_start):
                if name != "source":
                    continue
                layout = _SourceLayout(number, value, value_end, is_list=text[value] == "[")
                spans = list(_elements(text, value)) if layout.is_list else [(value, value_end)]
                layout.pieces = [(a, text[a:b]) for a, b in spans]
                layouts.append(layout)
    return layouts


def replace_sources(notebook: Notebook, sources: dict[int, str]) -> str:
    """The raw text with the `source` of the cells numbered in ``sources`` replaced; all else kept."""
    text = notebook.text
    layouts = sorted((notebook.layout(number) for number in sources), key=lambda layout: -layout.start)
    for layout in layouts:
        text = text[:layout.start] + _serialise(notebook.text, layout, sources[layout.number]) + text[layout.end:]
    return text


def _serialise(raw: str, layout: _SourceLayout, source: str) -> str:
    """The new `source` value in the style of the old one (list or string, indentation, escapes)."""
    kept = {json.loads(token): token for _, token in layout.pieces}
    if not layout.is_list:
        return kept.get(source) or json.dumps(source, ensure_ascii=False)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    tokens = [kept.get(line) or json.dumps(line, ensure_ascii=False) for line in lines]
    if layout.pieces:
        first_start, first = layout.pieces[0]
        last_start, last = layout.pieces[-1]
        opening = raw[layout.start + 1:first_start]
        closing = raw[last_start + len(last):layout.end - 1]
        if len(layout.pieces) > 1:
            second_start = layout.pieces[1][0]
            separator = raw[first_start + len(first):second_start]
        else:
            separator = "," + opening
    else:  # `[]` before: indent one step past the line that holds it
        line_start = raw.rfind("\n", 0, layout.start) + 1
        indent = re.match(r"[ \t]*", raw[line_start:]).group()
        step = re.match(r"\{\s*?\n([ \t]*)", raw)
        unit = step.group(1) if step else " "
        opening, closing = "\n" + indent + unit, "\n" + indent
        separator = "," + opening
    return "[" + opening + separator.join(tokens) + closing + "]"
