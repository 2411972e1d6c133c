"""Parse a big module in pieces, into the same syntax tree one parse would give.

LibCST's native parser holds about 500 bytes per source character while it parses (measured: 745 MB
for the 1.4 MB ``common_methods_invocations.py`` of the torch package, whose finished tree holds
~40 MB of Python objects). A source over ``SPLIT_CHARS`` is therefore parsed in runs of whole
top-level statements of at most ``PIECE_CHARS``; one statement over that is parsed in runs of its
elements when its value is a bracketed literal or a call (a 660 kB table of test cases), in runs of
members when it is a class (``class_pieces.py``), and not at all when it is a table of plain literals
(``data_tables.py``: one unknown name on the same lines). The pieces are joined into one tree equal
to a whole parse (``tests/test_parsing.py`` compares them). The comment and blank lines that end a
piece belong to the next piece's first statement, as in a whole parse. Anything unexpected (a
token error, a piece that does not parse, a count that differs) falls back to one parse of the
whole text, which also gives a syntax error its real position.

A tree parsed in pieces comes with the line of each top-level statement's first token (its first
decorator for a decorated definition), which the tokenize pass found anyway: ``locate`` then writes
out only the statements that hold a reported node.

The freed parser memory stays in the C heap; ``release_memory`` hands it back to the system after
a big parse, so the peak is one piece's parse, not the sum of the big files seen.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import tokenize
from bisect import bisect_right

import libcst as cst

from torchlint.static.class_pieces import NotSplit, parse_class
from torchlint.static.data_tables import without_table
from torchlint.static.locate import Kept
from torchlint.static.token_kinds import BRACKETS, CLOSING, CONTINUES, LAYOUT

PIECE_CHARS = 64_000  # text parsed at once, at most (a longer element or statement is parsed whole)
# only sources longer than this are split: below it a whole parse peaks under ~65 MB, and finding the
# pieces (a tokenize pass) costs about a tenth of the parse
SPLIT_CHARS = 128_000
_COMPOUND = frozenset({"@", "def", "class", "if", "for", "while", "with", "try", "async"})  # not split


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module(source)``, in pieces when the source is big; the freed memory is
    released after a big parse."""
    return parse_with_lines(source)[0]


class StatementCache:
    """Top-level statements already parsed, by their text (the language server's: an edit re-parses
    only the statements it changed). Holds the statements of the last text parsed with it."""

    def __init__(self) -> None:
        self.parsed: dict[str, list[cst.Module]] = {}  # a tree per occurrence of the text
        self.module: cst.Module | None = None  # the last tree parsed through it
        self.spans = Kept()  # locate.py's positions in its statements, kept while they are reused
        self.source = ""  # the last text parsed through it, and where its statements start
        self.found: tuple[list[int], list[int], int | None] | None = None
        # a statement led by the comment and blank lines ending the piece before it, by the statement
        # as parsed: (statement, those lines, the statement leading them); kept so that it stays the
        # same object while neither changes
        self.heads: dict[int, tuple] = {}
        self.memos: dict[str, dict] = {}  # per analysis, its per-statement parts (see statement_memo)


_cache: StatementCache | None = None  # set by `reusing` around a check
_used: StatementCache | None = None  # the cache the check in the `reusing` block parsed through


def statement_spans(module: cst.Module) -> Kept | None:
    """The positions kept for the statements of ``module`` (locate.py's), when ``module`` was
    parsed through a statement cache in the current `reusing` block; None otherwise."""
    return _used.spans if _used is not None and _used.module is module else None


def statement_memo(module: cst.Module, analysis: str) -> dict | None:
    """A dict for ``analysis`` to keep its part of each top-level statement of ``module`` in, by
    statement object, when ``module`` was parsed through a statement cache in the current `reusing`
    block (unchanged statements are the same objects from one check to the next); None otherwise."""
    if _used is None or _used.module is not module:
        return None
    return _used.memos.setdefault(analysis, {})


class reusing:  # noqa: N801 - a context manager: `with reusing(cache):`
    """Within the block, the first source parsed (the document checked: the modules it imports are
    parsed after it) is parsed one top-level statement at a time through `cache`, into the tree one
    parse gives, when it is at most SPLIT_CHARS long."""

    def __init__(self, cache: StatementCache) -> None:
        self.cache = cache

    def __enter__(self) -> StatementCache:
        global _cache
        _cache = self.cache
        return self.cache

    def __exit__(self, *exc) -> None:
        global _cache, _used
        _cache = _used = None


