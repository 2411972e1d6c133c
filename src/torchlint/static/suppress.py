"""`# noqa` and `# torchlint: file-ignore[...]` comments."""

from __future__ import annotations

import re

from torchlint.static.comment_lines import CommentLines, comment_lines

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_IGNORE = re.compile(r"#\s*torchlint:\s*file-ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]+")
# a triple-quoted f-string: an expression inside it can start on a line that ends inside the string
_TRIPLE_FSTRING = re.compile(r"(?i)(?:r?f|fr)(?:\"{3}|'{3})")


def file_ignores(source: str) -> set[str] | None:
    """Codes ignored for the whole file; {'ALL'} for a bare file-ignore; None when there is none."""
    if "file-ignore" not in source:
        return None
    codes: set[str] = set()
    for match in _FILE_IGNORE.finditer(source):
        listed = match.group("codes")
        if listed is None or not listed.strip():
            return {"ALL"}
        codes.update(_CODE.findall(listed.upper()))
    return codes or None


def line_suppresses(line_text: str, code: str) -> bool:
    """True when the physical line carries `# noqa` or `# noqa: <code>` naming this code."""
    if "noqa" not in line_text and "NOQA" not in line_text:
        return False
    for match in _NOQA.finditer(line_text):
        listed = match.group("codes")
        if listed is None:
            return True
        if code in _CODE.findall(listed.upper()):
            return True
    return False


def noqa_in_comment(comment: str) -> tuple[list[str], int] | None:
    """For a comment holding `# noqa: A1, B2`: its codes and the offset just after them, where more
    codes can be appended; ([], -1) for a bare `# noqa`; None when the comment has no noqa."""
    match = _NOQA.search(comment)
    if match is None:
        return None
    if match.group("codes") is None:
        return [], -1
    return _CODE.findall(match.group("codes").upper()), match.end("codes")


def is_ignored(code: str, ignored: set[str] | None) -> bool:
    if not ignored:
        return False
    return "ALL" in ignored or any(code.startswith(prefix) for prefix in ignored)


class LineSuppression:
    """`# noqa` for a finding's first line: on that line, or where its comment has to go when the line
    ends inside a multi-line string or a backslash continuation (tokenized only when needed)."""

    def __init__(self, source: str, lines: list[str]) -> None:
        self.lines = lines
        self.source = source if "noqa" in source.lower() else None
        self.layout: CommentLines | None = None
        self.fstrings = self.source is not None and _TRIPLE_FSTRING.search(source) is not None

    def suppresses(self, line: int, code: str) -> bool:
        if self.source is None:
            return False
        text = self._text(line)
        if line_suppresses(text, code):
            return True
        if self._holds_comment(text):
            return False
        if self.layout is None:
            self.layout = comment_lines(self.source) or CommentLines()
        slot = self.layout.slot(line)
        return slot != line and line_suppresses(self._text(slot), code)

    def _holds_comment(self, text: str) -> bool:
        """True when a finding's first line surely ends outside any string and continuation, so it
        holds its own comment: a finding starts at a token, so its line ends inside a string only
        when that string opens on the line (a triple quote, or a quote continued by a backslash),
        or inside a triple-quoted f-string around it."""
        return not (self.fstrings or text.endswith("\\") or '"""' in text or "'''" in text)

    def _text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""
