"""The pre-commit hook, installed and run by pre-commit itself (`pre-commit try-repo`)."""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from test_notebooks import NB, notebook

pytestmark = pytest.mark.slow

BUGGY = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, dim=1))\n"
CLEAN = "import torch\n\n\ndef f(x):\n    return torch.log_softmax(x, dim=1)\n"


def test_try_repo_fails_on_buggy_python_and_notebooks_and_passes_on_clean(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "bad.py").write_text(BUGGY)
    (scratch / "good.py").write_text(CLEAN)
    (scratch / "bad.ipynb").write_text(NB)
    (scratch / "good.ipynb").write_text(notebook(CLEAN, "f(torch.randn(2, 2))\n"))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "TORCHLINT_STRICT": ""}
    subprocess.run(["git", "init", "-q"], cwd=scratch, check=True)
    subprocess.run(["git", "add", "."], cwd=scratch, check=True)

    def try_repo(*files):
        command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "torchlint", "--files", *files]
        return subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)

    clean = try_repo("good.py", "good.ipynb")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout
    buggy = try_repo("bad.py", "good.py")
    assert buggy.returncode == 1, buggy.stdout + buggy.stderr
    assert "Failed" in buggy.stdout and "bad.py:5:12: TL102" in buggy.stdout
    assert "good.py" not in buggy.stdout.split("TL102", 1)[1]
    notebook_run = try_repo("bad.ipynb", "good.ipynb", "good.py")
    assert notebook_run.returncode == 1, notebook_run.stdout + notebook_run.stderr
    assert "bad.ipynb:cell 5:2:9: TL102 `torch.log(probs)`" in notebook_run.stdout
    assert "Found 1 finding in 1 file." in notebook_run.stdout
