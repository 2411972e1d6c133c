"""Jupyter notebooks: one program in cell order, magics, cell locations in every format, --fix."""

import json

import jsonschema
import pytest
from test_outputs import sarif_schema  # noqa: F401 (a fixture)

from torchlint import check_source
from torchlint.cli import main
from torchlint.config import Settings
from torchlint.static.magics import neutralise


def notebook(*cells, indent=1, ensure_ascii=False, as_string=False):
    """nbformat 4 JSON as Jupyter writes it; a cell is code text or ("markdown", text)."""
    out = {"cells": [], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
           "nbformat": 4, "nbformat_minor": 5}
    for number, cell in enumerate(cells):
        kind, text = cell if isinstance(cell, tuple) else ("code", cell)
        source = text if as_string else text.splitlines(keepends=True)
        entry = {"cell_type": kind, "id": f"cell-{number}", "metadata": {}, "source": source}
        if kind == "code":
            entry.update(execution_count=number, outputs=[
                {"name": "stdout", "output_type": "stream", "text": ["tensor(0.5000)\n"]}])
        out["cells"].append(entry)
    return json.dumps(out, indent=indent, ensure_ascii=ensure_ascii) + "\n"


SETUP = "import torch\nimport torch.nn.functional as F\n"
DEFINE = "def head(x):\n    return torch.softmax(x, dim=1)\n\nprobs = head(torch.randn(4, 3))\n"
MISUSE = "print(probs.shape)\nloss = -torch.log(probs).mean()\n"
NB = notebook(("markdown", "# Training\n"), SETUP, DEFINE, ("markdown", "Loss:\n"), MISUSE)


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def located(source, path="nb.ipynb", **kwargs):
    return [(f.code, f.cell, f.line, f.column) for f in check_source(source, path, **kwargs)]


def test_cells_are_one_program_in_order():
    # probs is defined in cell 3 and misused in cell 5; cells count markdown ones too
    assert located(NB) == [("TL102", 5, 2, 9)]


