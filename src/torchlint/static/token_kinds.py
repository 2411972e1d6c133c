"""The token vocabulary the statement splitters share (parsing, class_pieces, data_tables)."""

from __future__ import annotations

import tokenize

CONTINUES = frozenset({"elif", "else", "except", "finally"})  # lines that carry on the statement above
BRACKETS = {"(": ")", "[": "]", "{": "}"}  # opening -> closing
CLOSING = frozenset(BRACKETS.values())
LAYOUT = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT})
