"""Generated data tables are parsed as one unknown name: same findings, same positions, less memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.static import engine, parsing
from torchlint.static.data_tables import ELIDED, table_span, without_table
from torchlint.static.project import Project

DEFAULT_ENABLED = Settings().enabled()


@pytest.mark.parametrize(("statement", "span"), [
    ("x = [1,\n2]\n", (4, 9)),
    ("x: dict[int, int] = {1: 2,\n}\n", (20, 27)),
    ("x = {1:\n 2}  # a comment after it\n", (4, 10)),
    ("x = [a.b, -1, 'a' 'b', (None, True), {1, 2}, ()]\n", (4, 47)),
    ("KEYS = {(1, torch.float16, 0.5): {\"a\": (1, 2)}}\n", (7, 46)),
])
def test_literal_displays_are_tables(statement, span):
    assert table_span(statement) == span


@pytest.mark.parametrize("statement", [
    "x = f(1,\n2)\n",  # a call
    "x = [f(1)]\n",  # a call inside
    "x = [1] + [2,\n]\n",  # an operator after it
    "x = [1 if a else 2]\n",
    "x = [i for i in y]\n",
    "x = [lambda: 1]\n",
    "x = {1: 2, 3}\n",  # a dict entry then a set element: not Python
    "x = [1,, 2]\n",  # a syntax error stays for the parser to report
    "x = [1 2]\n",
    "x = [a.if]\n",
    "x = [*rest]\n",
    "x = y = [1]\n",
    "def f():\n    return [1]\n",
    "if x:\n    y = [1]\n",
])
def test_anything_else_is_not(statement):
    assert table_span(statement) is None


def _table(rows: int, newline: str = "\n") -> str:
    lines = [f"    ({i}, torch.float16, 'cfg'): [{i}, -{i}, 0.5]," for i in range(rows)]
    return f"TABLE: dict = {{{newline}" + newline.join(lines) + f"{newline}}}  # generated{newline}"


SCRIPT = ("import torch\n\n\ndef logp(x):\n    return torch.log(torch.softmax(x, 1))\n\n\n{table}\n"
          "def more(y):\n    return torch.log(torch.sigmoid(y))\n")


@pytest.fixture(autouse=True)
def pieces(monkeypatch):
    """Tables are elided where big sources are parsed in pieces: every source here is."""
    monkeypatch.setattr(parsing, "SPLIT_CHARS", 0)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_lines_and_columns_after_a_table_are_kept(newline):
    source = SCRIPT.replace("\n", newline).format(table=_table(3000, newline))
    assert len(_table(3000)) > parsing.PIECE_CHARS
    elided = parsing.parse_module(source).code
    assert ELIDED in elided and len(elided) < len(source) // 10
    assert elided.splitlines()[-2:] == source.splitlines()[-2:]
    assert elided.count("\n") == source.count("\n")
    closing = next(index for index, line in enumerate(source.splitlines()) if line.startswith("}"))
    assert elided.splitlines()[closing] == ")  # generated"  # the closing bracket's column


def test_only_plain_data_is_elided():
    table = _table(3000)
    assert without_table(table) is not None
    assert without_table(table.replace("-5,", "f(5),")) is None
    assert without_table("x = [\n" + "    1,\n" * 20 + "]\n") is not None  # the caller decides the size


def test_findings_around_a_table_are_those_of_the_whole_parse(monkeypatch):
    source = SCRIPT.format(table=_table(3000))
    with_elision = engine.check_text(source, "t.py", DEFAULT_ENABLED)
    monkeypatch.setattr(parsing, "without_table", lambda text: None)
    whole = engine.check_text(source, "t.py", DEFAULT_ENABLED)
    assert [(f.code, f.line, f.column, f.end_line, f.end_column) for f in with_elision] == \
        [(f.code, f.line, f.column, f.end_line, f.end_column) for f in whole]
    last_line = source.count("\n")
    assert {f.line for f in whole} == {5, last_line}


def test_a_syntax_error_in_a_table_is_still_reported():
    table = _table(3000).replace("(17, torch", "(17 torch")
    source = SCRIPT.format(table=table)
    findings = engine.check_text(source, "t.py", DEFAULT_ENABLED)
    assert [(f.code, f.line) for f in findings] == [("TL001", 9 + 17)]


def test_a_summary_reads_the_module_without_its_table(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    module = tmp_path / "meta.py"
    module.write_text(SCRIPT.format(table=_table(3000)))
    summary = Project().summary(module)
    assert summary is not None
    assert summary.env["logp"].kind == "function" and summary.env["TABLE"].kind is None
    assert ELIDED in summary.module.code
    # the other functions are where they are in the file
    assert summary.module.code.count("\n") == module.read_text().count("\n")
