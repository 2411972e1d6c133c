"""--add-noqa: a comment on each current finding's line, merged, idempotent, never inside a string."""

import json

import pytest
from test_notebooks import DEFINE, SETUP, notebook

from torchlint import check_source
from torchlint.cli import main

BEFORE = '''import torch


def f(x, g):
    h = torch.relu(x)
    a = torch.log(h) / h.norm()  # keep this
    b = torch.log(h) + len("""abc
def""")
    c = torch.log(h) \\
        + 1
    d = torch.log(h)  # noqa: E501 (long)
    e = g(torch.log(
        h))
    s = """torch.log(h) in a string"""
    return a, b, c, d, e, s
'''
AFTER = '''import torch


def f(x, g):
    h = torch.relu(x)
    a = torch.log(h) / h.norm()  # keep this  # noqa: TL101, TL106
    b = torch.log(h) + len("""abc
def""")  # noqa: TL101
    c = torch.log(h) \\
        + 1  # noqa: TL101
    d = torch.log(h)  # noqa: E501, TL101 (long)
    e = g(torch.log(  # noqa: TL101
        h))
    s = """torch.log(h) in a string"""
    return a, b, c, d, e, s
'''


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_comments_go_where_python_allows_and_a_second_run_changes_nothing(project, capsys):
    path = project / "m.py"
    path.write_text(BEFORE, encoding="utf-8")
    assert [(f.code, f.line) for f in check_source(BEFORE, "m.py")] == [
        ("TL101", 6), ("TL106", 6), ("TL101", 7), ("TL101", 9), ("TL101", 11), ("TL101", 12)]
    code, out, err = run(["m.py", "--no-cache", "--add-noqa"], capsys)
    assert (code, out, err) == (0, "", "Added noqa comments to 5 lines in 1 file.\n")
    assert path.read_text(encoding="utf-8") == AFTER
    assert run(["m.py", "--no-cache"], capsys)[:2] == (0, "All checks passed!\n")
    assert run(["m.py", "--no-cache", "--add-noqa"], capsys) == (0, "", "Added noqa comments to 0 lines in 0 files.\n")
    assert path.read_text(encoding="utf-8") == AFTER


def test_the_comment_where_a_string_ends_suppresses_the_line_it_started_on():
    # the engine reads a noqa for a line that ends inside a string where that string ends
    source = 'import torch\n\ndef f(x):\n    h = torch.relu(x)\n    return torch.log(h), """\n"""  # noqa: TL101\n'
    assert check_source(source, "m.py") == []
    assert [f.code for f in check_source(source.replace("  # noqa: TL101", ""), "m.py")] == ["TL101"]
    elsewhere = source.replace('"""\n"""  # noqa: TL101\n', '1\nx = 2  # noqa: TL101\n')
    assert [f.code for f in check_source(elsewhere, "m.py")] == ["TL101"]


@pytest.mark.parametrize("tail, suppressed", [
    ('1, \\\n  2  # noqa: TL101\n', True),  # a backslash continuation: its comment goes where it ends
    ('1, 2\nx = 3  # noqa: TL101\n', False),  # the next statement's noqa is not this line's
    ('f"""{\n1}"""  # noqa: TL101\n', True),  # the line ends inside a triple-quoted f-string
])
def test_where_a_findings_comment_goes_without_and_with_a_tokenize(tail, suppressed):
    source = "import torch\n\ndef f(x):\n    h = torch.relu(x)\n    return torch.log(h), " + tail
    assert [f.code for f in check_source(source, "m.py")] == ([] if suppressed else ["TL101"])


def test_a_finding_inside_a_multi_line_f_string_is_suppressed_where_the_string_ends():
    source = 'import torch\n\ndef f(x):\n    h = torch.relu(x)\n    s = f"""{\ntorch.log(h)}\n"""  # noqa: TL101\n'
    assert check_source(source, "m.py") == []
    assert [(f.code, f.line) for f in check_source(source.replace("  # noqa: TL101", ""), "m.py")] == [("TL101", 6)]


def test_line_endings_and_encoding_are_kept(project, capsys):
    text = "# -*- coding: latin-1 -*-\r\nimport torch\r\n\r\ndef f(x):\r\n    s = 'é'\r\n" \
           "    return torch.log(torch.relu(x)), s\r\n"
    path = project / "m.py"
    path.write_bytes(text.encode("latin-1"))
    assert run(["m.py", "--no-cache", "--add-noqa"], capsys)[0] == 0
    expected = text.replace("torch.relu(x)), s\r\n", "torch.relu(x)), s  # noqa: TL101\r\n")
    assert path.read_bytes() == expected.encode("latin-1")


def test_a_syntax_error_is_left_and_said(project, capsys):
    path = project / "broken.py"
    path.write_text("import torch\ndef f(:\n", encoding="utf-8")
    code, _, err = run(["broken.py", "--no-cache", "--add-noqa"], capsys)
    assert code == 1
    assert err.splitlines() == [
        "torchlint: note: not marked: broken.py:2: TL001: a syntax error cannot be suppressed with noqa",
        "Added noqa comments to 0 lines in 0 files."]
    assert path.read_text(encoding="utf-8") == "import torch\ndef f(:\n"
    assert run(["broken.py", "--no-cache", "--add-noqa", "--exit-zero"], capsys)[0] == 0


def test_notebook_cells_get_comments_magic_lines_are_said(project, capsys):
    cell = "%time y = torch.log(probs)\nloss = -torch.log(probs).mean()\nz = torch.log(probs) + len('''a\nb''')\n"
    text = notebook(("markdown", "# T\n"), SETUP, DEFINE, cell)
    path = project / "nb.ipynb"
    path.write_text(text, encoding="utf-8")
    code, _, err = run(["nb.ipynb", "--no-cache", "--add-noqa"], capsys)
    assert code == 1  # one finding stays: a magic line takes no comment
    assert err.splitlines() == [
        "torchlint: note: not marked: nb.ipynb:cell 4:1: TL102: a line with IPython syntax takes no comment",
        "Added noqa comments to 2 lines in 1 file."]
    after = path.read_text(encoding="utf-8")
    expected = cell.replace(".mean()\n", ".mean()  # noqa: TL102\n").replace("b''')\n", "b''')  # noqa: TL102\n")
    assert "".join(json.loads(after)["cells"][3]["source"]) == expected
    # nothing but those two source lines changed
    changed = [(a, b) for a, b in zip(text.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(changed) == 2 and all(b == a.replace('\\n"', '  # noqa: TL102\\n"') for a, b in changed)
    assert [(f.cell, f.line) for f in check_source(after, "nb.ipynb")] == [(4, 1)]
    run(["nb.ipynb", "--no-cache", "--add-noqa"], capsys)
    assert path.read_text(encoding="utf-8") == after


def test_add_noqa_refuses_what_it_cannot_do(project, capsys):
    (project / "m.py").write_text(BEFORE, encoding="utf-8")
    for args in (["m.py", "--fix"], ["m.py", "--diff"], ["m.py", "--baseline", "b.json"],
                 ["m.py", "--write-baseline", "b.json"], ["-"]):
        code, out, err = run([*args, "--add-noqa"], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("torchlint: error: --add-noqa ")
    assert (project / "m.py").read_text(encoding="utf-8") == BEFORE
