"""Findings as LSP diagnostics, ranges in the client's position encoding."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types

from torchlint.finding import Finding
from torchlint.rule import DOCS_URL
from torchlint.server.positions import lines_of, to_client

SOURCE = "torchlint"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}


def client_range(lines: list[str], span: tuple[int, int, int, int], encoding: str) -> types.Range:
    line, column, end_line, end_column = span
    start = to_client(lines, line, column, encoding)
    end = to_client(lines, end_line, end_column, encoding)
    if end < start:
        end = start
    return types.Range(types.Position(*start), types.Position(*end))


def to_diagnostics(findings: list[Finding], text: str, uri: str, encoding: str) -> list[types.Diagnostic]:
    lines = lines_of(text)
    return [_diagnostic(finding, lines, uri, encoding) for finding in findings]


def _diagnostic(finding: Finding, lines: list[str], uri: str, encoding: str) -> types.Diagnostic:
    span = (finding.line, finding.column, finding.end_line, finding.end_column)
    related = []
    for item in finding.related:
        here = item.path == finding.path
        target = uri if here else Path(os.path.abspath(item.path)).as_uri()
        where = to_client(lines, item.line, item.column, encoding) if here else (item.line - 1, item.column - 1)
        position = types.Position(*where)
        related.append(types.DiagnosticRelatedInformation(
            types.Location(target, types.Range(position, position)), item.message))
    return types.Diagnostic(
        range=client_range(lines, span, encoding),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=DOCS_URL.format(code=finding.code)),
        source=SOURCE,
        related_information=related or None,
        data={"fixable": finding.fix is not None and bool(finding.fix.edits)},
    )
