"""Lint and fix a notebook: one program for the analysis, findings and edits mapped to cells."""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchlint.catalog import SYNTAX_ERROR, UNREADABLE_FILE
from torchlint.config import Settings
from torchlint.finding import Edit, Finding
from torchlint.fix import MAX_PASSES, FixResult, apply_edits, choose, fix_source, unified_diff
from torchlint.static.cell_repair import cell_python
from torchlint.static.engine import check_text, might_have_findings
from torchlint.static.notebook import (
    Notebook,
    NotebookError,
    Program,
    build_program,
    is_notebook,
    parse_notebook,
    replace_sources,
)


def check_any(source: str, path: str, enabled: frozenset[str], options: dict[str, dict[str, Any]] | None = None,
              file: Path | None = None, deps: dict[str, str] | None = None) -> list[Finding]:
    """A notebook (by the name's suffix) or a Python file."""
    if is_notebook(path):
        return check_notebook(source, path, enabled, options, file, deps)
    return check_text(source, path, enabled, options, file=file, deps=deps)


def check_notebook(text: str, path: str, enabled: frozenset[str], options=None, file=None, deps=None) -> list[Finding]:
    try:
        notebook = parse_notebook(text)
    except NotebookError as error:
        if UNREADABLE_FILE.code not in enabled:
            return []
        return [Finding(code=UNREADABLE_FILE.code, name=UNREADABLE_FILE.name, severity=UNREADABLE_FILE.severity,
                        message=str(error), path=path, line=error.line, column=error.column,
                        end_line=error.line, end_column=error.column, help=UNREADABLE_FILE.summary)]
    return analyse(notebook, path, enabled, options, file, deps)


def analyse(notebook: Notebook, path: str, enabled: frozenset[str], options=None, file=None,
            deps=None) -> list[Finding]:
    """The findings of a parsed notebook, in cell coordinates, with their raw .ipynb spans."""
    program = build_program(notebook.cells)
    if not might_have_findings(program.source):
        return []
    broken: dict[int, Finding] = {}  # cell number -> its syntax error
    for index, cell in enumerate(program.cells):
        if program.errors[index] is not None:
            broken[cell.number] = replace(_syntax_finding(program.errors[index], path), cell=cell.number)
    with_syntax = enabled | {SYNTAX_ERROR.code}  # to know which cell to set aside, even when TL001 is off
    while True:
        if broken:
            program = build_program(notebook.cells, frozenset(broken))
        findings = check_text(program.source, path, with_syntax, options, file=file, deps=deps)
        syntax = next((f for f in findings if f.code == SYNTAX_ERROR.code), None)
        if syntax is None:
            break
        index, line = program.cell_of(syntax.line)  # the parser rejects what CPython accepts
        number = program.cells[index].number
        if number in broken:
            break
        indent = program.indents[index]
        broken[number] = replace(syntax, cell=number, line=line, end_line=line, column=syntax.column + indent,
                                 end_column=syntax.end_column + indent)
    results = [_to_cell(f, program) for f in findings if f.code != SYNTAX_ERROR.code]
    if SYNTAX_ERROR.code in enabled:
        results.extend(broken.values())
    results = [_with_raw_span(f, notebook) for f in results]
    results.sort(key=lambda f: f.sort_key)
    return results


def _syntax_finding(error: tuple[str, int, int], path: str) -> Finding:
    message, line, column = error
    return Finding(code=SYNTAX_ERROR.code, name=SYNTAX_ERROR.name, severity=SYNTAX_ERROR.severity,
                   message=f"syntax error: {message}", path=path, line=line, column=column,
                   end_line=line, end_column=column, help=SYNTAX_ERROR.summary)


def _to_cell(finding: Finding, program: Program) -> Finding:
    index, line = program.cell_of(finding.line)
    shift = program.starts[index] - 1
    fix = finding.fix
    if fix is not None:
        edits = tuple(Edit(e.line - shift, e.column, e.end_line - shift, e.end_column, e.content) for e in fix.edits)
        touched = {n for e in edits for n in range(e.line, e.end_line + 1)}
        # an edit on a line the magics rewrote would write the rewrite back: not offered
        fix = None if touched & program.changed[index] else replace(fix, edits=edits)
    indent = program.indents[index]  # the columns IPython strips: back where the cell has them
    return replace(finding, cell=program.cells[index].number, line=line, end_line=finding.end_line - shift, fix=fix,
                   column=finding.column + indent, end_column=finding.end_column + indent,
                   related=())  # positions of the joined program, not of a cell


def _with_raw_span(finding: Finding, notebook: Notebook) -> Finding:
    try:
        start = notebook.raw_position(finding.cell, finding.line, finding.column)
        end = notebook.raw_position(finding.cell, finding.end_line, finding.end_column)
    except (KeyError, StopIteration, ValueError, IndexError):  # a notebook the scanner cannot follow
        return finding
    return replace(finding, notebook_span=(*start, *end))


def fix_notebook(text: str, path: str, settings: Settings, unsafe: bool = False) -> FixResult:
    """Apply fixes pass by pass, each to the cells it touches; the rest of the file is kept as is."""
    enabled, options = settings.enabled(), settings.options
    try:
        notebook = parse_notebook(text)
    except NotebookError:
        return FixResult(text, 0, check_notebook(text, path, enabled, options))
    fixed = 0
    findings = analyse(notebook, path, enabled, options)
    for _ in range(MAX_PASSES):
        chosen = choose(findings, unsafe)
        if not chosen:
            break
        sources = {cell.number: cell.source for cell in notebook.cells}
        edits: dict[int, list[Edit]] = {}
        for finding in chosen:
            edits.setdefault(finding.cell, []).extend(finding.fix.edits)
        changed = {}
        for number, cell_edits in edits.items():
            after = apply_edits(sources[number], cell_edits)
            if cell_python(after).error and not cell_python(sources[number]).error:
                return FixResult(notebook.text, fixed, findings)  # never write a cell that does not parse
            changed[number] = after
        notebook = parse_notebook(replace_sources(notebook, changed))
        fixed += len(chosen)
        findings = analyse(notebook, path, enabled, options)
    return FixResult(notebook.text, fixed, findings)


def notebook_diff(path: str, before: str, after: str) -> str:
    """A unified diff per changed cell, named `path:cell N`."""
    old = {cell.number: cell.source for cell in parse_notebook(before).cells}
    out = []
    for cell in parse_notebook(after).cells:
        previous = old.get(cell.number, "")
        if previous != cell.source:
            out.extend(difflib.unified_diff(previous.splitlines(keepends=True), cell.source.splitlines(keepends=True),
                                            fromfile=f"a/{path}:cell {cell.number}",
                                            tofile=f"b/{path}:cell {cell.number}"))
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n"
    return "".join(out)


def fix_any(source: str, path: str, settings: Settings, unsafe: bool = False) -> FixResult:
    """fix_source, or fix_notebook for a path ending in .ipynb."""
    if is_notebook(path):
        return fix_notebook(source, path, settings, unsafe)
    return fix_source(source, path, settings, unsafe)


def diff_any(path: str, before: str, after: str) -> str:
    return notebook_diff(path, before, after) if is_notebook(path) else unified_diff(path, before, after)