def parse_with_lines(source: str) -> tuple[cst.Module, list[int] | None]:
    """``parse_module``, and the first line of each top-level statement when the tree was parsed in
    pieces (None otherwise)."""
    global _cache
    if len(source) <= max(PIECE_CHARS, SPLIT_CHARS):
        cache, _cache = _cache, None
        if cache is not None:
            try:
                return _parse_through(source, cache)
            except (tokenize.TokenError, SyntaxError, cst.ParserSyntaxError, _Mismatch):
                pass  # one parse: its tree, or its syntax error where it really is
        return cst.parse_module(source), None
    try:
        module, lines = _parse_in_pieces(source)
    except (tokenize.TokenError, SyntaxError, cst.ParserSyntaxError, _Mismatch):
        module, lines = None, None
    if module is None:  # one parse: its tree, or its syntax error where it really is
        module = cst.parse_module(source)
    release_memory()
    return module, lines


class _Mismatch(Exception):
    """The pieces do not join into the whole parse's shape: parse the text at once."""


def _parse_in_pieces(source: str) -> tuple[cst.Module, list[int] | None]:
    statements, lines, first_indented = top_level_statements(source)
    pieces = _group(statements, source)
    modules = []
    for start, end in pieces:
        text = source[start:end]
        modules.append(_parse_statement(text) if end - start > PIECE_CHARS else cst.parse_module(text))
    return _joined(modules, pieces, lines, first_indented)


def _parse_through(source: str, cache: StatementCache) -> tuple[cst.Module, list[int] | None]:
    """One piece per top-level statement: a statement whose text the last source also had is not
    parsed again (LibCST's nodes are immutable, so sharing
    them between two trees is safe). The cache keeps this text's statements only."""
    if cache.found is not None:
        found = statements_after_edit(cache.source, cache.found, source)
    else:
        found = top_level_statements(source)
    cache.source, cache.found = source, found
    statements, lines, first_indented = found
    pieces = list(zip([0, *statements[1:]], [*statements[1:], len(source)], strict=True))
    parsed: dict[str, list[cst.Module]] = {}
    modules = []
    for start, end in pieces:
        text = source[start:end]
        # a text that comes twice in a source has a tree per occurrence: one node never sits at two places
        kept = cache.parsed.get(text)
        module = kept.pop() if kept else cst.parse_module(text)
        parsed.setdefault(text, []).append(module)
        modules.append(module)
    cache.parsed = parsed
    heads: dict[int, tuple] = {}
    module, lines = _joined(modules, pieces, lines, first_indented, (cache.heads, heads))
    cache.heads = heads
    global _used
    cache.module, _used = module, cache
    return module, lines


def _joined(modules: list[cst.Module], pieces: list[tuple[int, int]], lines: list[int],
            first_indented: int | None, heads: tuple[dict, dict] | None = None) -> tuple[cst.Module, list[int] | None]:
    """The pieces' modules joined into the module one parse of their whole text gives. ``heads``:
    (the led statements of the last join, this join's), to reuse them."""
    body: list[cst.CSTNode] = []
    for index, module in enumerate(modules):
        if index and module.header:
            raise _Mismatch
        statements_here = list(module.body)
        if index and statements_here:
            footer = modules[index - 1].footer
            if footer:  # comment and blank lines after the previous piece lead this piece's first statement
                statements_here[0] = _led(statements_here[0], footer, heads)
        elif index:
            raise _Mismatch
        body.extend(statements_here)
    first, last = modules[0], modules[-1]
    # the indentation unit is read from the file's first indented block
    holder = first if first_indented is None else next(m for m, (start, end) in zip(modules, pieces, strict=True)
                                                        if start <= first_indented < end)
    # indentation fields are stored relative to the module's unit: a piece that found another unit
    # (a file indented by two spaces, then by four) would not mean the same
    if any(m.default_indent != holder.default_indent and _has_blocks(m) for m in modules):
        raise _Mismatch
    module = cst.Module(body=tuple(body), header=first.header, footer=last.footer, encoding=first.encoding,
                        default_indent=holder.default_indent, default_newline=first.default_newline,
                        has_trailing_newline=last.has_trailing_newline)
    return module, lines if len(lines) == len(body) else None


def _led(statement: cst.CSTNode, footer, heads: tuple[dict, dict] | None) -> cst.CSTNode:
    """``statement`` with ``footer``'s lines before its own leading lines: the object made last time
    when the statement and the lines are the same."""
    entry = heads[0].get(id(statement)) if heads is not None else None
    if entry is not None and entry[0] is statement and len(entry[1]) == len(footer) \
            and all(a is b or a.deep_equals(b) for a, b in zip(entry[1], footer, strict=True)):
        led = entry[2]
    else:
        led = statement.with_changes(leading_lines=(*footer, *statement.leading_lines))
    if heads is not None:
        heads[1][id(statement)] = (statement, footer, led)
    return led


def _has_blocks(module: cst.Module) -> bool:
    return any(isinstance(getattr(statement, "body", None), cst.IndentedBlock) for statement in module.body)


