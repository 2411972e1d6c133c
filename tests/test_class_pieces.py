"""A big class parsed in runs of members gives the tree one parse gives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from test_parsing import _same

from torchlint.static import class_pieces, parsing

CLASS = textwrap.dedent('''\
    # leading comment of the file
    import torch


    @decorator(1)
    @other
    class Outer(torch.nn.Module):  # trailing comment
        """Docstring."""

        # a comment at the members' indentation
        attribute = [
            1,
            2,
        ]

        def method(self, x):
            if x:
                return 1
            else:
                return 2
            # a comment further in: it belongs to the method's block

        class Inner:
            value = 1

            def deeper(self):
                return torch.log(self.value)

            @staticmethod
            def helper():
                pass

        def after(self): return 3
        try:
            import numpy
        except ImportError:
            numpy = None
        finally:
            pass
        x = 1; y = 2
        \n\
        def after_spaces(self):
            pass
    # a trailing comment at column 0
        # a trailing comment at the members' indentation

    x = Outer()
''')


@pytest.mark.parametrize("piece", [1, 30, 200, 10_000])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_class_runs_give_the_whole_tree(monkeypatch, piece, newline):
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 0)
    monkeypatch.setattr(parsing, "PIECE_CHARS", piece)
    source = CLASS.replace("\n", newline)
    module = parsing.parse_module(source)
    assert module.code == source
    assert _same(cst.parse_module(source), module)


def test_the_class_is_split_and_nested_classes_too(monkeypatch):
    statement = CLASS[CLASS.index("@decorator"):CLASS.index("x = Outer()")]
    calls = []
    original = class_pieces.parse_class

    def counted(text, piece_chars, enclosing=()):
        calls.append(enclosing)
        return original(text, piece_chars, enclosing)

    monkeypatch.setattr(class_pieces, "parse_class", counted)
    module = class_pieces.parse_class(statement, 1)
    assert _same(cst.parse_module(statement), module)
    assert ("",) in calls  # Inner, inside a stand-in for Outer


@pytest.mark.parametrize("source", [
    "class A:\n\tx = 1\n\n\tdef f(self):\n\t\treturn 1\n",  # tabs
    "class A:\n  x = 1\n  def f(self):\n    return 1\n",  # two spaces
    "class A: pass\n",  # no indented body
    "class A:\n    x = 1\n    y = 2",  # no newline at the end
    "class A:\n    x = 1\n\n\n\n",  # blank lines after
    "class A:\n    x = 1\n        # deeper comment\n    y = 2\n",
    "class A:\n    x = 1\n    \n    y = 2\n",  # a line of spaces between members
    "class A:\n    if x:\n        y = 1\n    elif z:\n        y = 2\n    w = 3\n",
])
def test_class_edge_shapes(monkeypatch, source):
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 0)
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    assert _same(cst.parse_module(source), parsing.parse_module(source))


@pytest.mark.parametrize("text", [
    "def f():\n    return 1\n",  # not a class
    "class A: pass\n",
    "class A:\n    x = 1\nclass B:\n    y = 2\n",  # two statements
])
def test_what_is_not_split(text):
    with pytest.raises(class_pieces.NotSplit):
        class_pieces.parse_class(text, 1)


def test_a_file_indented_differently_before_the_class(monkeypatch):
    """The pieces' indentation fields are relative to the file's first indented block."""
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 0)
    monkeypatch.setattr(parsing, "PIECE_CHARS", 1)
    source = "def f():\n  return 1\n\n\nclass A:\n    x = 1\n\n    def g(self):\n        return 2\n"
    assert _same(cst.parse_module(source), parsing.parse_module(source))
