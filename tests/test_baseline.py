"""--write-baseline / --baseline: findings matched by code, path and code fingerprint, not by line."""

import json

import pytest
from test_notebooks import DEFINE, MISUSE, SETUP, notebook

from torchlint.cli import main

CODE = '''import torch


def f(x):
    h = torch.relu(x)
    a = torch.log(h)
    b = torch.log(h)
    return a + b


def g(x):
    h = torch.relu(x)
    return torch.log(h)
'''


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def lint(capsys, *extra):
    code, out, err = run(["m.py", "--no-cache", "--output-format", "concise", *extra], capsys)
    return code, out.splitlines(), err


@pytest.fixture
def baselined(project, capsys):
    (project / "m.py").write_text(CODE, encoding="utf-8")
    assert run(["m.py", "--no-cache", "--write-baseline", "baseline.json"], capsys) == (
        0, "", "Wrote 3 findings to the baseline baseline.json.\n")
    return project


def test_written_baseline_hides_every_current_finding(baselined, capsys):
    data = json.loads((baselined / "baseline.json").read_text(encoding="utf-8"))
    assert data["torchlint-baseline"] == 1
    assert [(e["code"], e["path"], e["line"], e["occurrence"]) for e in data["findings"]] == [
        ("TL101", "m.py", 6, 1), ("TL101", "m.py", 7, 1), ("TL101", "m.py", 13, 1)]
    assert lint(capsys, "--baseline", "baseline.json") == (
        0, [], "torchlint: the baseline baseline.json hid 3 findings.\n")


def test_edits_above_do_not_resurface_a_finding_but_changing_its_code_does(baselined, capsys):
    path = baselined / "m.py"
    path.write_text('"""Docs added later."""\n\nimport os\n' + CODE.replace("def g(x):\n", "def g(x):\n    y = 1\n"),
                    encoding="utf-8")
    assert lint(capsys, "--baseline", "baseline.json")[:2] == (0, [])
    path.write_text(CODE.replace("return torch.log(h)", "return torch.log(h) * 2"), encoding="utf-8")
    code, lines, err = lint(capsys, "--baseline", "baseline.json")
    assert code == 1 and err == "torchlint: the baseline baseline.json hid 2 findings.\n"
    assert [line.split(": ")[0:2] for line in lines] == [["m.py:13:12", "TL101 `torch.log(h)`"]]
    # moving a finding into another block changes its context: it is reported again
    path.write_text(CODE.replace("    return torch.log(h)\n", "    for _ in range(2):\n        return torch.log(h)\n"),
                    encoding="utf-8")
    assert [line.split(":")[1] for line in lint(capsys, "--baseline", "baseline.json")[1]] == ["14"]


def test_a_new_duplicate_of_a_baselined_line_is_reported_once(baselined, capsys):
    path = baselined / "m.py"
    path.write_text(CODE.replace("    return a + b\n", "    c = torch.log(h)\n    return a + b + c\n"), encoding="utf-8")
    code, lines, _ = lint(capsys, "--baseline", "baseline.json")
    assert code == 1 and [line.split(": ")[0] for line in lines] == ["m.py:8:9"]


def test_baseline_paths_are_relative_to_the_baseline_file(project, capsys, monkeypatch):
    (project / "src").mkdir()
    (project / "src" / "m.py").write_text(CODE, encoding="utf-8")
    assert run(["src", "--no-cache", "--write-baseline", "baseline.json"], capsys)[0] == 0
    assert {e["path"] for e in json.loads((project / "baseline.json").read_text())["findings"]} == {"src/m.py"}
    monkeypatch.chdir(project / "src")
    assert run(["m.py", "--no-cache", "--baseline", "../baseline.json"], capsys)[0] == 0


def test_notebook_findings_survive_a_cell_inserted_above(project, capsys):
    path = project / "nb.ipynb"
    path.write_text(notebook(SETUP, DEFINE, MISUSE), encoding="utf-8")
    assert run(["nb.ipynb", "--no-cache", "--write-baseline", "b.json"], capsys)[0] == 0
    [entry] = json.loads((project / "b.json").read_text())["findings"]
    assert (entry["code"], entry["cell"], entry["line"]) == ("TL102", 3, 2)
    path.write_text(notebook(("markdown", "# Intro\n"), SETUP, "import os\n", DEFINE, MISUSE), encoding="utf-8")
    assert run(["nb.ipynb", "--no-cache", "--baseline", "b.json"], capsys)[0] == 0
    path.write_text(notebook(SETUP, DEFINE, MISUSE.replace(".mean()", ".sum()")), encoding="utf-8")
    code, out, _ = run(["nb.ipynb", "--no-cache", "--baseline", "b.json"], capsys)
    assert code == 1 and out.startswith("nb.ipynb:cell 3:2:9: TL102")


def test_stdin_honours_a_baseline(baselined, capsys, monkeypatch):
    import io

    for text, expected in ((CODE, 0), (CODE.replace("a = torch.log(h)", "a = torch.log(h + h)"), 1)):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert run(["--stdin-filename", "m.py", "--baseline", "baseline.json"], capsys)[0] == expected


@pytest.mark.parametrize(("content", "message"), [
    (None, "baseline b.json: not found (create it with --write-baseline b.json)"),
    ('{"torchlint-baseline": 1, "findings": [', "baseline b.json: invalid JSON at line 1, column 40"),
    ("[]", "baseline b.json: not a torchlint baseline"),
    ('{"torchlint-baseline": 1, "findings": {}}', "baseline b.json: `findings` must be a list"),
    ('{"torchlint-baseline": 1, "findings": [{"code": "TL101", "path": "m.py"}]}',
     "baseline b.json: finding 1 has no text `fingerprint`"),
    ('{"torchlint-baseline": 1, "findings": [{"code": "TL101", "path": "m.py", "fingerprint": "ab", '
     '"occurrence": 0}]}', "baseline b.json: finding 1: `occurrence` must be a whole number from 1"),
])
def test_a_bad_baseline_is_a_one_line_error_before_any_work(project, capsys, content, message):
    (project / "m.py").write_text(CODE, encoding="utf-8")
    if content is not None:
        (project / "b.json").write_text(content, encoding="utf-8")
    code, out, err = run(["m.py", "--baseline", "b.json"], capsys)  # with the cache: nothing is written
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"torchlint: error: {message}")
    assert not (project / ".torchlint_cache").exists()


def test_write_baseline_refuses_what_makes_no_sense(baselined, capsys):
    for args in (["m.py", "--baseline", "baseline.json"], ["m.py", "--diff"], ["-"]):
        code, _, err = run([*args, "--write-baseline", "other.json"], capsys)
        assert code == 2 and err.startswith("torchlint: error: --write-baseline ") and err.count("\n") == 1
    assert not (baselined / "other.json").exists()
    code, _, err = run(["m.py", "--write-baseline", "missing/dir/b.json"], capsys)
    assert code == 2 and err.startswith("torchlint: error: cannot write baseline missing/dir/b.json")
