"""Apply the findings' fixes to source text: safe ones by default, unsafe ones on request."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

from torchlint.config import Settings
from torchlint.finding import Edit, Finding
from torchlint.static.engine import check_text

MAX_PASSES = 6
_NEWLINE = re.compile(r"\r\n|\r|\n")  # line ends as Python counts them


@dataclass
class FixResult:
    source: str
    fixed: int  # findings whose fix was applied
    remaining: list[Finding]


def applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and (
        finding.fix.applicability == "safe" or unsafe)


def choose(findings: list[Finding], unsafe: bool) -> list[Finding]:
    """The findings whose fixes one pass applies: in order, none overlapping an earlier one."""
    chosen: list[Finding] = []
    taken: list[tuple[tuple[int, int, int], tuple[int, int, int]]] = []
    for finding in findings:
        if not applicable(finding, unsafe):
            continue
        cell = finding.cell or 0  # a notebook's edits are within their cell
        spans = [((cell, e.line, e.column), (cell, e.end_line, e.end_column)) for e in finding.fix.edits]
        if any(start < other_end and other_start < end for start, end in spans for other_start, other_end in taken):
            continue  # overlaps an edit of this pass: the next pass re-checks it
        taken.extend(spans)
        chosen.append(finding)
    return chosen


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Replace (line, column) ranges, last first; the caller ensures they do not overlap."""
    starts = [0, *(match.end() for match in _NEWLINE.finditer(source)), len(source)]

    def offset(line: int, column: int) -> int:
        return min(starts[min(line - 1, len(starts) - 1)] + column - 1, len(source))

    pieces = sorted(((offset(e.line, e.column), offset(e.end_line, e.end_column), e.content) for e in edits),
                    reverse=True)
    for start, end, content in pieces:
        source = source[:start] + content + source[end:]
    return source


def fix_source(source: str, path: str, settings: Settings, unsafe: bool = False) -> FixResult:
    """Apply fixes until none applies; each pass takes the non-overlapping ones in file order."""
    enabled, options = settings.enabled(), settings.options
    fixed = 0
    for _ in range(MAX_PASSES):
        findings = check_text(source, path, enabled, options)
        chosen = choose(findings, unsafe)
        if not chosen:
            return FixResult(source, fixed, findings)
        candidate = apply_edits(source, [e for f in chosen for e in f.fix.edits])
        try:
            ast.parse(candidate)
        except SyntaxError:  # never write code that does not parse
            return FixResult(source, fixed, findings)
        source = candidate
        fixed += len(chosen)
    findings = check_text(source, path, enabled, options)
    return FixResult(source, fixed, findings)


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))
