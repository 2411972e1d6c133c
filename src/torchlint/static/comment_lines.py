"""Where a `# noqa` comment can go: lines that end inside a multi-line string or in a backslash
continuation cannot hold a comment, so their comment belongs on the line where that construct ends
(as ruff does for multi-line strings). Shared by suppression and `--add-noqa`.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_LONE_CR = re.compile(r"\r(?!\n)")
_LINE_END = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT)


@dataclass
class CommentLines:
    slots: dict[int, int] = field(default_factory=dict)  # line that cannot hold a comment -> the one that does
    comments: dict[int, tuple[int, str]] = field(default_factory=dict)  # line -> (0-based column, comment text)
    tokens: list[tuple[int, str]] = field(default_factory=list)  # the code tokens, comments and NL left out

    def slot(self, line: int) -> int:
        """The line whose end-of-line comment applies to ``line``."""
        return self.slots.get(line, line)


def comment_lines(source: str) -> CommentLines | None:
    """The layout of ``source``; None when Python's tokenizer rejects it."""
    text = _LONE_CR.sub("\n", source)  # same length; Python reads a lone CR as a line end
    layout = CommentLines()
    can_hold: set[int] = set()
    last = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            last = max(last, token.end[0])
            if token.type in _LINE_END:
                can_hold.add(token.start[0])
            if token.type == tokenize.COMMENT:
                layout.comments[token.start[0]] = (token.start[1], token.string)
            elif token.type not in (tokenize.NL, tokenize.ENDMARKER):
                layout.tokens.append((token.type, token.string))
    except (tokenize.TokenError, SyntaxError):
        return None
    holder = None
    for line in range(last, 0, -1):
        if line in can_hold:
            holder = line
        elif holder is not None:
            layout.slots[line] = holder
    return layout
