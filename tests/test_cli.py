"""The command line as users run it: exit codes, selection, config, suppression, cache, jobs."""

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import FIXTURES

from torchlint.cli import main

BUGGY = textwrap.dedent("""\
    import torch

    def f(x):
        h = torch.relu(x)
        return torch.log(h) / h.norm()
    """)
CLEAN = "import torch\n\ndef f(x):\n    return torch.log_softmax(x, -1)\n"


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_bare_path_and_check_subcommand(project, capsys):
    write(project / "src" / "m.py", BUGGY)
    code, out, _ = run(["src", "--no-cache"], capsys)
    assert code == 1
    assert "src/m.py:5:12: TL101" in out
    assert "src/m.py:5:12: TL106" in out
    assert "Found 2 findings in 1 file." in out
    code2, out2, _ = run(["check", "src", "--no-cache"], capsys)
    assert (code2, out2) == (code, out)


def test_clean_exit_zero_and_exit_zero_flag(project, capsys):
    write(project / "ok.py", CLEAN)
    write(project / "bad.py", BUGGY)
    assert run(["ok.py", "--no-cache"], capsys)[0] == 0
    assert run(["bad.py", "--no-cache", "--exit-zero"], capsys)[0] == 0


def test_text_output_has_caret_and_help(project, capsys):
    write(project / "bad.py", BUGGY)
    _, out, _ = run(["bad.py", "--no-cache", "--select", "TL101"], capsys)
    lines = out.splitlines()
    assert lines[1] == "  5 |     return torch.log(h) / h.norm()"
    assert lines[2] == "    |            ^" + "~" * len("torch.log(h)"[1:])
    assert lines[3].startswith("  = help: ")


@pytest.mark.parametrize(("args", "codes"), [
    (["--select", "TL101"], {"TL101"}),
    (["--select", "TL1"], {"TL101", "TL106"}),
    (["--ignore", "TL106"], {"TL101"}),
    (["--select", "TL105", "--extend-select", "TL106"], {"TL106"}),
    (["--select", "ALL", "--ignore", "TL10"], set()),
])
def test_selection(project, capsys, args, codes):
    write(project / "bad.py", BUGGY)
    _, out, _ = run(["bad.py", "--no-cache", "--output-format", "json", *args], capsys)
    assert {f["code"] for f in json.loads(out)} == codes


