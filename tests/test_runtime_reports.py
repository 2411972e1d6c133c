"""What `torchlint run` reports, and what it must not disturb: hooks on forwards that raise, the
module that made a NaN, a NaN made in the loss, a replay that does not reproduce, an exploding
update's likely cause, the script's own output and RNG stream."""

import os
import subprocess
import sys
import warnings

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")

import torchlint  # noqa: E402

STEP = """
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 8):
    x = torch.randn(4, 8)
    {prepare}
    optimizer.zero_grad()
    out = model(x)
    loss = {loss}
    loss.backward()
    optimizer.step()
"""


def _script(tmp_path, body, prepare="pass", loss="out.pow(2).mean()"):
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom torch import nn\ntorch.manual_seed(0)\n" + body
                      + STEP.format(prepare=prepare, loss=loss))
    return script


def _run(capsys, script, *options):
    from torchlint.cli import main

    code = main(["run", "--no-progress", *options, str(script)])
    out = capsys.readouterr().out.replace(f"{script.parent}{os.sep}", "")
    return code, out.splitlines()[1] if len(out.splitlines()) > 1 else out


INNER = """
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(8, 16)
        self.c_proj = nn.Linear(16, 8)

    def forward(self, x):
        return self.c_proj(torch.sqrt(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.mlp(x))


model = Block()
"""


def test_a_nan_made_inside_a_module_is_the_makers_not_the_consumers(tmp_path, capsys):
    code, line = _run(capsys, _script(tmp_path, INNER))
    assert code == 1
    assert line == ("train.py:12: TL901 non-finite-forward: step 1: first non-finite output in `mlp`, op torch.sqrt at "
                    "train.py:12 (input min -1.28, max 1.28, 0 NaN, 0 Inf of 64; output min 0.124, max 1.13, 36 NaN, "
                    "0 Inf of 64)")


OPPOSITE_INFS = """
class Nan(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) * torch.log(x.abs().sum(-1, keepdim=True))


model = nn.Sequential(Nan(), nn.Linear(8, 1))
"""


def test_an_all_zero_row_at_step_5_is_located_although_the_output_holds_infinities_not_nan(tmp_path, capsys):
    # h * log(0) gives +inf and -inf in one row: no op makes a NaN, but the output's sum is NaN
    code, line = _run(capsys, _script(tmp_path, OPPOSITE_INFS, prepare="x[2] = 0 if step == 5 else x[2]"))
    assert code == 1
    assert line == ("train.py:11: TL901 non-finite-forward: step 5: first non-finite output in `0`, op torch.log at "
                    "train.py:11 (input min 0, max 7.67, 0 NaN, 0 Inf of 4; output min 1.44, max 2.04, 0 NaN, 1 Inf of "
                    "4; it becomes NaN in torch.linear at train.py:24)")


def test_a_nan_made_in_the_loss_names_the_op_and_the_line(tmp_path, capsys):
    model = "model = nn.Linear(8, 1)\n"
    code, line = _run(capsys, _script(tmp_path, model, loss="torch.log(out - 100).mean()"))
    assert code == 1
    assert line.startswith("train.py:12: TL901 non-finite-forward: step 1: the loss is nan while the model's output "
                           "is finite: torch.log at train.py:12, between the model's output and the loss, made it from "
                           "finite inputs (input min -100, max -99.8, 0 NaN, 0 Inf of 4; output 4 NaN, 0 Inf of 4)")


STATEFUL = """
class Flaky(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) / (self.calls % 3 != 0)  # every third call divides by zero


model = nn.Sequential(Flaky(), nn.Linear(8, 1))
"""