def test_text_json_sarif_and_github_locations(project, capsys, sarif_schema):  # noqa: F811
    (project / "nb.ipynb").write_text(NB, encoding="utf-8")
    code, out, _ = run(["nb.ipynb", "--no-cache"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("nb.ipynb:cell 5:2:9: TL102 `torch.log(probs)`")
    assert lines[1] == "  2 | loss = -torch.log(probs).mean()"
    [finding] = json.loads(run(["nb.ipynb", "--no-cache", "--output-format", "json"], capsys)[1])
    assert (finding["cell"], finding["location"], finding["end_location"]) == (
        5, {"row": 2, "column": 9}, {"row": 2, "column": 25})
    raw = NB.splitlines()
    stored = next(n for n, line in enumerate(raw, 1) if "loss = -torch.log(probs)" in line)
    column = raw[stored - 1].index("torch.log") + 1
    log = json.loads(run(["nb.ipynb", "--no-cache", "--output-format", "sarif"], capsys)[1])
    jsonschema.validate(log, sarif_schema)
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": stored, "startColumn": column, "endLine": stored, "endColumn": column + 16}
    assert result["properties"]["cell"] == 5 and result["properties"]["cellLine"] == 2
    github = run(["nb.ipynb", "--no-cache", "--output-format", "github"], capsys)[1]
    assert github.startswith(f"::warning file=nb.ipynb,line={stored},col={column},endLine={stored},")
    assert "::TL102 cell 5: `torch.log(probs)`" in github


@pytest.mark.parametrize("style", [dict(indent=1), dict(indent=4), dict(indent=None), dict(as_string=True),
                                   dict(ensure_ascii=True)])
def test_raw_position_follows_the_file_layout(style):
    text = notebook(SETUP, "s = 'é€'; p = torch.softmax(torch.randn(2, 2), 1)\nq = torch.log(p)\n", **style)
    [finding] = check_source(text, "nb.ipynb")
    line, column, _, end_column = finding.notebook_span
    raw_line = text.splitlines()[line - 1]
    decoded_at = raw_line[column - 1:end_column - 1]
    assert decoded_at == "torch.log(p)"


@pytest.mark.parametrize(("cell", "expected"), [
    ("%matplotlib inline\n!pip install torch\n", "pass\npass\n"),
    ("files = !ls\nout = %sx ls\n", "files = _ipython_\nout = _ipython_\n"),
    ("%time y = f(x)\nt = %timeit -o f(x)\n", "0;    y = f(x)\nt = _ipython_\n"),
    ("?torch.log\ntorch.log??\nx = 1  # why?\n", "pass\npass\nx = 1  # why?\n"),
    ("for i in range(2):\n    !echo {i}\n", "for i in range(2):\n    pass\n"),
    ('s = """\n!not a magic\n%neither\nwhat?\n"""\n', 's = """\n!not a magic\n%neither\nwhat?\n"""\n'),
    ("%%bash\necho torch.log\n", "\n\n"),
    ("%%time\nx = 1\n", "\nx = 1\n"),
    ("%cd \\\n   far\nx = 1\n", "pass\n\nx = 1\n"),
])
def test_magics_keep_lines_and_columns(cell, expected):
    assert neutralise(cell).text == expected


def test_magics_around_findings_do_not_shift_lines():
    cells = [SETUP + "%load_ext autoreload\n!nvidia-smi\n",
             "%%capture\np = torch.softmax(torch.randn(2, 2), 1)\n",
             "%%bash\npython -c 'torch.log(torch.softmax(x, 1))'\n",
             "?p\nfiles = !ls\n%time y = torch.log(p)\nz = torch.log(p)  # noqa: TL102\nw = torch.log(p)\n"]
    assert located(notebook(*cells)) == [("TL102", 4, 3, 11), ("TL102", 4, 5, 5)]


def test_syntax_error_is_per_cell_and_the_rest_is_checked():
    text = notebook(SETUP, "x = (1,\n", DEFINE, "def broken(:\n    pass\n", MISUSE)
    assert located(text) == [("TL001", 2, 1, 5), ("TL001", 4, 1, 12), ("TL102", 5, 2, 9)]
    assert located(text, settings=Settings(ignore=["TL001"])) == [("TL102", 5, 2, 9)]


def test_a_cell_indented_as_ipython_runs_it_is_read_dedented_with_its_own_columns(project, capsys):
    # IPython strips the first line's indentation from every line: the cell runs, Python alone rejects it
    pasted = " # pasted\n probs = torch.softmax(torch.randn(2, 3), 1)\n loss = -torch.log(probs).mean()\n"
    text = notebook(SETUP, pasted)
    assert located(text) == [("TL102", 2, 3, 10)]
    (project / "nb.ipynb").write_text(text)
    code, out, _ = run([str(project / "nb.ipynb"), "--fix"], capsys)
    assert code == 1 and (project / "nb.ipynb").read_text() == text  # its lines are rewritten: no fix offered
    # a later line that does not start with the first one's indentation is a syntax error, as in IPython
    assert located(notebook(SETUP, " x = 1\ny = 2\n")) == [("TL001", 2, 1, 1)]


def test_exercise_blanks_are_read_as_ellipsis_and_the_rest_of_the_cell_is_checked():
    blanks = ("# TODO: build the model\nmodel = \ncriterion = pass\nn_epochs =  # start small\n\n"
              "def real_loss(d_out):\n    # how close to real?\n    \n\n"
              "for epoch in range(3):\n    # your training loop\n\n"
              "probs = torch.softmax(torch.randn(2, 3), 1)\nloss = -torch.log(probs).mean()\n")
    assert located(notebook(SETUP, blanks)) == [("TL102", 2, 14, 9)]
    # not a blank: an unclosed bracket, a comparison with nothing after it, and a `.py` file with a blank
    assert located(notebook(SETUP, "x = (\n")) == [("TL001", 2, 1, 5)]
    assert located(notebook(SETUP, "ok = x ==\n")) == [("TL001", 2, 1, 10)]
    assert [(f.code, f.line) for f in check_source("import torch\nmodel = \n", "train.py")] == [("TL001", 2)]


def test_line_magics_typed_without_percent_run_through_automagic():
    # Time-Series-Library's tutorial opens with `pip install -r requirements.txt`: IPython runs it as %pip
    cell = ("pip install -r requirements.txt\ncd ..\n"
            "probs = torch.softmax(torch.randn(2, 3), 1)\nloss = -torch.log(probs).mean()\n")
    assert located(notebook(SETUP, cell)) == [("TL102", 2, 4, 9)]
    # a name used as a value is Python (`pip = 3`, `ls -la` subtracts); a shell line that is no magic is an error
    assert located(notebook(SETUP, "pip = 3\nls -la\n")) == []
    assert located(notebook(SETUP, "python -u run.py --model TimesNet\n")) == [("TL001", 2, 1, 11)]
    # a `.py` file gets no such reading
    assert [(f.code, f.line) for f in check_source("import torch\npip install x\n", "a.py")] == [("TL001", 2)]


@pytest.mark.parametrize(("text", "message", "line"), [
    ('{"cells": [\n  {"cell_type": "code",,}\n]}', "not a notebook: invalid JSON: Expecting property name", 2),
    ("", "not a notebook: invalid JSON: Expecting value", 1),
    ('{"nbformat": 3, "worksheets": []}', "unsupported notebook format: nbformat 3", 1),
    ('["cells"]', "not a notebook: no `cells` list", 1),
])
def test_invalid_notebooks_are_tl002_findings(project, capsys, text, message, line):
    (project / "bad.ipynb").write_text(text, encoding="utf-8")
    (project / "ok.py").write_text(SETUP + "x = torch.log(torch.softmax(torch.randn(2, 2), 1))\n")
    code, out, err = run([".", "--no-cache", "--output-format", "json"], capsys)
    assert code == 1 and err == ""
    found = [(f["code"], f["filename"], f["cell"], f["location"]["row"]) for f in json.loads(out)]
    assert found == [("TL002", "bad.ipynb", None, line), ("TL102", "ok.py", None, 3)]
    assert json.loads(out)[0]["message"].startswith(message)


@pytest.mark.parametrize("text", [
    notebook(),
    notebook(("markdown", "import torch\ntorch.log(torch.softmax(x, 1))\n"), ("raw", "torch.log\n")),
    notebook("%matplotlib inline\n", "!pip install torch\n", "%%bash\necho torch\n", ""),
    notebook("import torch\n", "", "\n\n"),
])
def test_empty_notebooks_no_code_cells_and_only_magics_pass(project, capsys, text):
    (project / "nb.ipynb").write_text(text, encoding="utf-8")
    assert run(["nb.ipynb", "--no-cache"], capsys)[:2] == (0, "All checks passed!\n")


def test_fix_rewrites_only_the_changed_cells_source(project, capsys):
    cells = [SETUP, "p = torch.softmax(torch.randn(2, 2), 1)\n",
             "a = torch.log(torch.softmax(p, 1))\n%time b = torch.log(torch.softmax(p, 1))\nc = 1",
             "d = torch.log(torch.sigmoid(p))  # é"]
    for style in (dict(indent=1), dict(indent=2, ensure_ascii=True), dict(indent=None)):
        before = notebook(*cells, **style).replace('"nbformat": 4', '"zzz": {"kept": [1, 2.50]}, "nbformat": 4')
        path = project / "nb.ipynb"
        path.write_text(before, encoding="utf-8")
        diff = run(["nb.ipynb", "--no-cache", "--diff"], capsys)
        assert diff[0] == 1 and path.read_text(encoding="utf-8") == before
        assert diff[1].startswith("--- a/nb.ipynb:cell 3\n+++ b/nb.ipynb:cell 3\n")
        code, out, err = run(["nb.ipynb", "--no-cache", "--fix", "--output-format", "json"], capsys)
        assert "Fixed 2 findings in 1 file." in err
        # the magic line is reported but not rewritten (its fix would write the rewrite back)
        assert [(f["cell"], f["location"]["row"], f["fix"]) for f in json.loads(out)] == [(3, 2, None)]
        after = path.read_text(encoding="utf-8")
        old_data, new_data = json.loads(before), json.loads(after)
        assert "".join(new_data["cells"][2]["source"]) == (
            "a = torch.log_softmax(p, 1)\n%time b = torch.log(torch.softmax(p, 1))\nc = 1")
        assert "".join(new_data["cells"][3]["source"]) == "d = F.logsigmoid(p)  # é"
        for index in (0, 1):
            assert new_data["cells"][index] == old_data["cells"][index]
        for data in (old_data, new_data):
            for cell in data["cells"]:
                cell["source"] = None
        assert new_data == old_data and list(new_data) == list(old_data)
        changed = [n for n, (a, b) in enumerate(zip(before.splitlines(), after.splitlines(), strict=True)) if a != b]
        assert len(changed) == (1 if style["indent"] is None else 2)
        assert run(["nb.ipynb", "--no-cache", "--fix"], capsys)[2] == "Fixed 0 findings in 0 files.\n"


def test_fixed_notebook_is_valid_for_nbformat(project, capsys):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(SETUP + "p = torch.softmax(torch.randn(2, 2), 1)\n"),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("loss = torch.log(torch.softmax(p, 1)).sum()")])
    before = nbformat.writes(nb)
    (project / "nb.ipynb").write_text(before, encoding="utf-8")
    assert run(["nb.ipynb", "--no-cache", "--fix"], capsys)[0] == 0
    after = (project / "nb.ipynb").read_text(encoding="utf-8")
    fixed = nbformat.reads(after, as_version=4)
    nbformat.validate(fixed)
    assert fixed.cells[2].source == "loss = torch.log_softmax(p, 1).sum()"
    fixed.cells[2].source = nb.cells[2].source
    assert nbformat.writes(fixed) == before


