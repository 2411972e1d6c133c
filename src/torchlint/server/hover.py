"""Hover on a diagnostic: its message and the rule's documentation (as `torchlint rule` prints it)."""

from __future__ import annotations

from lsprotocol import types

from torchlint.catalog import rule_text
from torchlint.finding import Finding
from torchlint.server.diagnostics import client_range
from torchlint.server.positions import lines_of


def hover(text: str, findings: list[Finding], position: types.Position, encoding: str) -> types.Hover | None:
    lines = lines_of(text)
    hits = []
    for finding in findings:
        span = client_range(lines, (finding.line, finding.column, finding.end_line, finding.end_column), encoding)
        here = (position.line, position.character)
        if (span.start.line, span.start.character) <= here <= (span.end.line, span.end.character):
            hits.append((finding, span))
    if not hits:
        return None
    parts, shown = [], set()
    for finding, _ in hits:
        parts.append(f"**{finding.code}** ({finding.name}): {finding.message}")
        if finding.code not in shown:
            shown.add(finding.code)
            try:
                parts.append(rule_text(finding.code))
            except KeyError:
                parts.append(finding.help)
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, "\n\n---\n\n".join(parts)),
                       range=hits[0][1])