def top_level_statements(source: str) -> tuple[list[int], list[int], int | None]:
    """Where each top-level statement starts (offsets of its first line, and that line; a decorated
    definition starts at its first decorator) and where the first indented block is (an offset;
    None: none)."""
    return _scan(source, 0, 1)


def _scan(source: str, begin: int, first_line: int, resume=None) -> tuple[list[int], list[int], int | None]:
    """``top_level_statements`` of ``source[begin:]`` (``begin`` starts a statement, on line
    ``first_line``), offsets and lines counted from the start of ``source``. ``resume(offset, line,
    first indented block so far)`` may end the scan at a statement start by returning the starts,
    lines and first indented block of the rest of the text (found in an earlier scan)."""
    text = source[begin:] if begin else source
    line_starts = [begin]
    for line in io.StringIO(text):
        line_starts.append(line_starts[-1] + len(line))
    starts: list[int] = []
    lines: list[int] = []
    first_indented = None
    depth = 0  # indentation level
    new_line = True  # the next significant token begins a logical line
    decorated = False
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        kind = token.type
        if kind == tokenize.INDENT:
            depth += 1
            if first_indented is None:
                first_indented = line_starts[token.start[0] - 1]
            continue
        if kind == tokenize.DEDENT:
            depth -= 1
            continue
        if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            new_line = new_line or kind == tokenize.NEWLINE
            continue
        if new_line and depth == 0:
            line, column = token.start
            if column != 0:
                raise _Mismatch
            continues = kind == tokenize.NAME and token.string in CONTINUES
            if not continues and not decorated:
                offset = line_starts[line - 1]
                rest = resume(offset, line + first_line - 1, first_indented) if resume and starts else None
                if rest is not None:
                    more_starts, more_lines, indented = rest
                    return starts + more_starts, lines + more_lines, first_indented if first_indented is not None else indented
                starts.append(offset)
                lines.append(line + first_line - 1)
            decorated = token.string == "@"
        new_line = False
    if not starts and not begin:
        raise _Mismatch
    return starts, lines, first_indented


def statements_after_edit(old: str, found: tuple[list[int], list[int], int | None],
                          new: str) -> tuple[list[int], list[int], int | None]:
    """``top_level_statements(new)`` from ``found``, those of the text ``old``: the text is scanned
    only from the last statement that starts before the first changed character, up to the first
    statement start inside the unchanged end, where the old starts take over."""
    starts, lines, first_indented = found
    if not starts:
        return top_level_statements(new)
    prefix = _common(old, new, lambda text, n: text[:n])
    suffix = min(_common(old, new, lambda text, n: text[len(text) - n:]), min(len(old), len(new)) - prefix)
    delta = len(new) - len(old)
    index = bisect_right(starts, prefix) - 1
    if index <= 0:
        return top_level_statements(new)
    begin = starts[index]
    unchanged_from = len(new) - suffix  # in new
    old_index = {offset: i for i, offset in enumerate(starts)}

    def resume(offset: int, line: int, indented_so_far: int | None):
        i = old_index.get(offset - delta)
        if offset < unchanged_from or i is None:
            return None
        if indented_so_far is None and first_indented is not None and begin <= first_indented < starts[i]:
            return None  # the first indented block was in the changed part: scan on to find the next
        shift = line - lines[i]
        indented = first_indented + delta if first_indented is not None and first_indented >= starts[i] else None
        return [s + delta for s in starts[i:]], [n + shift for n in lines[i:]], indented

    after = _scan(new, begin, lines[index], resume)
    indented = first_indented if first_indented is not None and first_indented < begin else after[2]
    return starts[:index] + after[0], lines[:index] + after[1], indented


def _common(a: str, b: str, part) -> int:
    """The length of the longest prefix (or suffix: ``part``) two texts share (binary search over
    slice comparisons, which run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if part(a, middle) == part(b, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _group(starts: list[int], source: str) -> list[tuple[int, int]]:
    """Runs of whole statements of at most PIECE_CHARS (a longer statement on its own); the first
    run starts at 0 (the module's header), the last ends at the end of the text."""
    bounds = [0, *starts[1:], len(source)]
    pieces: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(bounds)):
        end = bounds[index]
        if end - start > PIECE_CHARS and bounds[index - 1] > start:
            pieces.append((start, bounds[index - 1]))
            start = bounds[index - 1]
    pieces.append((start, len(source)))
    return pieces


def _parse_statement(text: str) -> cst.Module:
    """One big top-level statement (with the comment lines after it), as a module: a literal data
    table as one unknown name (data_tables.py), a class in runs of members (class_pieces.py), a
    bracketed literal or call that is its value in runs of elements."""
    elided = without_table(text)
    if elided is not None:
        return cst.parse_module(elided)
    try:
        return parse_class(text, PIECE_CHARS)
    except (tokenize.TokenError, SyntaxError, cst.ParserSyntaxError, NotSplit):
        pass
    try:
        return _parse_elements(text)
    except (tokenize.TokenError, SyntaxError, cst.ParserSyntaxError, _Mismatch):
        return cst.parse_module(text)