def test_a_replay_that_does_not_reproduce_says_so_and_restores_the_modules_state(tmp_path, capsys):
    code, line = _run(capsys, _script(tmp_path, STATEFUL))
    assert code == 1
    assert line == ("TL901 non-finite-forward: step 3: first non-finite output in `Sequential` (the replay of this step "
                    "from its kept inputs and RNG state did not reproduce it: stateful code?)")
    torch.manual_seed(0)
    namespace = {"torch": torch, "nn": torch.nn}
    exec(STATEFUL, namespace)
    model = namespace["model"]
    with torchlint.watch(model, torch.optim.SGD(model.parameters(), lr=0.01), stop_at_first=False) as watcher:
        for _ in range(4):
            watcher.optimizer.zero_grad()
            model(torch.randn(4, 8)).pow(2).mean().backward()
            watcher.optimizer.step()
    assert model[0].calls == 4  # the replay's own call was taken back
    assert watcher.events[0].step == 3


EXPLODING = """
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr={lr})
{scheduler}
for step in range(6):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(torch.randn(64, 8)), torch.randn(64, 1)).backward()
    {clip}
    optimizer.step()
    {schedule}
"""


def test_an_exploding_update_names_the_parameter_and_its_likely_cause(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom torch import nn\n" + EXPLODING.format(lr=50.0, scheduler="", clip="",
                                                                              schedule=""))
    code, line = _run(capsys, script)
    assert code == 1
    assert line.startswith("TL903 exploding-gradient: step 2: optimizer.step() multiplied the parameter norm by ")
    assert "most in `0.weight` (" in line
    assert line.endswith("the update dwarfs the weights; likely cause: lr=50 (lr x gradient norm = "
                         f"{line.split('lr x gradient norm = ')[1].split(',')[0]}, against weights of norm "
                         f"{line.split('against weights of norm ')[1].split(')')[0]}); the gradients are not clipped "
                         "(no clip_grad_norm_ call seen); no warm-up (no lr scheduler: the full lr from step 1, and "
                         "this is step 2)")
    script.write_text("import torch\nfrom torch import nn\n" + EXPLODING.format(
        lr=50.0, clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1e6)",
        scheduler="scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 2))",
        schedule="scheduler.step()"))
    code, line = _run(capsys, script)
    assert code == 1 and "TL903" in line
    assert line.endswith("the update dwarfs the weights; likely cause: lr=50 (lr x gradient norm = "
                         f"{line.split('lr x gradient norm = ')[1].split(',')[0]}, against weights of norm "
                         f"{line.split('against weights of norm ')[1].split(')')[0]})")


class Picky(torch.nn.Module):
    """Raises after its inner modules ran, when called with strict=True."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x, strict=False):
        h = self.lin(x)
        if strict:
            raise ValueError("too strict")
        return self.head(h)


@pytest.mark.parametrize("process_wide", [True, False])
def test_a_forward_that_raises_leaves_the_hooks_silent_and_their_bookkeeping_right(process_wide):
    torch.manual_seed(0)
    model = Picky()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    watcher = torchlint.watch(None, None) if process_wide else torchlint.watch(model, optimizer)
    with warnings.catch_warnings(record=True) as caught, watcher:
        warnings.simplefilter("always")
        for _ in range(3):
            with pytest.raises(ValueError):
                model(torch.randn(2, 4), strict=True)  # with kwargs, raising in the outermost call
            with pytest.raises(ValueError):
                model(torch.randn(2, 4), strict=True)
            optimizer.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            assert watcher._stack == [] and len(watcher._calls) == 1
            assert watcher._probe_keys == [(model, 0)] and len(watcher._probes) == 1  # the one kept call's output
            optimizer.step()
    assert [str(w.message) for w in caught] == []
    assert watcher.step == 3 and watcher.events == []


LOSSES = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(30):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(torch.randn(32, 8)), torch.randn(32, 1))
    loss.backward()
    optimizer.step()
    print(f"{step} {loss.item():.10f}")
print("rng", torch.rand(3).tolist())
"""


def test_the_scripts_output_and_random_stream_are_unchanged(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(LOSSES)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    watched = subprocess.run([sys.executable, "-m", "torchlint", "run", "--no-progress", str(script)],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert plain.returncode == watched.returncode == 0
    assert watched.stdout.startswith(plain.stdout)
    assert watched.stdout[len(plain.stdout):].startswith("train.py: 30 optimizer step(s) watched\n")
