"""`# noqa` and `# torchlint: file-ignore[...]` comments."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_IGNORE = re.compile(r"#\s*torchlint:\s*file-ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]+")


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


def is_ignored(code: str, ignored: set[str] | None) -> bool:
    if not ignored:
        return False
    return "ALL" in ignored or any(code.startswith(prefix) for prefix in ignored)