@pytest.mark.parametrize("args", [
    ["--select", "TL999"],
    ["--ignore", "XYZ1"],
    ["--output-format", "xml"],
    ["missing_dir/"],
    ["--config", "nope.toml"],
    ["--jobs", "0"],
])
def test_usage_errors_are_one_line_exit_2(project, capsys, args):
    write(project / "bad.py", BUGGY)
    code, out, err = run(["bad.py", *args] if args[0].startswith("-") else args, capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("torchlint: error:")


def test_syntax_error_and_non_utf8_are_findings_and_the_run_goes_on(project, capsys):
    write(project / "broken.py", "import torch\ndef f(:\n    pass\n")
    (project / "latin1.py").write_bytes("import torch\n# caf\xe9\n".encode("latin-1"))
    write(project / "bad.py", BUGGY)
    code, out, _ = run([".", "--no-cache", "--output-format", "json"], capsys)
    found = {(f["filename"], f["code"], f["location"]["row"]) for f in json.loads(out)}
    assert code == 1
    assert ("broken.py", "TL001", 2) in found
    assert ("latin1.py", "TL002", 2) in found  # the line of the byte Python rejects
    assert ("bad.py", "TL101", 5) in found


def test_no_traceback_from_the_real_executable(project):
    write(project / "broken.py", "import torch\nx = (\n")
    result = subprocess.run([sys.executable, "-m", "torchlint", "broken.py", "nothere.py"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    result = subprocess.run([sys.executable, "-m", "torchlint", "broken.py", "--no-cache"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "TL001" in result.stdout and "Traceback" not in result.stderr


def test_noqa_and_file_ignore(project, capsys):
    write(project / "a.py", BUGGY.replace("h.norm()", "h.norm()  # noqa: TL106"))
    write(project / "b.py", BUGGY.replace("h.norm()", "h.norm()  # noqa"))
    write(project / "c.py", "# torchlint: file-ignore[TL101]\n" + BUGGY)
    write(project / "d.py", "# torchlint: file-ignore\n" + BUGGY)
    _, out, _ = run([".", "--no-cache", "--output-format", "json"], capsys)
    found = {(f["filename"], f["code"]) for f in json.loads(out)}
    assert found == {("a.py", "TL101"), ("c.py", "TL106")}


def test_pyproject_config(project, capsys):
    write(project / "pyproject.toml", textwrap.dedent("""\
        [tool.torchlint]
        ignore = ["TL106"]
        exclude = ["generated"]
        per-file-ignores = {"tests/*" = ["TL1"]}

        [tool.torchlint.TL120]
        max-lr-adaptive = 0.5
        """))
    write(project / "pkg" / "m.py", BUGGY)
    write(project / "generated" / "g.py", BUGGY)
    write(project / "tests" / "t.py", BUGGY)
    write(project / "pkg" / "opt.py", "import torch\nopt = torch.optim.Adam([], lr=0.1)\n")
    _, out, _ = run([".", "--no-cache", "--output-format", "json"], capsys)
    assert {(f["filename"], f["code"]) for f in json.loads(out)} == {("pkg/m.py", "TL101")}


@pytest.mark.parametrize(("toml", "message"), [
    ("[tool.torchlint]\nselec = ['TL1']\n", "unknown key [tool.torchlint] selec"),
    ("[tool.torchlint]\nselect = ['TL777']\n", "unknown rule selector(s): TL777"),
    ("[tool.torchlint.TL120]\nmax_lr = 1\n", "unknown option TL120.max_lr"),
    ("[tool.torchlint.TL101]\nmin-eps = 'big'\n", "option TL101.min-eps must be a number"),
    ("[tool.torchlint\n", "invalid TOML"),
])
def test_bad_config_exit_2(project, capsys, toml, message):
    write(project / "pyproject.toml", toml)
    write(project / "m.py", BUGGY)
    code, _, err = run(["m.py", "--no-cache", "--config", "pyproject.toml"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_rule_options_change_results(project, capsys):
    write(project / "pyproject.toml", "[tool.torchlint.TL101]\nmin-eps = 1e-12\n")
    write(project / "m.py", "import torch\ndef f(x):\n    return torch.log(x - x.min() + 1e-9)\n")
    assert run(["m.py", "--no-cache"], capsys)[0] == 0
    (project / "pyproject.toml").write_text("[tool.torchlint]\n")
    assert run(["m.py", "--no-cache"], capsys)[0] == 1


def test_cache_is_tagged_reused_and_invalidated(project, capsys):
    target = write(project / "m.py", BUGGY)
    first = run(["m.py", "--output-format", "json"], capsys)
    cache = project / ".torchlint_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    entries = next(cache.glob("v*.json"))
    data = json.loads(entries.read_text())
    assert len(data) == 2 and "__modules__" in data  # one entry, and the project modules' facts
    # a poisoned entry proves the second run reads the cache instead of re-linting
    key = next(k for k in data if k != "__modules__")
    data[key]["findings"][0]["message"] = "from cache"
    entries.write_text(json.dumps(data))
    second = run(["m.py", "--output-format", "json"], capsys)
    assert "from cache" in second[1] and second[0] == first[0]
    target.write_text(CLEAN)
    third = run(["m.py", "--output-format", "json"], capsys)
    assert third[0] == 0 and json.loads(third[1]) == []


def test_cache_entry_is_invalidated_when_an_imported_module_changes(project, capsys):
    write(project / "pyproject.toml", "[tool.torchlint]\n[tool.torchlint.TL103]\nmode = \"always\"\n")
    write(project / "net.py", "import torch.nn as nn\nclass Net(nn.Module):\n"
          "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 1)\n"
          "    def forward(self, x):\n        return self.fc(x).sigmoid()\n")
    write(project / "train.py", "import torch.nn.functional as F\nfrom net import Net\n"
          "def loss(x, y):\n    return F.binary_cross_entropy(Net()(x), y)\n")
    first = run(["train.py", "--output-format", "json"], capsys)
    assert first[0] == 1 and [(f["code"], f["location"]["row"]) for f in json.loads(first[1])] == [("TL103", 4)]
    # train.py is unchanged, but the model it imports now returns raw logits
    (project / "net.py").write_text((project / "net.py").read_text().replace(".sigmoid()", ""))
    second = run(["train.py", "--output-format", "json"], capsys)
    assert [(f["code"], f["location"]["row"]) for f in json.loads(second[1])] == [("TL118", 4)]


def test_an_edit_importers_cannot_see_keeps_their_cache_entries(project, capsys):
    """Early cutoff: net.py changes (a comment, a new helper) but Net's facts do not, so train.py's
    entry is still used (a poisoned message proves it); a change to Net's output re-analyses it."""
    write(project / "pyproject.toml", "[tool.torchlint]\n[tool.torchlint.TL103]\nmode = \"always\"\n")
    net = write(project / "net.py", "import torch.nn as nn\nclass Net(nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 1)\n"
                "    def forward(self, x):\n        return self.fc(x).sigmoid()\n")
    write(project / "train.py", "import torch.nn.functional as F\nfrom net import Net\n"
          "def loss(x, y):\n    return F.binary_cross_entropy(Net()(x), y)\n")
    run(["train.py", "--output-format", "json"], capsys)
    entries = next((project / ".torchlint_cache").glob("v*.json"))
    data = json.loads(entries.read_text())
    key = next(k for k in data if k != "__modules__")
    data[key]["findings"][0]["message"] = "from cache"
    entries.write_text(json.dumps(data))
    net.write_text(net.read_text() + "\n\n# a comment\ndef helper(n):\n    return n + 1\n")
    kept = run(["train.py", "--output-format", "json"], capsys)
    assert [f["message"] for f in json.loads(kept[1])] == ["from cache"]
    net.write_text(net.read_text().replace(".sigmoid()", ".relu()"))
    changed = run(["train.py", "--output-format", "json"], capsys)
    assert "from cache" not in changed[1]


def test_jobs_give_the_same_ordered_output(capsys):
    single = run([str(FIXTURES), "--no-cache", "-j", "1", "--output-format", "json"], capsys)[1]
    double = run([str(FIXTURES), "--no-cache", "-j", "2", "--output-format", "json"], capsys)[1]
    assert single == double and len(json.loads(single)) > 20


def test_statistics_and_output_file(project, capsys):
    write(project / "m.py", BUGGY)
    code, out, _ = run(["m.py", "--no-cache", "--statistics"], capsys)
    assert code == 1
    assert out.splitlines() == ["    1\tTL101\t[*] unguarded-log", "    1\tTL106\t    unguarded-division"]
    run(["m.py", "--no-cache", "--output-format", "json", "-o", "report.json"], capsys)
    assert len(json.loads((project / "report.json").read_text())) == 2


def test_rules_and_rule_commands(capsys):
    code, out, _ = run(["rules"], capsys)
    assert code == 0
    assert any(line.startswith("TL102   log-of-probability") and line.endswith("yes") for line in out.splitlines())
    code, out, _ = run(["rule", "TL104"], capsys)
    assert code == 0 and out.startswith("# TL104 hand-written-bce") and "## Use instead" in out
    assert run(["rule", "unguarded-log"], capsys)[1].startswith("# TL101")
    assert run(["rule", "TL999"], capsys)[0] == 2


def test_user_files_are_not_modified(project, capsys):
    target = write(project / "m.py", BUGGY)
    before = target.read_bytes()
    run(["m.py", "--output-format", "sarif"], capsys)
    assert target.read_bytes() == before


def test_force_exclude_applies_to_named_files(project, capsys):
    write(project / "pyproject.toml", '[tool.torchlint]\nexclude = ["generated"]\n')
    write(project / "generated" / "g.py", BUGGY)
    assert run(["generated/g.py", "--no-cache"], capsys)[0] == 1
    assert run(["generated/g.py", "--no-cache", "--force-exclude"], capsys)[0] == 0


@pytest.mark.parametrize("args", [["rule", "TL101"], [str(FIXTURES), "--no-cache"]])
def test_closed_pipe_is_not_a_traceback(args):
    # The reader goes away before torchlint writes (as with `torchlint ... | head -1`).
    child = subprocess.Popen([sys.executable, "-m", "torchlint", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    child.wait()
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
