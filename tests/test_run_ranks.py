"""Several ranks: `torchlint run --nproc-per-node 2` and `torchrun ... -m torchlint run`, gloo on CPU.

Each script builds a DistributedDataParallel model; the ranks exchange their checks every step,
stop together, and rank 0 prints the one report.

torch 2.13's gloo sometimes aborts a process as it exits ("terminate called without an active
exception", status 134), with or without torchlint: 1 of 12 plain two-rank runs of CLEAN did, after
their last step. An exit status is therefore checked as the expected one or that abort.
"""

import os
import subprocess
import sys

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

HEAD = """import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
"""

UNUSED = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head2 = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = nn.parallel.DistributedDataParallel(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
"""

LOG_NAN = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return h * torch.log(x.abs().sum(-1, keepdim=True))


model = nn.parallel.DistributedDataParallel(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
generator = torch.Generator().manual_seed(rank)
for step in range(6):
    x = torch.randn(8, 4, generator=generator)
    if rank == 1 and step == 4:
        x[2] = 0
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    logged = loss.detach().clone()
    dist.all_reduce(logged)  # the program's own collective after the step: every rank must get here
open(f"rank{rank}.finished", "w").close()
"""

SQRT_GRAD = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4, bias=False)

    def forward(self, x):
        return torch.sqrt(self.fc(x).pow(2).sum(-1))


