"""Whether an edit touched only the text of comments: then the last check's findings still hold.

Typing in a comment changes no token the analysis reads, and no line or column of code, so the
findings of the text last checked are the findings of the new text: the server publishes them at
once instead of checking the file again. The test is exact and cheap: both texts have the same
lines, and each line that differs keeps its code (everything before the comment, as Python's
tokenizer found it in the checked text) and still starts its comment there. Comments that carry
meaning are never taken this way: `noqa`, `torchlint:` directives and coding declarations, and a
text whose mention of torch (the engine's reason to check a file at all) comes or goes.
"""

from __future__ import annotations

from torchlint.source import source_lines
from torchlint.static.comment_lines import comment_lines
from torchlint.static.engine import might_have_findings

_MEANINGFUL = ("noqa", "torchlint", "coding")


class CommentColumns:
    """Where each line's comment starts in a text (0-based column), found once per checked text."""

    def __init__(self, text: str) -> None:
        layout = comment_lines(text)
        self.columns = {line: column for line, (column, _) in layout.comments.items()} if layout else None


def only_comments_differ(old: str, new: str, columns: CommentColumns) -> bool:
    """True when ``new`` is ``old`` with only the text of existing comments changed."""
    if columns.columns is None or might_have_findings(old) != might_have_findings(new):
        return False
    before, after = source_lines(old), source_lines(new)
    if len(before) != len(after):
        return False
    for index, (was, now) in enumerate(zip(before, after, strict=True)):
        if was == now:
            continue
        column = columns.columns.get(index + 1)
        if column is None or was[:column] != now[:column] or now[column:column + 1] != "#":
            return False
        if any(word in was[column:].lower() or word in now[column:].lower() for word in _MEANINGFUL):
            return False
    return True
