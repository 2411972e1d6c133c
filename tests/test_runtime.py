"""`torchlint.watch`: the cheap per-step checks and the slow path that names module, op and line."""

import contextlib
import math
import os

import pytest
from conftest import FIXTURES, ROOT

torch = pytest.importorskip("torch")
import torchlint  # noqa: E402


@pytest.fixture(autouse=True)
def _at_the_repository_root(monkeypatch):
    """Reports show paths relative to the working directory."""
    monkeypatch.chdir(ROOT)


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
    assert "No NaN/Inf, exploding or vanishing gradient, or memory growth in 30 steps." in capsys.readouterr().out
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
    assert "confirmed at step 51: TL101 unguarded-log (static) at " in out and "nan_hunt_mlp.py:17: `torch.log(" in out


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
    assert main(["run", "--max-steps", "2", str(script), "50", "0"]) == 0
    assert "train.py: 2 optimizer step(s) watched" in capsys.readouterr().out


def test_backward_only_nan_replayed_under_anomaly_detection(capsys):
    from torchlint.cli import main

    code = main(["run", str(FIXTURES / "models" / "distance_head.py:Siamese"), "--steps", "5"])
    out = capsys.readouterr().out
    assert code == 1
    assert "distance_head.py:17: TL902 non-finite-gradient: step 1: gradient norm is nan with a finite forward pass" in out
    assert "confirmed at step 1: TL119 hand-written-norm (static) at " in out and "distance_head.py:17: " in out


def test_memory_growth_explained_by_static_finding():
    import subprocess
    import sys

    # a fresh process: the resident memory of a long test session moves for unrelated reasons
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", str(FIXTURES / "training" / "leaky_script.py")],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 1, result.stdout + result.stderr
    # found exactly at step 5 (the outputs of steps 1-3 still hold their graphs), not by a memory threshold
    assert "TL908 graph-kept-alive-at-runtime: step 5: the autograd graphs of the model outputs of steps 1, 2, 3 " \
        "are still alive" in result.stdout
    assert "explained by TL402 graph-kept-alive (static) at fixtures/training/leaky_script.py:19: " in result.stdout.replace(os.sep, "/")


LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
total, kept, last = 0.0, [], None
for step in range(12):
    for micro in range(2):
        loss = model(torch.randn(32, 8)).pow(2).mean() / 2
        loss.backward()
    opt.step()
{clear}
{keep}
print("done")
"""


@pytest.mark.parametrize(("clear", "keep", "expected"), [
    ("    opt.zero_grad()", "    total += loss", "TL908 graph-kept-alive-at-runtime: step 5: the autograd graphs "
                                                        "of the losses and model outputs of steps 1, 2, 3 are still alive"),
    ("", "    total += loss.item()", "TL909 gradients-not-cleared: step 2: backward() (line 10 of train.py) started "
                                     "while the 4 gradients of step 1 were still there"),
    ("    opt.zero_grad(set_to_none=step % 2 == 0)", "    total += loss.item()\n    last = loss\n    kept.append(loss.detach())",
     None),
])
def test_bookkeeping_is_confirmed_exactly(tmp_path, clear, keep, expected):
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(LOOP.replace("{clear}", clear).replace("{keep}", keep))
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", str(script)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    if expected is None:  # accumulation over micro-batches, both ways of clearing, one step's loss kept
        assert "No NaN/Inf" in result.stdout and "12 optimizer step(s)" in result.stdout, result.stdout + result.stderr
    else:
        assert expected in result.stdout, result.stdout + result.stderr
        code = "TL402" if "TL908" in expected else "TL301"
        assert f"explained by {code} " in result.stdout


def test_memory_growth_without_kept_graphs_is_still_measured(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "cache.py"
    script.write_text(LOOP.replace("range(12)", "range(40)").replace("{clear}", "    opt.zero_grad()").replace(
        "{keep}", "    kept.append(torch.randn(1024, 1024))"))
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", str(script)], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert "TL904 memory-growth: step " in result.stdout and "MiB per step" in result.stdout, result.stdout
    assert "TL908" not in result.stdout


def test_repro_finds_the_first_differing_step_and_its_static_cause(capsys):
    from torchlint.cli import main

    models = FIXTURES / "models"
    assert main(["run", f"{models}/unseeded_noise.py:NoisyEncoder", "--steps", "3", "--repro", "3"]) == 1
    out = capsys.readouterr().out
    assert "TL905 nondeterministic: step 1: two runs from the same seeds differ first in parameter `fc.weight`" in out
    assert "explained by TL501 partial-seeding (static) at " in out and "unseeded_noise.py:7: " in out
    assert main(["run", f"{models}/mlp.py:MLP", "--steps", "3", "--repro", "3"]) == 0
    assert "--repro: 3 steps twice from the same seeds: bitwise identical" in capsys.readouterr().out


def _run_cli(capsys, target, *options):
    """`torchlint run [options] target`: torchlint's options go before a script's path."""
    from torchlint.cli import main

    code = main(["run", *options, target])
    return code, capsys.readouterr().out


def test_large_init_update_that_dwarfs_the_weights_is_found_at_step_1(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "numerics" / "large_init.py"))
    assert code == 1
    assert "TL903 exploding-gradient: step 1: optimizer.step() multiplied the parameter norm by" in out
    assert "explained by TL109 large-init (static) at fixtures/numerics/large_init.py:26: `param.data.uniform_(1, 10)`" in out
    assert "explained by TL109 large-init (static) at fixtures/numerics/large_init.py:15: " in out


def test_adam_on_float16_divides_by_zero_named_from_the_optimizer_state(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "numerics" / "adam_half_eps.py"))
    assert code == 1
    assert "TL906 non-finite-parameter: step 1: optimizer.step() left `0.weight` non-finite" in out
    assert "Adam's exp_avg_sq is 0 at" in out and "eps=1e-08 rounds to 0 in float16, so the update divided by zero" in out
    assert "explained by TL110 risky-optimizer-config (static) at fixtures/numerics/adam_half_eps.py:10: " in out
    code, out = _run_cli(capsys, str(FIXTURES / "numerics" / "adam_half_eps.py"), "--snapshot")
    assert code == 1 and "; replaying that update, torch.addcdiv_ (adam.py:" in out


def test_adam_with_underflowed_gradients_does_not_learn(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "numerics" / "adam_tiny_grads.py"))
    assert code == 1
    assert "adam_tiny_grads.py: 5 optimizer step(s) watched" in out
    assert ("TL907 vanishing-gradient: steps 1-5: every gradient is exactly 0: Adam's second-moment state is 0 in "
            "11 of 11 entries and every update is 0") in out


def test_small_but_healthy_gradients_are_not_vanishing():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(12):
            optimizer.zero_grad()
            (torch.nn.functional.mse_loss(model(x), y) * 1e-6).backward()  # norms ~1e-6: above eps
            optimizer.step()
    assert watcher.events == []


def test_eps_zero_on_a_dead_unit_is_nan_after_the_step():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, eps=0)
    x = torch.randn(16, 4)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(3):
            optimizer.zero_grad()
            model(x)[:, :2].pow(2).mean().backward()  # output 2 never reaches the loss: gradient 0
            optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step, event.module) == ("TL906", 1, "weight")
    assert "exp_avg_sq is 0 at 4 of its 4 non-finite entries and eps=0, so the update divided by zero" in event.message


def test_nan_parameters_are_found_on_the_steps_that_do_not_measure_them():
    """Parameter norms are read on steps 1-5 and every 10th; a step whose module outputs are not
    finite measures them too, so the update of step 12 is still named exactly."""
    from torchlint.runtime.watch import PARAM_EVERY, PARAM_FIRST

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-8)
    x = torch.randn(16, 4)
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(1, 16):
            if step == 12:
                optimizer.param_groups[0]["eps"] = 0  # the dead unit's update becomes 0 / 0
            optimizer.zero_grad()
            model(x)[:, :2].pow(2).mean().backward()
            optimizer.step()
    assert (PARAM_FIRST, PARAM_EVERY) == (5, 10)
    measured = [s.param_norm is not None for s in watcher.history]
    assert measured[:13] == [True] * 5 + [False] * 4 + [True, False, False, True]  # 13: its outputs hold NaN
    [event] = watcher.events
    assert (event.code, event.step, event.module) == ("TL906", 12, "weight")
    assert event.message.startswith("step 12: optimizer.step() left `weight` non-finite")


def test_nan_in_the_initialisation_is_not_blamed_on_the_optimizer():
    model = torch.nn.Linear(4, 1)
    with torch.no_grad():
        model.bias.fill_(float("nan"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchlint.watch(model, optimizer) as watcher:
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
    [event] = watcher.events
    assert event.code == "TL906" and event.message.startswith("before the first step: the initialisation left `bias`")


class CoinFlip(torch.nn.Module):
    """NaN or not depending on one random draw: only a replay with the step's RNG state reproduces it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x, *, scale=1.0):
        u = torch.rand(())
        return self.norm(self.fc(x)) * scale * torch.log(u - 0.5)


