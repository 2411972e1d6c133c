"""Source text as Python reads it: BOM and PEP 263 coding cookie, lines split only where Python splits.

Findings give positions in characters of the decoded text; ``--fix`` writes back with the encoding
(and BOM) the file had.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """Bytes Python itself would refuse to run: reason, and the 1-based line and column of the problem."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


@dataclass(frozen=True)
class Source:
    text: str
    encoding: str  # as tokenize names it: "utf-8", "utf-8-sig" (a BOM), "iso-8859-1", ...


def decode_source(data: bytes) -> Source:
    """Decode like the interpreter: a BOM or coding cookie picks the codec, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # unknown codec, a cookie that contradicts the BOM, bad bytes in line 1-2
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise _decode_error(data, bad, "utf-8") from None
        raise SourceError(_cookie_message(str(error.msg if hasattr(error, "msg") else error))) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as bad:
        raise _decode_error(data, bad, encoding) from None
    nul = text.find("\0")
    if nul != -1:  # the interpreter refuses these ("source code cannot contain null bytes")
        raise SourceError("source contains a null byte", *position(text, nul))
    return Source(text, encoding)


def read_source(path: Path) -> Source:
    """The file's decoded text; OSError and SourceError for what cannot be read."""
    return decode_source(path.read_bytes())


def encode_source(text: str, encoding: str) -> bytes:
    """Bytes in the file's own encoding ("utf-8-sig" puts the BOM back)."""
    return text.encode(encoding)


def source_lines(text: str) -> list[str]:
    """Lines as Python numbers them: split at \\n, \\r\\n and \\r only (not form feeds or U+2028)."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a character offset."""
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text, 0, offset)]
    return len(starts), offset - starts[-1] + 1


def _decode_error(data: bytes, error: UnicodeDecodeError, encoding: str) -> SourceError:
    """The reason, at the character where decoding stopped."""
    head = data[: error.start].decode(encoding, errors="replace")
    name = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
    return SourceError(f"not valid {name} ({error.reason})", *position(head, len(head)))


def _cookie_message(message: str) -> str:
    """tokenize's message without the "for '<file>'" it adds for a file name it does not have."""
    return re.sub(r" for '[^']*'", "", message).strip() or "invalid encoding declaration"
