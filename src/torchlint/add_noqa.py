"""`--add-noqa`: mark every current finding with `# noqa: CODE` so a project can adopt torchlint
and fix its findings over time. The comment goes on the finding's first line, or where Python
lets a comment stand for it (see static/comment_lines.py); an existing `# noqa: ...` gets the new
codes appended. Only comments change: the code's tokens are compared before a file is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.catalog import SYNTAX_ERROR, UNREADABLE_FILE
from torchlint.config import ConfigError
from torchlint.finding import FileResult, Finding
from torchlint.source import SourceError, encode_source, read_source
from torchlint.static.cell_repair import cell_python
from torchlint.static.comment_lines import comment_lines
from torchlint.static.notebook import NotebookError, is_notebook, parse_notebook, replace_sources
from torchlint.static.suppress import noqa_in_comment

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_END = re.compile(r"(\r\n|\r|\n)?$")
_NOT_SUPPRESSIBLE = {SYNTAX_ERROR.code: "a syntax error", UNREADABLE_FILE.code: "an unreadable file"}


@dataclass
class NoqaReport:
    lines: int = 0  # lines that got a comment or more codes in one
    files: int = 0
    skipped: list[str] = field(default_factory=list)  # "where: CODE: why", for findings left unmarked


def add_noqa(results: list[FileResult]) -> NoqaReport:
    report = NoqaReport()
    for result in results:
        findings = []
        for finding in result.findings:
            if finding.code in _NOT_SUPPRESSIBLE:
                report.skipped.append(f"{_where(finding)}: {finding.code}: {_NOT_SUPPRESSIBLE[finding.code]} "
                                      "cannot be suppressed with noqa")
            else:
                findings.append(finding)
        if findings:
            _add_to_file(Path(result.path), findings, report)
    return report


def _where(finding: Finding, line: int | None = None) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.path}:{cell}{line or finding.line}"


def _add_to_file(path: Path, findings: list[Finding], report: NoqaReport) -> None:
    try:
        original = read_source(path)
    except (OSError, SourceError) as error:
        report.skipped.extend(f"{_where(f)}: {f.code}: cannot read the file ({error})" for f in findings)
        return
    before = original.text
    if is_notebook(str(path)):
        after, marked = _add_to_notebook(before, findings, report)
    else:
        after, marked = _mark(before, findings, lambda text: text, set(), report)
    if marked == 0 or after == before:
        return
    try:
        path.write_bytes(encode_source(after, original.encoding))
    except OSError as error:
        raise ConfigError(f"cannot write {path}: {error.strerror}") from None
    report.lines += marked
    report.files += 1


def _add_to_notebook(text: str, findings: list[Finding], report: NoqaReport) -> tuple[str, int]:
    try:
        notebook = parse_notebook(text)
    except NotebookError as error:
        report.skipped.extend(f"{_where(f)}: {f.code}: {error}" for f in findings)
        return text, 0
    sources = {cell.number: cell.source for cell in notebook.cells}
    changed, marked = {}, 0
    for number, source in sources.items():
        in_cell = [f for f in findings if f.cell == number]
        if not in_cell:
            continue
        new, count = _mark(source, in_cell, lambda cell: cell_python(cell).text, cell_python(source).changed, report)
        if count:
            changed[number], marked = new, marked + count
    return (replace_sources(notebook, changed), marked) if changed else (text, 0)


def _mark(text: str, findings: list[Finding], as_python: Callable[[str], str], magic: set[int],
          report: NoqaReport) -> tuple[str, int]:
    """``text`` with the comments added and the number of lines changed; ``as_python`` turns it into
    the code Python reads (a notebook cell: its IPython syntax neutralised), whose lines ``magic``
    rewrote."""
    layout = comment_lines(as_python(text))
    if layout is None:
        report.skipped.extend(f"{_where(f)}: {f.code}: Python's tokenizer rejects this code" for f in findings)
        return text, 0
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        slot = layout.slot(finding.line)
        if finding.line in magic or slot in magic:
            report.skipped.append(f"{_where(finding)}: {finding.code}: a line with IPython syntax takes no comment")
            continue
        wanted.setdefault(slot, set()).add(finding.code)
    lines = _LINES.findall(text)
    marked = 0
    for line, codes in sorted(wanted.items()):
        if line > len(lines):
            continue
        content, ending = _split_end(lines[line - 1])
        updated = _with_codes(content, layout.comments.get(line), codes)
        if updated != content:
            lines[line - 1] = updated + ending
            marked += 1
    after = "".join(lines)
    check = comment_lines(as_python(after))
    if check is None or check.tokens != layout.tokens:  # never change what the code does
        report.skipped.extend(f"{_where(f)}: {f.code}: a comment here would change the code" for f in findings)
        return text, 0
    return after, marked


def _split_end(line: str) -> tuple[str, str]:
    ending = _END.search(line).group(1) or ""
    return line[:len(line) - len(ending)], ending


def _with_codes(content: str, comment: tuple[int, str] | None, codes: set[str]) -> str:
    """The line with ``codes`` in its noqa comment: appended to one it has, else a new comment."""
    if comment is not None:
        column, text = comment
        directive = noqa_in_comment(text)
        if directive is not None:
            present, end = directive
            new = sorted(codes - set(present))
            if end < 0 or not new:  # a bare noqa covers every code already
                return content
            merged = text[:end] + ", " + ", ".join(new) + text[end:]
            return content[:column] + merged + content[column + len(text):]
    return f"{content.rstrip()}  # noqa: {', '.join(sorted(codes))}"