def _coin_seed():
    """A seed whose first draw is < 0.5 (NaN) and whose second is not (a naive replay is finite)."""
    for seed in range(100):
        torch.manual_seed(seed)
        if torch.rand(()) < 0.5 <= torch.rand(()):
            return seed
    raise AssertionError


def test_replay_draws_the_same_random_numbers_and_leaves_the_users_state_alone():
    seed = _coin_seed()
    torch.manual_seed(seed)
    model = CoinFlip()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    torch.manual_seed(seed)
    with torchlint.watch(model, optimizer) as watcher:
        optimizer.zero_grad()
        model(x, scale=2.0).nansum().backward()  # keyword arguments are replayed too
        running_mean = model.norm.running_mean.clone()
        expected_next = torch.get_rng_state()
        optimizer.step()
    [event] = watcher.events
    assert (event.code, event.op, event.line) == ("TL901", "log", CoinFlip.forward.__code__.co_firstlineno + 2)
    assert "(input min " in event.message and "output 1 NaN, 0 Inf of 1)" in event.message
    assert torch.equal(model.norm.running_mean, running_mean)  # the replay's BatchNorm update was undone
    assert torch.equal(torch.get_rng_state(), expected_next)  # and its random draws too


def test_history_has_the_loss_and_norms_of_each_step():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    losses = []
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(4):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            losses.append(loss.item())
            optimizer.step()
    assert [s.step for s in watcher.history] == [1, 2, 3, 4]
    assert [s.loss for s in watcher.history] == pytest.approx(losses)
    assert all(s.grad_norm > 0 and s.param_norm > 0 for s in watcher.history)
    assert torch.Tensor.backward.__module__ == "torch._tensor"  # the loss probe is removed


def test_two_optimizers_keep_separate_histories():
    """A GAN whose generator steps three times per discriminator step; the discriminator's gradients
    are 1e4x the generator's, which is not an explosion."""
    torch.manual_seed(0)
    gen, disc = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    opt_g, opt_d = torch.optim.SGD(gen.parameters(), lr=1e-6), torch.optim.SGD(disc.parameters(), lr=1e-6)
    from torchlint.runtime.watch import Watch

    with Watch(None, None) as watcher:
        for _ in range(10):
            opt_d.zero_grad()
            (disc(gen(torch.randn(8, 4)).detach()).mean() * 1e4).backward()
            opt_d.step()
            for _ in range(3):
                opt_g.zero_grad()
                disc(gen(torch.randn(8, 4))).mean().backward()
                opt_g.step()
    assert watcher.events == [] and watcher.step == 40


def test_repro_on_a_script_runs_it_twice_in_fresh_processes(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "training" / "unseeded_script.py"), "--repro", "2")
    assert code == 1
    assert "TL905 nondeterministic: step 1: two runs from the same seeds differ first in parameter `0.weight`" in out
    assert "explained by TL501 partial-seeding (static) at fixtures/training/unseeded_script.py:10: " in out
    code, out = _run_cli(capsys, str(FIXTURES / "training" / "leaky_script.py"), "--max-steps", "2", "--repro", "2")
    assert code == 0
    assert "--repro: 2 steps in two fresh processes: bitwise identical" in out


def test_repro_compares_gradients_and_losses_too():
    from torchlint.runtime.repro import compare

    base = {"step": 1, "loss": 0.5, "params": {"w": ("a", "g")}}
    assert compare([base], [base]) is None
    assert compare([base], [{**base, "params": {"w": ("a", "h")}}]) == (1, "the gradient of `w`", 0.5, 0.5)
    assert compare([base], [{**base, "loss": 0.25}]) == (1, "the loss", 0.5, 0.25)


