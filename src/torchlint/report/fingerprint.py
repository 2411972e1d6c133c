"""A finding's identity that survives edits elsewhere in the file: no line numbers.

The key of a finding is a hash of its rule code, the code it flags (the lines of its span, at most
``MAX_SPAN`` of them, whitespace removed so reformatting keeps the key) and its nearest enclosing
context (the closest line above with less indentation: the `def`, `for` or `with` header it sits
in), plus an occurrence index that tells apart identical findings in the same file. Lines added or
removed above a finding leave the key as it was; editing the flagged code or its header changes it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from torchlint.finding import Finding
from torchlint.report.source import SourceLines

MAX_SPAN = 20


@dataclass(frozen=True)
class CodeKey:
    digest: str  # 16 hex digits
    occurrence: int  # 1 for the first finding with this path, code and digest in file order


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _context(lines: list[str], line: int) -> str:
    """The closest non-blank, non-comment line above ``line`` that is indented less."""
    if not 0 < line <= len(lines):
        return ""
    depth = _indent(lines[line - 1])
    for index in range(line - 2, -1, -1):
        text = lines[index]
        stripped = text.strip()
        if stripped and not stripped.startswith("#") and _indent(text) < depth:
            return _squeeze(text)
    return ""


def _digest(finding: Finding, lines: list[str]) -> str:
    last = min(max(finding.end_line, finding.line), finding.line + MAX_SPAN - 1, len(lines))
    flagged = _squeeze("".join(lines[finding.line - 1:last]))
    data = "\0".join((finding.code, flagged, _context(lines, finding.line)))
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def code_keys(findings: list[Finding], sources: dict[str, str] | None = None) -> list[CodeKey]:
    """One key per finding, in the order given; occurrences count in file order."""
    lines = SourceLines(sources)
    digests = [_digest(f, lines.all_lines(f)) for f in findings]
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key)
    seen: Counter[tuple[str, str, str]] = Counter()
    keys: list[CodeKey | None] = [None] * len(findings)
    for index in order:
        finding = findings[index]
        seen[(finding.path, finding.code, digests[index])] += 1
        keys[index] = CodeKey(digests[index], seen[(finding.path, finding.code, digests[index])])
    return keys  # type: ignore[return-value]