def _parse_elements(text: str) -> cst.Module:
    split = _element_starts(text)
    if split is None:
        return cst.parse_module(text)
    bracket, starts = split
    groups = [starts[0]]
    for start in starts[1:]:
        if start - groups[-1] > PIECE_CHARS:
            groups.append(start)
    if len(groups) < 2:
        return cst.parse_module(text)
    # the statement with its last run of elements only, then the other runs alone
    skeleton = cst.parse_module(text[:starts[0]] + text[groups[-1]:])
    line = skeleton.body[0] if len(skeleton.body) == 1 else None
    small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    container = getattr(small, "value", None)
    field = _field(container, bracket)
    if field is None:
        raise _Mismatch
    elements: list[cst.CSTNode] = []
    for begin, end in zip(groups, groups[1:], strict=False):
        elements.extend(_run(text[begin:end], type(container), field, bracket))
    elements.extend(getattr(container, field))
    if len(elements) != len(starts):
        raise _Mismatch
    container = container.with_changes(**{field: tuple(elements)})
    line = line.with_changes(body=(small.with_changes(value=container),))
    return skeleton.with_changes(body=(line,))


def _field(container, bracket: str) -> str | None:
    """The children a container opened by ``bracket`` lists its elements in."""
    if bracket == "(" and isinstance(container, cst.Call):
        return "args"
    kinds = {"[": (cst.List,), "{": (cst.Dict, cst.Set), "(": (cst.Tuple,)}[bracket]
    if isinstance(container, kinds) and (bracket != "(" or container.lpar):
        return "elements"
    return None


_SENTINELS = {cst.List: "0]", cst.Set: "0}", cst.Dict: "0: 0}", cst.Tuple: "0)", cst.Call: "**_)"}


def _run(text: str, kind: type, field: str, bracket: str) -> list[cst.CSTNode]:
    """The elements in ``text`` (whole elements, each with its comma and the lines after it),
    parsed inside the same kind of container; a last element closes it so that the final comma
    keeps its following lines, as it does before the next element in the whole statement."""
    opening = "_(" if kind is cst.Call else bracket
    module = cst.parse_module(f"_ = {opening}{text}{_SENTINELS[kind]}\n")
    value = module.body[0].body[0].value
    if type(value) is not kind:
        raise _Mismatch
    return list(getattr(value, field))[:-1]


def _element_starts(text: str) -> tuple[str, list[int]] | None:
    """For a statement ending in a bracket that opens at depth 0 (``x = [...]``, ``f(...)``): the
    bracket and where each of its elements starts (the first token after the bracket and after each
    comma at depth 1); None when it has no such bracket, or holds a comprehension."""
    line_starts = [0]
    for line in io.StringIO(text):
        line_starts.append(line_starts[-1] + len(line))
    stack: list[str] = []
    opened = None  # (bracket, element starts) of the current depth-1 bracket
    lambdas = 0  # depth-1 lambdas whose parameters are being read
    expect_element = False
    last = None
    first = True
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in LAYOUT or token.type == tokenize.ENDMARKER:
            if token.type == tokenize.NEWLINE:
                break
            continue
        offset = line_starts[token.start[0] - 1] + token.start[1]
        string = token.string
        if first and string in _COMPOUND:
            return None
        first = False
        closing = token.type == tokenize.OP and string in CLOSING
        if opened is not None and len(stack) == 1 and expect_element and not closing:
            opened[1].append(offset)
            expect_element = False
        if token.type == tokenize.OP and string in BRACKETS:
            if not stack:
                opened = (string, [])
                expect_element = True
                stack.append(string)
                last = None
                continue
            stack.append(string)
        elif closing:
            if not stack:
                return None
            stack.pop()
            if not stack:
                last = opened
                opened = None
                continue
        if opened is not None and len(stack) == 1:
            if string == "lambda":
                lambdas += 1
            elif string == ":" and lambdas:
                lambdas -= 1
            elif string == "," and not lambdas:
                expect_element = True
            elif string in ("for", "async"):
                return None  # a comprehension
        elif not stack:
            last = None  # something after the bracket closed
    if last is None or not last[1]:
        return None
    return last[0], last[1]


_TRIM = None


def release_memory() -> None:
    """Return the C heap's free memory to the system (glibc ``malloc_trim``; nothing elsewhere)."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        path = ctypes.util.find_library("c")
        try:
            trim = ctypes.CDLL(path).malloc_trim if path else None
        except (OSError, AttributeError):
            trim = None
        if trim is not None:
            trim.argtypes = [ctypes.c_size_t]
            _TRIM = trim
    if _TRIM:
        _TRIM(0)