def test_digest_is_exact():
    from torchlint.runtime.repro import digest

    x = torch.randn(100)
    y = x.clone()
    y[37] = torch.nextafter(y[37], torch.tensor(float("inf")))  # one ulp
    assert digest(x) == digest(x.clone()) and digest(x) != digest(y) and digest(x) != digest(x.flip(0))


def test_not_observed_static_findings_and_summary_table(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "training" / "leaky_script.py"), "--max-steps", "3")
    assert code == 0
    assert "static findings not observed in 3 steps:\n  fixtures/training/leaky_script.py:19: TL402 graph-kept-alive" in out
    header, *rows = out.split("\n\n")[-1].strip().splitlines()
    assert header.split() == ["first", "last", "min", "median", "max"]
    assert [r.split()[0] for r in rows] == ["loss", "grad", "param", "memory", "ms/step"]


def test_run_json_and_sarif_outputs(capsys, tmp_path):
    import json

    target = str(FIXTURES / "numerics" / "adam_half_eps.py")
    code, out = _run_cli(capsys, target, "--output-format", "json")
    assert code == 1
    data = json.loads(out)
    [event] = data["events"]
    assert (event["code"], event["step"], event["module"]) == ("TL906", 1, "0.weight")
    assert [(f["code"], f["location"]["row"]) for f in event["static"]] == [("TL110", 10)]
    assert data["steps"] == 2 and data["history"][0]["step"] == 1 and "loss" in data["summary"]
    sarif_file = tmp_path / "run.sarif"
    assert _run_cli(capsys, target, "--output-format", "sarif", "-o", str(sarif_file))[0] == 1
    sarif = json.loads(sarif_file.read_text())
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "TL906"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 10  # at the explaining line


def test_progress_line_only_on_a_terminal(monkeypatch):
    import io

    from torchlint.runtime.progress import Progress
    from torchlint.runtime.watch import StepStats

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    stream = Terminal()
    progress = Progress(stream, total=10, interval=0)
    progress(StepStats(3, 0.25, 1.5, 10.0, 0, 0.01))
    progress.close()
    assert "torchlint: step 3/10  loss 0.25  grad norm 1.5" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[2K")
    monkeypatch.setenv("CI", "true")
    quiet = Terminal()
    Progress(quiet, interval=0)(StepStats(1, 0.5, 1.0, 1.0, 0, 0.01))
    assert quiet.getvalue() == ""
    piped = io.StringIO()
    monkeypatch.delenv("CI")
    Progress(piped, interval=0)(StepStats(1, 0.5, 1.0, 1.0, 0, 0.01))
    assert piped.getvalue() == ""


def test_float16_gradients_whose_norm_exceeds_float16_are_not_called_infinite():
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64).half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with torchlint.watch(model, optimizer) as watcher:
        optimizer.zero_grad()
        (model(torch.ones(256, 64).half()).float().sum() * 8).backward()  # elements ~2048: norm ~1.3e5
        optimizer.step()
    assert watcher.events == [] and watcher.history[0].grad_norm > 65504


def test_sparse_embedding_gradients_are_checked():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 8, sparse=True), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.randint(0, 100, (16, 4))
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(3):
            optimizer.zero_grad()
            model(tokens).pow(2).mean().backward()
            optimizer.step()
    assert watcher.events == [] and all(s.grad_norm > 0 for s in watcher.history)


def test_an_internal_error_switches_the_watch_off_instead_of_stopping_training(monkeypatch):
    from torchlint.runtime import watch as watch_module

    def broken(*_):
        raise ValueError("boom")

    monkeypatch.delenv("TORCHLINT_STRICT")
    monkeypatch.setattr(watch_module, "norms", broken)  # also used when the run ends
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(UserWarning, match="torchlint: watch switched off after an internal error: ValueError"):
        with torchlint.watch(model, optimizer):
            for _ in range(3):
                optimizer.zero_grad()
                model(torch.randn(2, 4)).sum().backward()
                optimizer.step()  # still steps: the training goes on
    assert not model._forward_hooks and not optimizer._optimizer_step_pre_hooks


