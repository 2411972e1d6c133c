"""Columns from torchlint (1-based, in code points) to LSP (0-based, in the negotiated unit).

LSP counts UTF-16 code units unless client and server agreed on UTF-8 or UTF-32. Lines split at
\\n, \\r\\n and \\r, as both Python and LSP count them.
"""

from __future__ import annotations

from torchlint.source import source_lines

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def lines_of(text: str) -> list[str]:
    return source_lines(text)


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in the encoding's code units."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_client(lines: list[str], line: int, column: int, encoding: str) -> tuple[int, int]:
    """(line, character) for LSP of a 1-based torchlint (line, column); clamped to the text."""
    row = max(line - 1, 0)
    if row >= len(lines):
        return len(lines), 0
    text = lines[row]
    return row, units(text[:max(column - 1, 0)], encoding)
