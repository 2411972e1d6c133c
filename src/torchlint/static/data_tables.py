"""Generated data tables, read without building their syntax trees.

A module-level ``DATA = {...}`` whose elements are only literals (strings, numbers, names and
dotted names, nested brackets: tuned kernel configurations, vocabularies, lookup tables) can hold no
finding: no rule acts on a literal. Its syntax tree is still the biggest thing the file's check
builds (the torch package's 500 kB ``sparse/_triton_ops_meta.py`` added ~80 MB to the run's peak),
and a project summary would hold it for as long as the module is imported.

``without_table`` gives the text the parser reads instead of such a statement (one over the parser's
piece size in a file big enough to be parsed in pieces, see parsing.py): the table's elements become
one unknown name on the same lines (``(_data_table``, the table's line breaks, then ``)`` at the
closing bracket's column), so everything after it keeps its line and column. Anything that is not
plainly data (a call, an operator, a comprehension, a lambda, a syntax error) is parsed as it is.
Only the parse sees the new text: suppressions, fixes and messages use the file's own.
"""

from __future__ import annotations

import io
import keyword
import tokenize

from torchlint.static.token_kinds import BRACKETS, CLOSING, LAYOUT

ELIDED = "_data_table"
_NOISE = LAYOUT | {tokenize.ENDMARKER}
_CONSTANTS = frozenset({"True", "False", "None"})
MAX_DEPTH = 64  # nesting past this is not a table we recognise


def without_table(statement: str) -> str | None:
    """``statement`` (a top-level statement over PIECE_CHARS, with the comment lines after it) with
    its literal data table replaced by an unknown name on the same lines; None when it holds none."""
    span = table_span(statement)
    if span is None:
        return None
    opening, closing = span
    inside = statement[opening:closing]
    lines = inside.count("\n")
    if not lines:
        return None
    newline = "\r\n" if "\r\n" in inside else "\n"
    column = closing - (statement.rfind("\n", 0, closing) + 1)
    return f"{statement[:opening]}({ELIDED}{newline * lines}{' ' * column}){statement[closing + 1:]}"


def table_span(statement: str) -> tuple[int, int] | None:
    """For ``NAME [: annotation] = <literal display>`` followed by nothing but comments: the offsets of
    the display's opening and closing brackets; None for anything else. Other statements (a class, a
    call) are told apart at their first tokens, before the rest is tokenized."""
    stream = (t for t in tokenize.generate_tokens(io.StringIO(statement).readline) if t.type not in _NOISE)
    try:
        tokens = _up_to_the_value(stream)
        if tokens is None:
            return None
        equals = len(tokens) - 2  # the `=`: the display opens right after it
        tokens.extend(stream)
    except (tokenize.TokenError, SyntaxError):
        return None
    end = _literal(tokens, equals + 1, 0)
    if end != len(tokens) - 1 or tokens[end].string != BRACKETS[tokens[equals + 1].string]:
        return None  # not a literal, or something follows it
    line_starts = [0]
    for line in io.StringIO(statement):
        line_starts.append(line_starts[-1] + len(line))

    def offset(token: tokenize.TokenInfo) -> int:
        return line_starts[token.start[0] - 1] + token.start[1]

    return offset(tokens[equals + 1]), offset(tokens[end])


def _up_to_the_value(stream) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``NAME ... =`` and the bracket after the one `=` outside brackets (an
    annotation may hold brackets before it); None when the statement does not start that way."""
    tokens: list[tokenize.TokenInfo] = []
    depth = 0
    for token in stream:
        tokens.append(token)
        if len(tokens) == 1 and (token.type != tokenize.NAME or keyword.iskeyword(token.string)):
            return None
        if len(tokens) > 1 and tokens[-2].string == "=" and depth == 0:
            return tokens if token.string in BRACKETS else None
        if token.string in BRACKETS:
            depth += 1
        elif token.string in CLOSING:
            depth -= 1
    return None


def _literal(tokens: list[tokenize.TokenInfo], index: int, depth: int) -> int | None:
    """The index of the last token of the literal starting at ``index``; None when it is not one.
    Literals: strings (adjacent ones joined), numbers (signed), True/False/None, names and dotted
    names, and brackets of them (tuples, lists, sets, dicts)."""
    if index >= len(tokens) or depth > MAX_DEPTH:
        return None
    token = tokens[index]
    if token.type == tokenize.STRING:
        while index + 1 < len(tokens) and tokens[index + 1].type == tokenize.STRING:
            index += 1
        return index
    if token.type == tokenize.NUMBER:
        return index
    if token.string in ("-", "+"):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        return index + 1 if following is not None and following.type == tokenize.NUMBER else None
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string) and token.string not in _CONSTANTS:
            return None
        while (index + 2 < len(tokens) and tokens[index + 1].string == "."
               and tokens[index + 2].type == tokenize.NAME and not keyword.iskeyword(tokens[index + 2].string)):
            index += 2
        return index
    if token.string in BRACKETS:
        return _elements(tokens, index, depth)
    return None


def _elements(tokens: list[tokenize.TokenInfo], index: int, depth: int) -> int | None:
    """The index of the bracket closing the display opened at ``index`` (entries ``a: b`` only in
    braces, and then in every element or in none)."""
    closing = BRACKETS[tokens[index].string]
    index += 1
    pairs = None  # a dict's entries or a set's elements, decided by the first element
    while index < len(tokens) and tokens[index].string != closing:
        end = _literal(tokens, index, depth + 1)
        if end is None:
            return None
        index = end + 1
        has_colon = index < len(tokens) and tokens[index].string == ":"
        if has_colon and closing != "}":
            return None
        if pairs is None:
            pairs = has_colon
        elif pairs != has_colon:
            return None
        if has_colon:
            end = _literal(tokens, index + 1, depth + 1)
            if end is None:
                return None
            index = end + 1
        if index < len(tokens) and tokens[index].string == ",":
            index += 1
        elif index < len(tokens) and tokens[index].string != closing:
            return None
    return index if index < len(tokens) else None