class MaskedAttention(torch.nn.Module):
    """A causal mask module whose output is -inf above the diagonal: softmax absorbs it."""

    class CausalMask(torch.nn.Module):
        def forward(self, scores):
            size = scores.shape[-1]
            return torch.full((size, size), float("-inf")).triu(1)

    def __init__(self, log_of_zero=False):
        super().__init__()
        self.qk = torch.nn.Linear(8, 8)
        self.mask = self.CausalMask()
        self.log_of_zero = log_of_zero

    def forward(self, x):
        scores = self.qk(x) @ x.transpose(-1, -2)
        weights = torch.softmax(scores + self.mask(scores), dim=-1)
        if self.log_of_zero:
            weights = torch.log(weights)  # 0 above the diagonal: -inf reaches the loss
        return weights @ x


def test_minus_inf_masks_are_not_findings_but_a_log_of_zero_is():
    for log_of_zero, expected in ((False, []), (True, [("TL901", "log")])):
        torch.manual_seed(0)
        model = MaskedAttention(log_of_zero)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        with torchlint.watch(model, optimizer) as watcher:
            for _ in range(3):
                optimizer.zero_grad()
                model(torch.randn(2, 5, 8)).pow(2).mean().backward()
                optimizer.step()
        assert [(e.code, e.op) for e in watcher.events] == expected
    [event] = watcher.events  # the NaN comes from matmul over -inf; its origin is the log of 0
    assert event.line == MaskedAttention.forward.__code__.co_firstlineno + 4
    assert "20 Inf of 50; it becomes NaN in torch.matmul at test_runtime.py:" in event.message


def test_a_converged_run_with_zero_gradients_is_not_vanishing():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    labels = torch.randint(0, 2, (16, 1)) * 2.0 - 1
    x = torch.cat([labels * 2, torch.randn(16, 3) * 0.1], dim=1)  # separable with a margin: the hinge reaches 0
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(30):
            optimizer.zero_grad()
            torch.relu(1 - labels * model(x)).mean().backward()
            optimizer.step()
    losses = [s.loss for s in watcher.history]
    assert losses[0] > 0 and losses[-10:] == [0.0] * 10  # gradient 0 is expected once it is 0
    assert watcher.events == []


def test_no_inner_activation_outlives_backward():
    """Only the outermost call's inputs and output gradient are kept until the step: a watched run
    needs no more memory at its peak than an unwatched one, whatever the depth of the model."""
    import gc
    import weakref

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inner = []
    model[1].register_forward_hook(lambda module, args, output: inner.append(weakref.ref(output)))
    with torchlint.watch(model, optimizer):
        optimizer.zero_grad()
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        del loss
        gc.collect()
        assert inner[0]() is None
        optimizer.step()


def test_a_loss_made_non_finite_after_the_model_names_the_op_and_its_line(capsys):
    code, out = _run_cli(capsys, str(FIXTURES / "numerics" / "loss_outside_model.py"))
    assert code == 1
    assert ("loss_outside_model.py:18: TL901 non-finite-forward: step 1: the loss is inf while the model's output "
            "is finite: torch.log at loss_outside_model.py:18, between the model's output and the loss, made it from "
            "finite inputs (input min 0, max 1, 0 NaN, 0 Inf of 64; output min -103, max 0, 0 NaN, 5 Inf of 64)\n") in out
    assert "confirmed at step 1: TL102 log-of-probability (static) at fixtures/numerics/loss_outside_model.py:18: " in out


DATA_SCRIPT = """
import torch
features = torch.randn(32, 4)
features[:, 2] = 1.0  # a constant column
scaled = (features - features.mean(0)) / features.std(0)  # 0 / 0 in that column
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    model(scaled).pow(2).mean().backward()
    optimizer.step()
"""


def test_nan_already_in_the_data_is_said_so(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(DATA_SCRIPT)
    code, out = _run_cli(capsys, str(script))
    assert code == 1
    assert "TL901 non-finite-forward: step 1: first non-finite output in `Sequential`" in out
    assert "its input already holds NaN/Inf: " in out and "32 NaN, 0 Inf of 128; it comes from the data" in out


def _half_adam_run(snapshot):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).half()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 32).half()
    with torchlint.watch(model, optimizer, snapshot=snapshot) as watcher:
        for _ in range(3):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), x[:, :1] * 0.5).backward()
            optimizer.step()
    return watcher, model, optimizer