model = nn.parallel.DistributedDataParallel(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
generator = torch.Generator().manual_seed(rank)
for step in range(6):
    x = torch.randn(8, 4, generator=generator)
    if rank == 1 and step == 2:
        x[3] = 0
    optimizer.zero_grad()
    model(x).mean().backward()
    optimizer.step()
"""

FSDP2 = HEAD + """
from torch.distributed.fsdp import fully_shard


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(self.fc(x) * torch.log(x.abs().sum(-1, keepdim=True)))


model = Net()
fully_shard(model.fc)
fully_shard(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
generator = torch.Generator().manual_seed(rank)
for step in range(6):
    x = torch.randn(8, 4, generator=generator)
    if rank == 1 and step == 4:
        x[2] = 0
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()
"""

DRIFT = HEAD + """
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
if rank == 0:  # a checkpoint restored on rank 0 only, after wrapping
    with torch.no_grad():
        model.module.weight.fill_(0.5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
"""

CLEAN = HEAD + """
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
generator = torch.Generator().manual_seed(rank)
for step in range(5):
    optimizer.zero_grad()
    model(torch.randn(8, 4, generator=generator)).pow(2).mean().backward()
    optimizer.step()
open(f"rank{rank}.finished", "w").close()
dist.destroy_process_group()
"""


def _run(tmp_path, source: str, *launch: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = launch or (sys.executable, "-m", "torchlint", "run", "--nproc-per-node", "2")
    return subprocess.run([*command, "train.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=180)


ABORTED_AT_EXIT = (134, -6)  # through torchlint's launcher (128 + SIGABRT), or the process itself


def _ended(done: subprocess.CompletedProcess, status: int) -> bool:
    return (done.returncode == status or done.returncode in ABORTED_AT_EXIT) and "Traceback" not in done.stderr


def _as_two_ranks(tmp_path, name: str, source: str, **env: str) -> list[tuple[int, str, str]]:
    """Run the script itself as two ranks (no torchlint launcher): (status, stdout, stderr) of each."""
    from torchlint.runtime.spawn import rank_environments

    (tmp_path / name).write_text(source)
    children = [subprocess.Popen([sys.executable, name], cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 env={**base, "PYTHONPATH": str(ROOT / "src"), **env})
                for base in rank_environments(2)]
    outputs = [child.communicate(timeout=300) for child in children]
    return [(child.returncode, *output) for child, output in zip(children, outputs, strict=True)]


def _events(out: str) -> list[str]:
    return [line for line in out.splitlines() if " TL9" in f" {line}"]


def test_unused_parameters_are_named_before_ddp_fails(tmp_path):
    done = _run(tmp_path, UNUSED)
    assert _ended(done, 1), done.stderr
    assert done.stdout.count("optimizer step(s) watched on each of 2 ranks") == 1  # one report, rank 0's
    [event] = _events(done.stdout)
    assert event.startswith("train.py:15: TL910 ddp-unused-parameters: rank 0 of 2: step 1: 2 parameter(s) got no "
                            "gradient (`head2.weight`, `head2.bias`): module(s) `head2` did not run")
    assert "also found: TL910 on rank 1" in event
    assert "Expected to have finished reduction" not in done.stderr  # stopped before DDP's own failure


def test_a_nan_made_on_one_rank_is_reported_with_its_rank_op_and_line(tmp_path):
    done = _run(tmp_path, LOG_NAN)
    assert _ended(done, 1), done.stderr
    [event] = _events(done.stdout)
    assert event.startswith("train.py:16: TL901 non-finite-forward: rank 1 of 2: step 5: ")
    assert "op torch.log at train.py:16" in event
    assert "the loss was finite on the other ranks (rank 0: " in event
    assert not list(tmp_path.glob("*.finished"))  # every rank stopped at step 5


def test_a_nan_gradient_is_reported_from_the_rank_whose_replay_makes_it(tmp_path):
    done = _run(tmp_path, SQRT_GRAD)
    assert _ended(done, 1), done.stderr
    [event] = _events(done.stdout)
    # DDP averages gradients, so both ranks see NaN; only rank 1's own backward makes it
    assert event.startswith("train.py:15: TL902 non-finite-gradient: rank 1 of 2: step 3: ")
    assert "also found: TL902 on rank 0 (gradients are averaged across ranks" in event


def test_a_sharded_model_is_checked_on_its_shards_and_never_replayed_on_one_rank(tmp_path):
    """FSDP2 (fully_shard): parameters and gradients are DTensors; a replay on one rank would wait
    forever for the others' all-gather, so the event says it was not replayed."""
    pytest.importorskip("torch.distributed.fsdp")
    done = _run(tmp_path, FSDP2)
    assert _ended(done, 1), done.stderr
    [event] = _events(done.stdout)
    assert event.startswith("TL901 non-finite-forward: rank 1 of 2: step 5: first non-finite output in `out` (not "
                            "replayed: the model is sharded across ranks")
    assert "switched off" not in done.stderr


def test_parameters_changed_on_one_rank_after_wrapping_are_ranks_diverged(tmp_path):
    done = _run(tmp_path, DRIFT)
    assert _ended(done, 1), done.stderr
    [event] = _events(done.stdout)
    assert event.startswith("TL911 ranks-diverged: step 1: the parameters differ between ranks (norm ")


def test_a_clean_ddp_run_is_one_report_and_exit_zero(tmp_path):
    done = _run(tmp_path, CLEAN)
    assert _ended(done, 0), done.stdout + done.stderr
    assert done.stdout.count("5 optimizer step(s) watched on each of 2 ranks") == 1
    assert _events(done.stdout) == []
    assert sorted(p.name for p in tmp_path.glob("*.finished")) == ["rank0.finished", "rank1.finished"]


def test_each_rank_of_a_torchrun_launch_runs_torchlint(tmp_path):
    done = _run(tmp_path, LOG_NAN, sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                "-m", "torchlint", "run")
    assert done.returncode != 0
    [event] = _events(done.stdout)
    assert "TL901 non-finite-forward: rank 1 of 2: step 5" in event


@pytest.mark.parametrize(("argv", "message"), [
    (["--nproc-per-node", "0", "train.py"], "--nproc-per-node must be at least 1"),
    (["--nproc-per-node", "2", "--repro", "2", "train.py"], "cannot be combined with --nproc-per-node"),
    (["--nproc-per-node", "2", "model.py:Net"], "a model target trains in one process"),
])
def test_bad_rank_options_are_one_line_errors(tmp_path, capsys, monkeypatch, argv, message):
    from torchlint.cli import main

    (tmp_path / "train.py").write_text(CLEAN)
    (tmp_path / "model.py").write_text("import torch\nclass Net(torch.nn.Linear):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_strip_option_takes_out_the_rank_count_only():
    from torchlint.runtime.spawn import strip_option

    ambiguous = ("--no-progress",)
    assert strip_option(["--nproc-per-node", "2", "--max-steps", "5", "--", "t.py"], "--nproc-per-node",
                        ambiguous) == ["--max-steps", "5", "--", "t.py"]
    assert strip_option(["--nproc=2", "--no-progress", "--", "t.py", "--nproc-per-node", "3"], "--nproc-per-node",
                        ambiguous) == ["--no-progress", "--", "t.py", "--nproc-per-node", "3"]
    assert strip_option(["--n", "x", "--", "t.py"], "--nproc-per-node", ambiguous) == ["--n", "x", "--", "t.py"]


def test_the_reporting_rank_is_the_earliest_cause_then_the_lowest_rank():
    from torchlint.runtime.ranks import annotate, drift_event, order, reporting_rank
    from torchlint.runtime.records import Event

    located = Event("TL902", "non-finite-gradient", 3, "gradient", op="PowBackward0", line=9)
    unlocated = Event("TL902", "non-finite-gradient", 3, "gradient")
    forward = Event("TL901", "non-finite-forward", 3, "forward")
    assert [order([]), order([forward]), order([located]), order([unlocated])] == [0, 1, 2, 3]
    nan = float("nan")
    table = [[3, 0.5, 1.0], [2, nan, 1.0], [0, 0.4, 1.0]]  # order, loss, parameter norm
    assert reporting_rank(table) == 1
    assert reporting_rank([[0, 1, 1, 1], [0, 1, 1, 1]]) is None
    [event] = annotate([[unlocated], [located], []], table, 1)
    assert event.message == ("rank 1 of 3: gradient; the loss was finite on the other ranks (rank 0: 0.5, rank 2: "
                             "0.4): this rank's batch (its shard of the data) makes it; also found: TL902 on rank 0 "
                             "(gradients are averaged across ranks: a NaN one rank makes reaches all)")
    assert drift_event(4, [[0, 1, 2.0], [0, 1, 2.0 * (1 + 1e-7)]]) is None  # rounding
    assert drift_event(4, [[0, 1, 2.0], [0, 1, 2.1]]).code == "TL911"


ACCELERATE = """import json
import torch
import torch.nn as nn
from accelerate import Accelerator

from torchlint.integrations.accelerate import watch

accelerator = Accelerator(cpu=True)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * torch.log(x.abs().sum(-1, keepdim=True))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
model, optimizer = accelerator.prepare(model, optimizer)
generator = torch.Generator().manual_seed(accelerator.process_index)
updates = 0
with watch(accelerator, model, optimizer) as w:
    for step in range(8):
        x = torch.randn(8, 4, generator=generator)
        if accelerator.process_index == 1 and step == 4:
            x[2] = 0
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        accelerator.gather(loss.detach())  # a collective after the step
        updates += 1
with open(f"rank{accelerator.process_index}.json", "w") as out:
    json.dump({"updates": updates, "events": [[e.code, e.step, e.message] for e in w.events]}, out)
"""


def test_the_accelerate_watch_stops_every_rank_at_the_same_step(tmp_path):
    pytest.importorskip("accelerate")
    import json

    ended = _as_two_ranks(tmp_path, "train.py", ACCELERATE)
    assert all(status in (0, *ABORTED_AT_EXIT) for status, _, _ in ended), ended
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    # found at step 5 on rank 1; told at the next forward, every rank's next optimizer.step() ends the block
    assert [r["updates"] for r in ranks] == [5, 5]
    for r in ranks:
        [[code, step, message]] = r["events"]
        assert (code, step) == ("TL901", 5) and message.startswith("rank 1 of 2: step 5: first non-finite output")
    assert ended[0][2].count("TL901 non-finite-forward at step 5: rank 1 of 2") == 1  # printed once, on rank 0
    assert "TL902" not in ended[0][2].split("also found")[0]  # rank 0's own TL902 is not printed as the cause


LIGHTNING = """import json
import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from torchlint.integrations.lightning import TorchlintCallback


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        probs = F.softmax(self.fc(x), dim=-1)
        if self.global_step == 3 and self.global_rank == 1:
            probs = probs * 0  # rank 1's batch underflows: log gives -inf
        return F.nll_loss(torch.log(probs), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(128, 4), torch.randint(0, 3, (128,))), batch_size=8)
    callback = TorchlintCallback()
    trainer = L.Trainer(max_epochs=2, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=2,
                        strategy="ddp")
    trainer.fit(Classifier(), data)
    with open(f"rank{trainer.global_rank}.json", "w") as out:
        json.dump({"step": trainer.global_step, "events": [[e.code, e.step, e.message] for e in callback.events]}, out)
"""


def test_the_lightning_callback_stops_every_ddp_rank_at_the_same_step(tmp_path):
    """Lightning's own DDP launcher (strategy="ddp", two CPU processes). Under it Lightning calls the
    LightningModule through a forward patched for that one call; the watch looks through it."""
    pytest.importorskip("lightning")
    import json

    (tmp_path / "fit.py").write_text(LIGHTNING)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "fit.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)
    assert _ended(done, 0), done.stderr[-3000:]
    assert "switched off" not in done.stderr
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for rank in ranks:
        [[code, step, message]] = rank["events"]
        assert (rank["step"], code, step) == (5, "TL901", 4)  # found at step 4; agreed, every rank stops after 5
        assert message.startswith("rank 1 of 2: step 4: the loss is inf while the model's output is finite: "
                                  "torch.log at fit.py:20")
    assert done.stderr.count("TL901 non-finite-forward at step 4") == 1  # printed on rank zero only


HF_TRAINER = """import json
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

from torchlint.integrations.transformers import TorchlintCallback


class LogGate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.zeroed = False

    def forward(self, x):
        gate = torch.sigmoid(x) * (0.0 if self.zeroed else 1.0)
        return x + torch.log(gate)


class ZeroAt(TrainerCallback):
    def __init__(self, gate, step, rank):
        self.gate, self.step, self.rank = gate, step, rank

    def on_step_begin(self, args, state, control, **kwargs):
        self.gate.zeroed = state.global_step + 1 == self.step and args.process_index == self.rank


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
                                   bos_token_id=0, eos_token_id=0))
gate = LogGate()
model.transformer.h[0].mlp.act = gate
rows = [{"input_ids": ids, "labels": ids}
        for ids in torch.randint(0, 64, (64, 16), generator=torch.Generator().manual_seed(1))]
args = TrainingArguments(output_dir="out", max_steps=8, per_device_train_batch_size=4, report_to=[],
                         save_strategy="no", use_cpu=True, disable_tqdm=True, logging_steps=1, seed=0,
                         optim="adamw_torch")
callback = TorchlintCallback()
trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[ZeroAt(gate, 3, 1), callback])
trainer.train()
with open(f"rank{args.process_index}.json", "w") as out:
    json.dump({"step": trainer.state.global_step, "world": args.world_size,
               "events": [[e.code, e.step, e.message] for e in callback.events]}, out)
"""


def test_the_hf_trainer_callback_stops_every_rank_at_the_same_step(tmp_path):
    """The Trainer on two CPU processes (the environment torchrun gives): a NaN made in rank 1's
    forward at step 3, agreed at the next forward, ends training on both ranks after step 4."""
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    import json

    ended = _as_two_ranks(tmp_path, "hf.py", HF_TRAINER, HF_HUB_OFFLINE="1")
    assert all(status in (0, *ABORTED_AT_EXIT) for status, _, _ in ended), [err[-2000:] for _, _, err in ended]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for rank in ranks:
        [[code, step, message]] = rank["events"]
        assert (rank["world"], rank["step"], code, step) == (2, 4, "TL901", 3)
        assert message.startswith("rank 1 of 2: step 3: first non-finite output in `transformer.h.0.mlp.act`, op "
                                  "torch.log at hf.py:17")


RANK_ZERO_ONLY = HEAD + """
import contextlib

import torchlint

model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with torchlint.watch(model, optimizer) if rank == 0 else contextlib.nullcontext() as watcher:
    for step in range(4):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
if rank == 0:
    open("rank0.steps", "w").write(str(watcher.step))
"""


def test_a_watch_on_rank_zero_alone_does_not_wait_for_the_others(tmp_path):
    """`torchlint.watch(model, optimizer)` is per rank unless ranks=True: on rank 0 only, it must not
    make the group or start the exchange that every rank takes part in."""
    ended = _as_two_ranks(tmp_path, "train.py", RANK_ZERO_ONLY)
    assert all(status in (0, *ABORTED_AT_EXIT) for status, _, _ in ended), ended
    assert (tmp_path / "rank0.steps").read_text() == "4"