def test_discovered_by_default_include_and_cached(project, capsys):
    (project / "sub").mkdir()
    (project / "sub" / "nb.ipynb").write_text(NB, encoding="utf-8")
    (project / "sub" / "train.py").write_text(SETUP + "x = torch.log(torch.softmax(torch.randn(2, 2), 1))\n")
    code, out, _ = run([".", "--output-format", "json"], capsys)
    assert [(f["filename"], f["cell"]) for f in json.loads(out)] == [("sub/nb.ipynb", 5), ("sub/train.py", None)]
    cache = next((project / ".torchlint_cache").glob("v*.json"))
    data = json.loads(cache.read_text())
    key = next(k for k, v in data.items() if v["findings"] and v["findings"][0]["cell"] == 5)
    data[key]["findings"][0]["message"] = "from cache"
    cache.write_text(json.dumps(data))
    again = json.loads(run([".", "--output-format", "json"], capsys)[1])
    assert again[0]["message"] == "from cache" and again[0]["cell"] == 5
    (project / "pyproject.toml").write_text('[tool.torchlint]\ninclude = ["*.py"]\n')
    assert [f["filename"] for f in json.loads(run([".", "--no-cache", "--output-format", "json"], capsys)[1])] == [
        "sub/train.py"]
    (project / "pyproject.toml").write_text('[tool.torchlint]\ninclude = ["*.py"]\nextend-include = ["*.ipynb"]\n'
                                            'per-file-ignores = { "*.ipynb" = ["TL102"] }\n')
    assert [f["filename"] for f in json.loads(run([".", "--no-cache", "--output-format", "json"], capsys)[1])] == [
        "sub/train.py"]
    (project / "pyproject.toml").write_text('[tool.torchlint]\ninclude = "*.py"\n')
    assert run([".", "--no-cache"], capsys)[0] == 2