def test_snapshot_replays_the_update_that_went_non_finite_and_changes_nothing():
    watcher, model, optimizer = _half_adam_run(snapshot=True)
    [event] = watcher.events
    assert event.code == "TL906" and event.step == 1
    assert "; replaying that update, torch.addcdiv_ (adam.py:" in event.message
    assert "made it from finite inputs: input min -0.0102" in event.message  # the mutated parameter is not an input
    _, plain_model, plain_optimizer = _half_adam_run(snapshot=False)
    for param, plain in zip(model.parameters(), plain_model.parameters(), strict=True):
        assert torch.equal(param.nan_to_num(), plain.nan_to_num())
        for key, value in optimizer.state[param].items():
            assert torch.equal(value.nan_to_num(), plain_optimizer.state[plain][key].nan_to_num())


def test_snapshot_restore_round_trip():
    from torchlint.runtime.snapshot import Snapshot

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(3, 4)).sum().backward()
    before = Snapshot()
    before.save(optimizer, 1)  # no Adam state yet
    expected = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    before.restore(optimizer)
    assert all(torch.equal(p, e) for p, e in zip(model.parameters(), expected, strict=True))
    assert len(optimizer.state) == 0  # the state the step created is gone again


def test_evaluation_between_steps_keeps_nothing_alive():
    import gc
    import weakref

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = []
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(2):
            optimizer.zero_grad()
            model(torch.randn(4, 8)).pow(2).mean().backward()
            optimizer.step()
            with torch.no_grad():  # validation: nothing of it may outlive it
                for _ in range(3):
                    batch = torch.randn(4, 8) * float("nan")  # not a training problem: not reported
                    batches.append(weakref.ref(batch))
                    model(batch)
                    del batch
            gc.collect()
            assert all(ref() is None for ref in batches)
    assert watcher.events == [] and watcher.step == 2


def test_the_fused_check_and_the_cpu_sums_agree_on_what_is_finite(monkeypatch):
    from torchlint.runtime import reductions

    tensors = [torch.tensor([1.0, float("nan")]), torch.tensor([1e30, -float("inf")]), torch.tensor([3e38, -3e38]),
               torch.tensor([1.0, 2.0], dtype=torch.bfloat16), torch.tensor([60000.0, 60000.0], dtype=torch.float16),
               torch.tensor([1e300], dtype=torch.float64)]
    cpu = [math.isfinite(v) for v in torch.stack(reductions.finiteness(tensors)).tolist()]
    monkeypatch.setattr(reductions, "FUSED_ON_CPU", True)
    fused = [math.isfinite(v) for v in torch.stack(reductions.finiteness(tensors)).tolist()]
    assert cpu == fused == [False, False, True, True, True, True]


def _ops_per_step(layers: int, watched: bool) -> int:
    """aten ops dispatched by step 7 of a Sequential of `layers` Linear+ReLU blocks (steps 6-9 do not
    measure the parameter norms)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(8, 8), torch.nn.ReLU())])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    x = torch.randn(4, 8)
    watcher = torchlint.watch(model, optimizer) if watched else contextlib.nullcontext()
    with watcher:
        for step in range(1, 8):
            counter = Count() if step == 7 else contextlib.nullcontext()
            with counter:
                optimizer.zero_grad()
                model(x).pow(2).mean().backward()
                optimizer.step()
    return Count.ops


def test_the_cheap_check_dispatches_the_same_ops_whatever_the_number_of_modules(monkeypatch):
    """O(1) kernels per step on a GPU: the model's output gets one reduction, not one per module (each
    op is a kernel launch there). The GPU's check is forced on CPU."""
    monkeypatch.setattr("torchlint.runtime.reductions.FUSED_ON_CPU", True)
    small = _ops_per_step(4, True) - _ops_per_step(4, False)
    large = _ops_per_step(32, True) - _ops_per_step(32, False)
    # 7 ops on torch 2.13: the output's max-abs, one foreach norm of the gradients, the loss's view, one
    # stack, the read (and two detaches); 20 before this round (one foreach norm of every module's output)
    assert 0 < small == large <= 8


class _Cnn(torch.nn.Module):
    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale
        self.conv1 = torch.nn.Conv2d(3, 4, 3)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.conv1(x * self.scale).mean(dim=(2, 3)))


