"""The GitHub Action (action.yml): its structure, and its run steps executed here with inputs filled in.

The steps run under bash as the runner would run them: `${{ ... }}` expressions substituted,
GITHUB_OUTPUT and RUNNER_TEMP set, `if:` conditions evaluated. torchlint is installed without
network into a scratch virtualenv that sees this environment's packages (libcst, the build
backend): from this checkout, or as a pinned version from a wheel built from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BUGGY = "import torch\n\nx = torch.randn(3)\ny = torch.log(torch.softmax(x, dim=0))\n"


def test_structure():
    assert set(ACTION["inputs"]) == {"paths", "args", "version", "sarif"}
    assert all(spec.get("description") and "default" in spec for spec in ACTION["inputs"].values())
    assert ACTION["inputs"]["sarif"]["default"] == "false" and ACTION["inputs"]["paths"]["default"] == "."
    assert ACTION["runs"]["using"] == "composite"
    for step in STEPS:
        assert step.get("name")
        if "run" in step:
            assert step["shell"] == "bash"
            # inputs reach scripts through env only: a value is never spliced into shell code
            assert "${{" not in step["run"]
        else:
            assert "shell" not in step
    upload = next(step for step in STEPS if "uses" in step)
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    assert "inputs.sarif == 'true'" in upload["if"]
    assert upload["with"]["sarif_file"] == "${{ steps.lint.outputs.sarif-file }}"
    assert set(ACTION["outputs"]) == {"exit-code", "sarif-file"}


class Runner:
    """Runs the action's steps in order, as a composite action's runner would (enough of it)."""

    def __init__(self, tmp: Path, inputs: dict[str, str], env: dict[str, str], skip: tuple[str, ...] = ()) -> None:
        self.inputs = {name: str(spec["default"]) for name, spec in ACTION["inputs"].items()} | inputs
        self.outputs: dict[str, dict[str, str]] = {}
        self.tmp = tmp
        self.env = env
        self.log: list[tuple[str, int, str]] = []  # step name, exit code, stdout + stderr
        self.skip = skip  # steps (by name) not run

    def value(self, path: str) -> str:
        if path == "github.action_path":
            return str(ROOT)
        parts = path.split(".")
        if parts[0] == "inputs":
            return self.inputs[parts[1]]
        if parts[0] == "steps" and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"expression not understood by the test runner: {path}")

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), str(text))

    def condition(self, text: str) -> bool:
        """`a == 'b' && c != ''`: the only form this action uses."""
        result = True
        for clause in EXPRESSION.sub(r"\1", text).split("&&"):
            left, op, right = re.fullmatch(r"\s*(\S+)\s*(==|!=)\s*(\S+)\s*", clause).groups()
            def operand(token):
                return token[1:-1] if token.startswith("'") else self.value(token)
            result &= (operand(left) == operand(right)) == (op == "==")
        return result

    def run(self) -> int:
        for step in STEPS:
            if step["name"] in self.skip or ("if" in step and not self.condition(step["if"])):
                continue
            if "uses" in step:  # the upload: no network here; what it would be given is checked
                self.log.append((step["name"], 0, json.dumps({k: self.substitute(v) for k, v in step["with"].items()})))
                continue
            output = self.tmp / f"output-{len(self.log)}"
            output.write_text("")
            env = {**self.env, **{k: self.substitute(v) for k, v in step.get("env", {}).items()},
                   "GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(self.tmp)}
            script = self.tmp / "step.sh"
            script.write_text(step["run"])
            # as GitHub runs `shell: bash`
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, cwd=self.tmp / "repo",
                                  capture_output=True, text=True, timeout=600)
            self.log.append((step["name"], done.returncode, done.stdout + done.stderr))
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
            if done.returncode != 0:
                return done.returncode
        return 0

    def text(self) -> str:
        return "\n".join(text for _, _, text in self.log)


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """A scratch virtualenv without pip of its own (it sees this environment's site-packages), with
    torchlint installed from the checkout."""
    base = tmp_path_factory.mktemp("runner")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (purelib / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(base),
           "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_NO_CACHE_DIR": "1"}
    installed = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "--quiet", str(ROOT)], env=env,
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    return base, bindir, env


def project(tmp: Path) -> None:
    (tmp / "repo" / "src").mkdir(parents=True)
    (tmp / "repo" / "src" / "train.py").write_text(BUGGY)
    (tmp / "repo" / "src" / "clean.py").write_text("import torch\n\nprint(torch.zeros(1))\n")


@pytest.mark.slow
def test_installs_the_checkout_and_annotates(machine, tmp_path):
    base, bindir, env = machine
    project(tmp_path)
    runner = Runner(tmp_path, {"paths": "src/train.py src/clean.py", "args": "--no-cache"}, env)
    assert runner.run() == 1, runner.text()  # findings fail the job
    assert (bindir / "torchlint").exists()
    assert "torchlint 0.1.0" in runner.log[0][2]
    annotations = [line for line in runner.log[1][2].splitlines() if line.startswith("::")]
    assert len(annotations) == 1 and annotations[0].startswith("::warning file=src/train.py,line=4,col=5,")
    assert "TL102" in annotations[0] and runner.outputs["lint"] == {"exit-code": "1"}

    # sarif: the upload gets the file, then the job fails on the findings; --exit-zero passes
    installed = ("Install torchlint",)
    runner = Runner(tmp_path, {"paths": "src", "args": "--no-cache", "sarif": "true"}, env, skip=installed)
    assert runner.run() == 1, runner.text()
    names = [name for name, _, _ in runner.log]
    assert names == ["Run torchlint", "Upload SARIF to code scanning", "Report the result"]
    sarif_file = runner.outputs["lint"]["sarif-file"]
    assert json.loads(runner.log[1][2]) == {"sarif_file": sarif_file, "category": "torchlint"}
    report = json.loads(Path(sarif_file).read_text())
    assert report["version"] == "2.1.0"
    assert [r["ruleId"] for r in report["runs"][0]["results"]] == ["TL102"]
    runner = Runner(tmp_path, {"paths": "src", "args": "--no-cache --exit-zero", "sarif": "true"}, env, skip=installed)
    assert runner.run() == 0, runner.text()


@pytest.mark.slow
@pytest.mark.parametrize(("inputs", "message"), [
    ({"sarif": "yes"}, "::error title=torchlint::input sarif must be true or false, not 'yes'"),
    ({"args": "--select 'TL1"}, "::error title=torchlint::input args: No closing quotation"),
    ({"args": "--select TL999"}, "torchlint: error: unknown rule selector(s): TL999"),
])
def test_bad_inputs_are_one_line_errors(machine, tmp_path, inputs, message):
    base, bindir, env = machine
    project(tmp_path)
    runner = Runner(tmp_path, inputs, env, skip=("Install torchlint",))  # installed by the fixture
    assert runner.run() == 2
    text = runner.text()
    assert message in text and "Traceback" not in text


@pytest.mark.slow
def test_installs_a_pinned_version(machine, tmp_path):
    base, bindir, env = machine
    wheels = tmp_path / "wheels"
    subprocess.run([str(bindir / "python"), "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)],
                   env=env, check=True, capture_output=True, timeout=600)
    project(tmp_path)
    runner = Runner(tmp_path, {"version": "v0.1.0", "paths": "src/clean.py"}, {**env, "PIP_FIND_LINKS": str(wheels)})
    assert runner.run() == 0, runner.text()
    assert "Installing torchlint==0.1.0" in runner.log[0][2]
    shutil.rmtree(wheels)
