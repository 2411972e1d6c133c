"""The line a finding points at, as the user wrote it: from the file, a notebook's cell, or stdin."""

from __future__ import annotations

from pathlib import Path

from torchlint.finding import Finding
from torchlint.source import SourceError, read_source, source_lines
from torchlint.static.notebook import NotebookError, is_notebook, parse_notebook


class SourceLines:
    """Reads each file once; ``sources`` (path -> text) stands in for files, e.g. stdin."""

    def __init__(self, sources: dict[str, str] | None = None) -> None:
        self.sources = sources or {}
        self.lines: dict[tuple[str, int | None], list[str]] = {}

    def line(self, finding: Finding) -> str | None:
        lines = self.all_lines(finding)
        return lines[finding.line - 1] if 0 < finding.line <= len(lines) else None

    def all_lines(self, finding: Finding) -> list[str]:
        """The lines of the file, or of the notebook cell, the finding is in."""
        key = (finding.path, finding.cell)
        if key not in self.lines:
            self._load(finding.path)
        return self.lines.get(key, [])

    def _load(self, path: str) -> None:
        text = self.sources.get(path)
        if text is None:
            try:
                text = read_source(Path(path)).text
            except (OSError, SourceError):
                text = ""
        self.lines[(path, None)] = source_lines(text)
        if is_notebook(path):
            try:
                cells = parse_notebook(text).cells
            except NotebookError:
                cells = []
            for cell in cells:
                self.lines[(path, cell.number)] = cell.source.splitlines()


def location(finding: Finding) -> str:
    """`path:line:col` or, in a notebook, `path:cell N:line:col`."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.path}:{cell}{finding.line}:{finding.column}"


def cell_location(finding: Finding) -> str:
    """`cell N:line:col` for a notebook finding, "" for a file's."""
    return f"cell {finding.cell}:{finding.line}:{finding.column}" if finding.cell is not None else ""


def one_line(text: str) -> str:
    """A message for a line-oriented format: line breaks become spaces."""
    return " ".join(text.splitlines())