def test_notebook_imports_the_projects_modules(project, capsys):
    (project / "pyproject.toml").write_text("[tool.torchlint]\n")
    (project / "net.py").write_text("import torch\ndef head(x):\n    return torch.softmax(x, 1)\n")
    (project / "nb.ipynb").write_text(notebook("import torch\nfrom net import head\n",
                                               "p = head(torch.randn(2, 2))\nl = torch.log(p)\n"))
    out = run(["nb.ipynb", "--no-cache", "--output-format", "json"], capsys)[1]
    assert [(f["code"], f["cell"], f["location"]["row"]) for f in json.loads(out)] == [("TL102", 2, 2)]


def test_damaged_notebooks_and_odd_cells_never_crash():
    all_rules = Settings(select=["ALL"])
    text = notebook(SETUP + "%time x = 1\n", DEFINE, "s = '''\n!x\n'''\n?probs\n", MISUSE, "%%bash\nls\n")
    for cut in range(0, len(text), 23):  # truncated files: TL002 at the place the JSON breaks
        findings = check_source(text[:cut], "nb.ipynb", all_rules)
        assert all(f.code == "TL002" for f in findings)
    for line in ["!", "%", "?", "%%", "x = !", "%time", "%time -n", "a = (!ls", "\\", "'''", "#?", "x?  # ?"]:
        check_source(notebook(SETUP, line, MISUSE), "nb.ipynb", all_rules)
        assert neutralise(line + "\n").text.count("\n") == 1