def _train_on(images: torch.Tensor, scale: float = 1.0):
    torch.manual_seed(0)
    model = _Cnn(scale)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(2):
            optimizer.zero_grad()
            model(images).pow(2).mean().backward()
            optimizer.step()
    return watcher.events


def test_raw_pixel_values_fed_to_the_first_convolution_are_found_once():
    pixels = torch.randint(0, 256, (2, 3, 8, 8), generator=torch.Generator().manual_seed(0)).float()
    [event] = _train_on(pixels)
    assert (event.code, event.step, event.module) == ("TL912", 1, "conv1")
    assert event.message.startswith("step 1: the input of `conv1` (Conv2d) holds whole numbers from 0 to 25")


@pytest.mark.parametrize("case", ["divided in the model", "normalised data", "binary images", "depth in mm"])
def test_normalised_binary_and_wide_range_inputs_are_not_raw_pixels(case):
    generator = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (2, 3, 8, 8), generator=generator).float()
    images, scale = {"divided in the model": (pixels, 1 / 255), "normalised data": ((pixels / 255 - 0.5) / 0.25, 1.0),
                     "binary images": (torch.randint(0, 2, (2, 3, 8, 8), generator=generator).float(), 1.0),
                     "depth in mm": (torch.randint(300, 5000, (2, 3, 8, 8), generator=generator).float(), 1e-3),
                     }[case]
    assert _train_on(images, scale) == []


def _relu_net(dead_units: int, conv: bool = False) -> torch.nn.Module:
    torch.manual_seed(0)
    if conv:
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                    torch.nn.Linear(16 * 4 * 4, 1))
    else:
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    with torch.no_grad():
        model[0].bias[:dead_units] = -100.0  # these units never fire: dead from the start
    return model


def _train_relu(model, inputs, steps=12):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(steps):
            optimizer.zero_grad()
            model(inputs).pow(2).mean().backward()
            optimizer.step()
    return watcher.events


def test_a_mostly_dead_relu_layer_is_found_after_three_checks():
    [event] = _train_relu(_relu_net(12), torch.randn(32, 8))
    assert (event.code, event.step, event.module) == ("TL913", 3, "1")
    assert event.message.startswith("step 3: 75% of the units of `1` (ReLU) were 0 for every input of the batch at "
                                    "steps 1, 2, 3: dead ReLUs")


def test_dead_channels_of_a_convolution_are_units_too():
    [event] = _train_relu(_relu_net(10, conv=True), torch.randn(4, 3, 4, 4))
    assert (event.code, event.step) == ("TL913", 3) and "62% of the units of `1`" in event.message


@pytest.mark.parametrize(("dead", "batch"), [(4, 32), (0, 32), (12, 4)])
def test_a_few_dead_units_a_healthy_layer_and_a_batch_too_small_to_tell_are_not_reported(dead, batch):
    # 25% dead is under the 50% bar; with 4 rows a healthy unit can be 0 for all of them by chance
    assert _train_relu(_relu_net(dead), torch.randn(batch, 8)) == []


def _bn_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def _second_pass(kind: str):
    model = _bn_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    views = (x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x))
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(3):
            optimizer.zero_grad()
            if kind == "two views":  # contrastive learning: two different tensors
                loss = model(views[0]).pow(2).mean() + model(views[1]).pow(2).mean()
            else:
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            if kind == "metric again":
                accuracy = (model(x).argmax(1) == y).float().mean()  # noqa: F841 - the second pass
            elif kind == "metric under no_grad":
                with torch.no_grad():
                    accuracy = (model(x).argmax(1) == y).float().mean()  # noqa: F841
            optimizer.step()
    return watcher.events


def test_a_batchnorm_model_run_again_on_the_same_batch_is_found_at_both_lines():
    import inspect

    [event] = _second_pass("metric again")
    first = inspect.getsourcelines(_second_pass)[1] + 11
    assert (event.code, event.step, event.line) == ("TL914", 1, first + 3)
    assert event.message.startswith(f"step 1: `<model>` ran a second time on the same batch (first at line {first}) "
                                    "in training mode: BatchNorm's running statistics count this batch twice")


@pytest.mark.parametrize("kind", ["two views", "metric under no_grad", "once"])
def test_two_views_a_no_grad_metric_and_one_pass_are_not_repeated_forwards(kind):
    assert _second_pass(kind) == []
