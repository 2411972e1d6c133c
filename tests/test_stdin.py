"""`torchlint -` and `--stdin-filename`: config by name, --fix to stdout, bad stdin."""

import io
import json
import subprocess
import sys

import pytest
from test_notebooks import NB

from torchlint.cli import main

BUGGY = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, dim=1)) / torch.log(x.relu())\n"
FIXED = "import torch\n\n\ndef f(x):\n    return torch.log_softmax(x, dim=1) / torch.log(x.relu())\n"


def run_stdin(args, data, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode() if isinstance(data, str) else data)))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_dash_reads_stdin(project, capsys, monkeypatch):
    code, out, err = run_stdin(["-"], BUGGY, capsys, monkeypatch)
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("-:5:12: TL102 [*] `torch.log(torch.softmax(x, dim=1))`")
    assert lines[1] == "  5 |     return torch.log(torch.softmax(x, dim=1)) / torch.log(x.relu())"
    assert "-:5:49: TL101" in out
    assert run_stdin(["check", "-", "--select", "TL101"], BUGGY, capsys, monkeypatch)[1].count("TL10") == 1
    assert run_stdin(["-"], "", capsys, monkeypatch)[:2] == (0, "All checks passed!\n")


def test_stdin_filename_applies_config_by_name(project, capsys, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.torchlint]\nexclude = ["generated"]\n'
                                            'per-file-ignores = { "tests/*" = ["TL102"] }\n')
    code, out, _ = run_stdin(["--stdin-filename", "src/m.py", "--output-format", "json"], BUGGY, capsys, monkeypatch)
    assert code == 1 and [(f["code"], f["filename"]) for f in json.loads(out)] == [
        ("TL102", "src/m.py"), ("TL101", "src/m.py")]
    code, out, _ = run_stdin(["--stdin-filename", "tests/t.py", "--output-format", "json"], BUGGY, capsys, monkeypatch)
    assert [f["code"] for f in json.loads(out)] == ["TL101"]
    assert run_stdin(["--stdin-filename", "generated/m.py"], BUGGY, capsys, monkeypatch) == (0, "", "")
    # excluded and --fix: the buffer comes back unchanged (an editor replaces its text with stdout)
    assert run_stdin(["--stdin-filename", "generated/m.py", "--fix"], BUGGY, capsys, monkeypatch) == (0, BUGGY, "")


def test_stdin_notebook_by_name(project, capsys, monkeypatch):
    code, out, _ = run_stdin(["-", "--stdin-filename", "analysis.ipynb"], NB, capsys, monkeypatch)
    assert code == 1 and out.startswith("analysis.ipynb:cell 5:2:9: TL102 `torch.log(probs)`")
    assert "  2 | loss = -torch.log(probs).mean()" in out
    fixable = NB.replace("torch.log(probs)", "torch.log(torch.softmax(probs, 1))")
    code, out, err = run_stdin(["--stdin-filename", "analysis.ipynb", "--fix"], fixable, capsys, monkeypatch)
    assert code == 0 and err == ""
    assert out == fixable.replace("torch.log(torch.softmax(probs, 1))", "torch.log_softmax(probs, 1)")


def test_fix_writes_source_to_stdout_and_findings_to_stderr(project, capsys, monkeypatch):
    code, out, err = run_stdin(["-", "--fix"], BUGGY, capsys, monkeypatch)
    assert (code, out) == (1, FIXED)
    assert err.startswith("-:5:42: TL101") and "Found 1 finding in 1 file." in err
    code, out, err = run_stdin(["-", "--fix", "--output-format", "json"], BUGGY, capsys, monkeypatch)
    assert out == FIXED and [f["code"] for f in json.loads(err)] == ["TL101"]
    assert run_stdin(["-", "--fix", "--ignore", "TL101"], BUGGY, capsys, monkeypatch) == (0, FIXED, "")
    code, out, _ = run_stdin(["-", "--diff"], BUGGY, capsys, monkeypatch)
    assert code == 1 and out.startswith("--- a/-\n+++ b/-\n") and "+    return torch.log_softmax(x" in out


def test_bad_stdin_is_a_one_line_error(project, capsys, monkeypatch):
    code, out, err = run_stdin(["-"], b"import torch\nx = '\xff'\n", capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err == "torchlint: error: stdin is not valid UTF-8 (invalid start byte at byte 18)\n"
    code, _, err = run_stdin(["-", "other.py"], BUGGY, capsys, monkeypatch)
    assert code == 2 and err == "torchlint: error: stdin (- or --stdin-filename) cannot be combined with other paths\n"


@pytest.mark.parametrize(("shell", "message"), [
    ('"$0" -m torchlint - <&-', "torchlint: error: stdin is closed: pipe the source in"),
    ('printf "x\\377" | "$0" -m torchlint --stdin-filename m.py', "torchlint: error: stdin is not valid UTF-8"),
])
def test_real_executable_closed_and_binary_stdin(project, shell, message):
    result = subprocess.run(["sh", "-c", shell, sys.executable], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1
