"""`torchlint run [options] train.py [script args]` as a user types it: arguments, -m, exit codes."""

import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("torch")

ECHO = """
import sys
import torch
print("argv", sys.argv[1:])
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
"""

ENDINGS = """
import os
import signal
import sys
import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
how = sys.argv[1]
if how == "interrupt":
    os.kill(os.getpid(), signal.SIGINT)
elif how == "message":
    sys.exit("no data found in ./data")
else:
    sys.exit(int(how))
"""

HELP = """
import argparse
import torch
parser = argparse.ArgumentParser(prog="train.py")
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
"""


def _main(capsys, *argv):
    from torchlint.cli import main

    code = main(["run", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_everything_after_the_script_path_is_the_scripts(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(ECHO)
    code, out, _ = _main(capsys, str(script), "--device=cpu", "--lr", "0.5", "--max-steps", "1", "--help")
    assert code == 0
    assert out.startswith("argv ['--device=cpu', '--lr', '0.5', '--max-steps', '1', '--help']\n")
    assert "train.py: 2 optimizer step(s) watched" in out
    code, out, _ = _main(capsys, "--max-steps", "1", str(script), "-x")
    assert code == 0 and out.startswith("argv ['-x']\n") and "train.py: 1 optimizer step(s) watched" in out
    # the former spelling: a `--` right after the script is dropped, as is one before the script
    code, out, _ = _main(capsys, str(script), "--", "--epochs", "3")
    assert out.startswith("argv ['--epochs', '3']\n")
    code, out, _ = _main(capsys, "--max-st=1", "--", str(script))
    assert code == 0 and out.startswith("argv []\n") and "1 optimizer step(s) watched" in out
    # a flag of torchlint's own (--sync) before the script, the same name after it is the script's
    code, out, _ = _main(capsys, "--sync", str(script), "--sync")
    assert code == 0 and out.startswith("argv ['--sync']\n") and "train.py: 2 optimizer step(s) watched" in out


def test_model_options_before_a_script_and_missing_targets_are_one_line_errors(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(ECHO)
    assert _main(capsys, "--lr", "0.5", str(script)) == (
        2, "", "torchlint: error: --lr applies to model targets (model.py:Net); a script's own arguments go after "
               "the script path: torchlint run [options] train.py [script args]\n")
    assert _main(capsys, str(tmp_path / "missing.py")) == (2, "", f"torchlint: error: file not found: "
                                                                   f"{tmp_path / 'missing.py'}\n")
    assert _main(capsys, "-m", "no_such_module_xyz") == (2, "", "torchlint: error: no module named "
                                                                "'no_such_module_xyz'\n")
    assert _main(capsys, "-m") == (2, "", "torchlint: error: -m needs a module name\n")
    code, _, err = _main(capsys)
    assert code == 2 and err.startswith("torchlint: error: run needs a script, -m MODULE or a model target")


def test_dash_m_runs_a_module_with_its_arguments(tmp_path, capsys, monkeypatch):
    package = tmp_path / "trainpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(ECHO)
    (package / "__main__.py").write_text(ECHO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = _main(capsys, "-m", "trainpkg.train", "--lr", "0.5")
    assert code == 0 and out.startswith("argv ['--lr', '0.5']\n")
    assert "trainpkg.train: 2 optimizer step(s) watched" in out
    code, out, _ = _main(capsys, "--max-steps", "1", "-mtrainpkg", "a")
    assert code == 0 and out.startswith("argv ['a']\n") and "trainpkg: 1 optimizer step(s) watched" in out


def _cli(tmp_path, *argv):
    return subprocess.run([sys.executable, "-m", "torchlint", "run", "--no-progress", *argv],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_exit_codes_are_the_scripts(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(ENDINGS)
    interrupted = _cli(tmp_path, str(script), "interrupt")
    assert interrupted.returncode == 130
    assert interrupted.stderr == "KeyboardInterrupt\n"
    assert interrupted.stdout.startswith("train.py: 2 optimizer step(s) watched\n")  # the partial report
    message = _cli(tmp_path, str(script), "message")
    assert (message.returncode, message.stderr) == (1, "no data found in ./data\n")
    assert message.stdout.startswith("train.py: 2 optimizer step(s) watched\n")
    assert _cli(tmp_path, str(script), "3").returncode == 3


def test_the_scripts_help_is_not_followed_by_a_report(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(HELP)
    code, out, err = _main(capsys, str(script), "--help")
    assert code == 0 and err == ""
    assert out == "usage: train.py [-h] [--lr LR]\n\noptions:\n  -h, --help  show this help message and exit\n  --lr LR\n"
    code, out, err = _main(capsys, str(script), "--bogus")
    assert code == 2 and out == ""
    assert err == "usage: train.py [-h] [--lr LR]\ntrain.py: error: unrecognized arguments: --bogus\n"


def test_the_scripts_own_traceback_starts_in_the_script(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("def main():\n    raise ValueError('bad config')\n\nmain()\n")
    code, out, err = _main(capsys, str(script))
    assert code == 1 and out.startswith("train.py: 0 optimizer step(s) watched\n")
    assert err.splitlines() == ["Traceback (most recent call last):",
                                f'  File "{script}", line 4, in <module>', "    main()",
                                f'  File "{script}", line 2, in main', "    raise ValueError('bad config')",
                                "ValueError: bad config"]


COMPILED = """
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(torch.log(x.abs().sum(-1, keepdim=True)) * self.fc(x))


model = torch.compile(Net(), backend="eager")  # Dynamo traces the forward, through the hooks
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    x = torch.randn(8, 4)
    if step == 4:
        x[2] = 0
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()
"""


def test_a_compiled_model_runs_and_its_nan_is_named_by_an_eager_replay(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(COMPILED)
    code, out, err = _main(capsys, str(script))
    assert code == 1, err
    assert "Traceback" not in err and "global hooks" not in err  # torch's warning about our hooks is ours
    [event] = [line for line in out.splitlines() if "TL901" in line]
    assert event.startswith(f"{script}:15: TL901 non-finite-forward: step 5: first non-finite output in `Net`, op "
                            "torch.log at train.py:15")
