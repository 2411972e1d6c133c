"""`torchlint.watch`: the cheap per-step checks and the slow path that names module, op and line."""

import pytest
from conftest import FIXTURES

torch = pytest.importorskip("torch")
import torchlint  # noqa: E402


def _seed_exercise(steps=60):
    import importlib.util

    spec = importlib.util.spec_from_file_location("nan_hunt_mlp", FIXTURES / "numerics" / "nan_hunt_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    features, labels = torch.randn(64, 16), torch.randint(0, 4, (64,))
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(1, steps):
            module.STEP = step
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(features), labels).backward()
            optimizer.step()
    return watcher


def test_seed_exercise_step_51_layer2_log_and_static_confirmation():
    watcher = _seed_exercise()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL903", 51, "layer2", "log", 17)
    assert event.file.endswith("nan_hunt_mlp.py")
    assert [(f.code, f.line) for f in event.confirmed] == [("TL101", 17)]


class LogHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return torch.sqrt(h)  # negative inputs: NaN in the forward pass


def test_forward_nan_names_first_module_and_op():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), LogHead())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchlint.watch(model, optimizer) as watcher:
        optimizer.zero_grad()
        model(torch.randn(8, 4)).nansum().backward()
        optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op) == ("TL901", 1, "1", "sqrt")
    assert event.file == __file__ and event.line == LogHead.forward.__code__.co_firstlineno + 2


def test_healthy_training_reports_nothing_and_hooks_are_removed():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(30):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    assert watcher.events == [] and watcher.step == 30
    assert all(not m._forward_hooks for m in model.modules())


def test_run_command_names_the_nan_op(capsys):
    from torchlint.cli import main

    code = main(["run", str(FIXTURES / "models" / "sqrt_head.py:SqrtHead"), "--steps", "20"])
    out = capsys.readouterr().out
    assert code == 1
    assert "sqrt_head.py:15: TL901 non-finite-forward: step 1: first non-finite output in `<model>`, op torch.sqrt" in out


def test_run_command_healthy_model_and_bad_input(capsys):
    from torchlint.cli import main

    assert main(["run", str(FIXTURES / "models" / "mlp.py:MLP"), "--steps", "30", "--loss", "ce"]) == 0
    assert "No NaN/Inf or exploding gradient in 30 steps." in capsys.readouterr().out
    assert main(["run", str(FIXTURES / "models" / "mlp.py:MLP"), "--input", "float32[B, 11]"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchlint: error: running") and len(err.strip().splitlines()) == 1


def test_run_unchanged_script_reports_the_seed_exercise(capsys):
    from torchlint.cli import main

    code = main(["run", str(FIXTURES / "numerics" / "nan_hunt_mlp.py")])
    out = capsys.readouterr().out
    assert code == 1
    assert "nan_hunt_mlp.py: 51 optimizer step(s) watched" in out
    assert "nan_hunt_mlp.py:17: TL903 exploding-gradient: step 51:" in out and "in `layer2`, op torch.log" in out
    assert "confirms TL101 unguarded-log (static) at line 17" in out


SCRIPT = """
import sys
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(int(sys.argv[1])):
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
if sys.argv[2] == "raise":
    raise ValueError("the script's own bug")
sys.exit(int(sys.argv[2]))
"""


def test_run_script_arguments_exit_status_and_own_traceback(tmp_path, capsys):
    from torchlint.cli import main

    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert main(["run", str(script), "--", "5", "3"]) == 3
    assert "train.py: 5 optimizer step(s) watched" in capsys.readouterr().out
    assert main(["run", str(script), "--", "5", "raise"]) == 1
    out, err = capsys.readouterr()
    assert "ValueError: the script's own bug" in err and "5 optimizer step(s) watched" in out
    assert main(["run", str(script), "--max-steps", "2", "--", "50", "0"]) == 0
    assert "train.py: 2 optimizer step(s) watched" in capsys.readouterr().out


def test_backward_only_nan_replayed_under_anomaly_detection(capsys):
    from torchlint.cli import main

    code = main(["run", str(FIXTURES / "models" / "distance_head.py:Siamese"), "--steps", "5"])
    out = capsys.readouterr().out
    assert code == 1
    assert "distance_head.py:17: TL902 non-finite-gradient: step 1: gradient norm is nan with a finite forward pass" in out
    assert "confirms TL105 unguarded-sqrt (static) at line 17" in out


def test_memory_growth_explained_by_static_finding():
    import subprocess
    import sys

    # a fresh process: the resident memory of a long test session moves for unrelated reasons
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", str(FIXTURES / "training" / "leaky_script.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TL904 memory-growth: step " in result.stdout and "MiB per step" in result.stdout
    assert "explained by TL402 graph-kept-alive (static) at line 19" in result.stdout


def test_repro_finds_the_first_differing_step_and_its_static_cause(capsys):
    from torchlint.cli import main

    models = FIXTURES / "models"
    assert main(["run", f"{models}/unseeded_noise.py:NoisyEncoder", "--steps", "3", "--repro", "3"]) == 1
    out = capsys.readouterr().out
    assert "TL905 nondeterministic: step 1: two runs from the same seeds differ first in parameter `fc.weight`" in out
    assert "explained by TL501 partial-seeding (static) at line 7" in out
    assert main(["run", f"{models}/mlp.py:MLP", "--steps", "3", "--repro", "3"]) == 0
    assert "--repro: 3 steps twice from the same seeds: bitwise identical" in capsys.readouterr().out
