"""`torchlint run` on scripts that train inside Lightning's Trainer.fit and Hugging Face's Trainer.train:
tiny models built from code or a config, nothing downloaded. Skipped when the library is absent."""

import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("torch")

LIGHTNING = """
import sys

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, bad):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.bad = bad

    def training_step(self, batch, _index):
        x, y = batch
        out = self.net(x)
        if self.bad:
            out = torch.log(out - 100)
        loss = nn.functional.mse_loss(out, y)
        print(f"loss {loss.item():.6f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
trainer = L.Trainer(max_steps=6, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False, accelerator="cpu", devices=1)
trainer.fit(Regressor(bad=sys.argv[1:] == ["bad"]), DataLoader(data, batch_size=16))
print("fit done", trainer.global_step)
"""

HF = """
import sys
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Sqrt(torch.nn.Module):
    def forward(self, x):
        return torch.sqrt(x)


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=32,
                                   bos_token_id=0, eos_token_id=0))
if sys.argv[1:] == ["bad"]:
    model.transformer.h[0].mlp.act = Sqrt()  # NaN where the MLP's pre-activation is negative
rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (32, 16))]
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, max_steps=5, per_device_train_batch_size=4, report_to=[],
                             save_strategy="no", use_cpu=True, disable_tqdm=True, logging_strategy="no")
    Trainer(model=model, args=args, train_dataset=rows).train()
print("train done")
"""


def _both(tmp_path, source, *args):
    script = tmp_path / "train.py"
    script.write_text(source)
    plain = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600)
    watched = subprocess.run([sys.executable, "-m", "torchlint", "run", "--no-progress", str(script), *args],
                             capture_output=True, text=True, timeout=600, cwd=ROOT)
    return plain, watched


def test_lightning_fit_is_watched_step_by_step(tmp_path):
    pytest.importorskip("lightning")
    plain, watched = _both(tmp_path, LIGHTNING)
    assert plain.returncode == watched.returncode == 0, watched.stderr
    assert watched.stdout.startswith(plain.stdout) and plain.stdout.endswith("fit done 6\n")
    report = watched.stdout[len(plain.stdout):]
    assert report.startswith("train.py: 6 optimizer step(s) watched\n"
                             "No NaN/Inf, exploding or vanishing gradient, or memory growth in 6 steps.\n")
    # the loss of each step is the one the closure computed inside optimizer.step(closure)
    losses = [line.split()[1] for line in plain.stdout.splitlines() if line.startswith("loss ")]
    loss_row = next(line for line in report.splitlines() if line.startswith("loss "))
    assert float(loss_row.split()[1]) == pytest.approx(float(losses[0]), rel=1e-3)


def test_lightning_nan_in_the_loss_stops_the_fit_with_the_op_and_line(tmp_path):
    pytest.importorskip("lightning")
    _, watched = _both(tmp_path, LIGHTNING, "bad")
    assert watched.returncode == 1
    assert "fit done" not in watched.stdout
    assert ("train.py:20: TL901 non-finite-forward: step 1: the loss is nan while the model's output is finite: "
            "torch.log at train.py:20, between the model's output and the loss, made it from finite inputs") in watched.stdout


def test_hf_trainer_train_is_watched(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    plain, watched = _both(tmp_path, HF)
    assert plain.returncode == watched.returncode == 0, watched.stderr
    assert watched.stdout.startswith(plain.stdout.split("train done")[0].split("{'train_runtime'")[0])
    report = watched.stdout.split("train done\n", 1)[1]
    assert report.startswith("train.py: 5 optimizer step(s) watched\n"
                             "No NaN/Inf, exploding or vanishing gradient, or memory growth in 5 steps.\n")
    # the Trainer clips at max_grad_norm=1: the gradient norms read before the step are at most 1
    grad_row = next(line for line in report.splitlines() if line.startswith("grad norm"))
    assert float(grad_row.split()[-1]) <= 1.0 + 1e-4


def test_hf_trainer_nan_is_located_in_the_model(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    _, watched = _both(tmp_path, HF, "bad")
    assert watched.returncode == 1
    assert "train done" not in watched.stdout
    assert ("train.py:11: TL901 non-finite-forward: step 1: first non-finite output in `transformer.h.0.mlp.act`, op "
            "torch.sqrt at train.py:11 (") in watched.stdout
