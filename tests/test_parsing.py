"""Parsing in pieces gives the tree one parse gives: node types, fields, sequences, whitespace."""

from __future__ import annotations

import contextlib
import dataclasses
import textwrap
import tokenize

import libcst as cst
import pytest

from torchlint.static import parsing


def _same(a, b) -> bool:
    """Strict equality: same node types, same sequence types and lengths, same leaf values."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, cst.CSTNode):
            stack.extend((getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


MODULE = textwrap.dedent('''\
    #!/usr/bin/env python
    # -*- coding: utf-8 -*-
    """Docstring: [not, a, list]
    x = [1,
    """
    from __future__ import annotations
    import torch, os; import sys

    TABLE = [
        # leading comment
        (1, 2),
        [3, 4],  # trailing
        {5: 6},

        lambda a, b: a + b,
        *rest,
        "string, with, commas",
        f"{x}, {y}",
    ]
    MAPPING: dict[str, int] = {
        "a": 1,  # one
        **other,
        "b": [i for i in range(3)],
        # before c
        "c": lambda q, r=(1, 2): q,
    }
    SET = {1, 2,
           3}
    TUPLE = (
        1,
        2
    )
    call(
        a,
        b=1,
        *c,
        **d
    )
    squares = [i * i for i in range(10)]
    x = 1 + \\
        2


    @decorator(1, 2)
    @other
    def f(a, b):
        return a
        # indented trailing comment


    # comment before the class
    class Net(torch.nn.Module):
        def forward(self, x):
            return x

    if x:
        pass
    elif y:
        pass
    else:
        pass
    try:
        pass
    except* ValueError:
        pass
    try:
        pass
    except Exception:
        pass
    finally:
        pass
    for i in range(3):
        pass
    else:
        pass
    while False:
        pass
    async def g():
        async with a as b:
            pass
    match command:
        case [x, y]:
            pass
        case _:
            pass
    with open(p) as handle: data = [1, 2,
                                    3]
    last = [1, 2, 3]  # end
    # footer comment
''')


@pytest.fixture(autouse=True)
def split_everything(monkeypatch):
    """Every source is split here, whatever its size (PIECE_CHARS alone decides the pieces); data
    tables are kept (test_data_tables.py shows them elided)."""
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 0)
    monkeypatch.setattr(parsing, "without_table", lambda text: None)


@pytest.mark.parametrize("piece", [1, 40, 200, 10_000])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_pieces_give_the_whole_tree(monkeypatch, piece, newline):
    monkeypatch.setattr(parsing, "PIECE_CHARS", piece)
    source = MODULE.replace("\n", newline)
    assert _same(cst.parse_module(source), parsing.parse_module(source))


@pytest.mark.parametrize("source", [
    "x = [\n    1,\n    2,\n]",  # no trailing newline
    "if x:\n\tpass\nelse:\n\tpass\ny = [\n\t1,\n\t2,\n]\n",  # tabs
    "def f():\n  return 1\n\nx = {\n  1: 2,\n  3: 4,\n}\n",  # two-space indent, found in a later piece
    "x = 1\n\n\n# only comments after\n\n",
    "x = foo(1, 2)[\n    3,\n    4,\n]\n",  # a subscript: not split
    "x = [1, 2] + [\n    3,\n    4,\n]\n",  # a sum: not split
    "x = 1, [\n    3,\n    4,\n]\n",  # a bare tuple: not split
    "x = {k: v for k, v in [\n    (1, 2),\n    (3, 4),\n]}\n",  # a comprehension
    "print(\n    1,\n    2,\n)\n",
])
def test_edge_shapes(monkeypatch, source):
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    assert _same(cst.parse_module(source), parsing.parse_module(source))


def test_first_indent_of_the_file(monkeypatch):
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    module = parsing.parse_module("x = 1\ny = 2\nif x:\n\tpass\nif y:\n  pass\n")
    assert module.default_indent == "\t"


@pytest.mark.parametrize("source", [
    "x = [\n    1,\n    2 3,\n]\n",
    "def f(:\n    pass\ny = 1\n",
    "x = 1\n  y = 2\n",
    "x = (\n",
])
def test_syntax_errors_are_those_of_one_parse(monkeypatch, source):
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(source)
    with pytest.raises(cst.ParserSyntaxError) as pieces:
        parsing.parse_module(source)
    assert str(pieces.value) == str(whole.value)


def test_release_memory_is_harmless():
    parsing.release_memory()
    parsing.release_memory()


def test_big_statements_are_parsed_in_runs_of_elements(monkeypatch):
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    parsed: list[str] = []
    real = cst.parse_module

    def spy(text):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(parsing.cst, "parse_module", spy)
    module = parsing.parse_module(MODULE)
    assert MODULE not in parsed
    assert max(len(text) for text in parsed) < 120  # the longest: the decorated function
    assert _same(real(MODULE), module)
    assert any(text.startswith("_ = [(1, 2)") for text in parsed)  # TABLE's elements, alone


@pytest.mark.parametrize("piece", [1, 60])
@pytest.mark.parametrize("source", [
    MODULE,
    MODULE.replace("\n", "\r\n"),
    MODULE.rstrip("\n"),  # no final newline
    "\n\n# header\n\n@dec\n\n# between\n@dec2\ndef f():\n    x = g(1)\n\n\n# lead\nclass C:\n    y = h(2)\n",
])
def test_spans_from_statement_lines_are_those_of_the_whole_module(monkeypatch, piece, source):
    from torchlint.static.locate import locate
    from torchlint.static.traverse import nodes_of
    monkeypatch.setattr(parsing, "PIECE_CHARS", piece)
    module, lines = parsing.parse_with_lines(source)
    assert lines is not None and len(lines) == len(module.body)
    nodes = list(nodes_of(module, (cst.CSTNode,)))[1:]  # every node but the module
    whole = locate(module, nodes)
    assert len(whole) > 30
    assert locate(module, nodes, lines) == whole


EDITS = [
    lambda s: s.replace("[1, 2, 3]", "[1, 2, 3, 4]", 1),  # one statement changed
    lambda s: "import os\n" + s,  # a statement added at the top (the header moves)
    lambda s: s + "x = 1\nx = 1\n",  # the same text twice
    lambda s: s.replace("\n\n", "\n\n# a comment between statements\n\n", 1),
    lambda s: s.replace("last = [1, 2, 3]  # end\n", ""),  # a statement removed
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_statements_reused_after_edits_give_the_whole_tree(monkeypatch, newline):
    """The language server's parse: statements whose text is unchanged are not parsed again, and the
    tree is still the one a parse of the whole text gives, with each node at one place only."""
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 256_000)
    cache = parsing.StatementCache()
    source = MODULE.replace("\n", newline)
    with parsing.reusing(cache):
        parsing.parse_with_lines(source)
    for edit in EDITS:
        edited = edit(source).replace("\n", newline).replace("\r\r\n", "\r\n")
        parses = []
        original = cst.parse_module
        monkeypatch.setattr(parsing.cst, "parse_module", lambda text, p=parses, o=original: p.append(text) or o(text))
        with parsing.reusing(cache):
            after, lines = parsing.parse_with_lines(edited)
        monkeypatch.setattr(parsing.cst, "parse_module", original)
        assert _same(cst.parse_module(edited), after) and after.code == edited
        assert lines is not None and len(lines) == len(after.body)
        assert len({id(node) for node in after.body}) == len(after.body)
        assert len(parses) <= 3  # the statements the edit touched, not all of the module's
        source = edited


def test_a_syntax_error_in_an_edit_is_that_of_one_parse(monkeypatch):
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 256_000)
    cache = parsing.StatementCache()
    with parsing.reusing(cache):
        parsing.parse_with_lines(MODULE)
    broken = MODULE.replace("[1, 2, 3]", "[1, 2 3]", 1)
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(broken)
    with pytest.raises(cst.ParserSyntaxError) as reused, parsing.reusing(cache):
        parsing.parse_with_lines(broken)
    assert str(reused.value) == str(whole.value)


def test_only_the_first_parse_of_a_reusing_block_goes_through_the_cache(monkeypatch):
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 256_000)
    cache = parsing.StatementCache()
    with parsing.reusing(cache):
        parsing.parse_with_lines(MODULE)
        parsing.parse_with_lines("import os\n")  # a module the document imports: not cached
    assert "import os\n" not in cache.parsed and len(cache.parsed) > 5


def test_positions_kept_for_reused_statements_are_those_of_a_fresh_check():
    """The language server's check after each edit (statements and their located positions reused)
    reports what a check of the edited text alone reports, position for position."""
    from conftest import ROOT

    from torchlint.config import Settings
    from torchlint.static.engine import check_text

    enabled = Settings().enabled()
    folder = ROOT / "fixtures" / "numerics"
    source = "\n\n".join(p.read_text() for p in sorted(folder.glob("*.py"))[:12])
    edits = [
        lambda text: "import os\n" + text,  # every line moves down
        lambda text: text.replace("torch.log(", "torch.log1p(", 1),  # a finding goes
        lambda text: text.replace("\n\n\n", "\n\n\n# a comment\n\n", 3),  # comment lines between statements
        lambda text: text.replace("    ", "  ", 1),  # a statement indented differently
        lambda text: text + "\ny = torch.log(torch.softmax(torch.randn(2, 3), 1))\n",  # a finding comes
    ]
    cache = parsing.StatementCache()

    def spans(findings):
        return [(f.code, f.line, f.column, f.end_line, f.end_column) for f in findings]

    for edit in [lambda text: text, *edits]:
        source = edit(source)
        with parsing.reusing(cache):
            reused = check_text(source, "t.py", enabled)
        assert spans(reused) == spans(check_text(source, "t.py", enabled))
        assert reused
    assert cache.spans  # positions were kept


def test_statements_found_after_an_edit_are_those_of_a_scan_of_the_new_text():
    """The language server finds the statements of an edited text by scanning only from the edit to
    the first statement start in the unchanged end: the same starts, lines and first indented block
    as a scan of the whole new text, over random edits (including ones that open a bracket or a
    string, or move the first indented block)."""
    import random

    from conftest import ROOT

    texts = [p.read_text() for p in sorted((ROOT / "fixtures" / "training").glob("*.py"))[:6]]
    source = "\n\n".join(texts)
    pieces = ["x = 1\n", "(", '"""', "    ", "\n", "def f():\n    return 1\n", "@d\n", "else:\n", "#", "]", ""]
    generator = random.Random(5)
    checked = 0
    for _ in range(300):
        start = generator.randrange(len(source))
        end = min(len(source), start + generator.choice([0, 0, 1, 5, 40, 400]))
        edited = source[:start] + generator.choice(pieces) + source[end:]
        old = parsing.top_level_statements(source)
        try:
            expected = parsing.top_level_statements(edited)
        except (tokenize.TokenError, SyntaxError, parsing._Mismatch):
            # text Python cannot tokenize (an unbalanced bracket): the statements found may differ,
            # but the server's parse still gives the error a parse of the whole text gives
            cache = parsing.StatementCache()
            with parsing.reusing(cache), contextlib.suppress(cst.ParserSyntaxError):
                parsing.parse_with_lines(source)  # the kept text may not parse either
            try:
                whole = cst.parse_module(edited)
            except cst.ParserSyntaxError as error:
                with pytest.raises(cst.ParserSyntaxError) as reused, parsing.reusing(cache):
                    parsing.parse_with_lines(edited)
                assert str(reused.value) == str(error)
            else:
                with parsing.reusing(cache):
                    assert _same(whole, parsing.parse_with_lines(edited)[0])
            continue
        assert parsing.statements_after_edit(source, old, edited) == expected
        checked += 1
        if generator.random() < 0.5:  # keep some edits (that still scan), undo others
            source = edited
    assert checked > 150
