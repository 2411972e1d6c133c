"""`torchlint run` attaches to the Hugging Face Trainer, Lightning and Accelerate a script imports: the
optimizer's set-up check where the framework hands it over, the user's loss through
`accelerator.backward`. The script's own output is unchanged; the patches are undone afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("torch")

HF_HALF = """
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
                                   bos_token_id=0, eos_token_id=0)).half()
rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (16, 16))]
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, max_steps=3, per_device_train_batch_size=4, report_to=[], optim="adamw_torch",
                             save_strategy="no", use_cpu=True, disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    trainer.train()
print("train done")
"""

LIGHTNING_HALF = """
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def training_step(self, batch, _index):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.fc(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(32, 4) * 1e-3, torch.randint(0, 3, (32,))), batch_size=8)  # small gradients
trainer = L.Trainer(max_steps=3, precision="16-true", accelerator="cpu", logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Classifier(), data)
"""

ACCELERATE = """
import torch
from accelerate import Accelerator

torch.manual_seed(0)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for batch in range(8):
    with accelerator.accumulate(model):
        loss = (model(torch.randn(8, 4)) - 1).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        print(f"loss {loss.item():.6f}")
"""


def _run_here(tmp_path, capsys, source, *args):
    from torchlint.cli import main

    script = tmp_path / "train.py"
    script.write_text(source)
    code = main(["run", "--no-progress", "--output-format", "json", str(script), *args])
    import json

    out = capsys.readouterr().out
    report = json.loads(out[out.index('{\n  "target"'):] if '{\n  "target"' in out else out[out.index("{"):])
    return code, out, report


def test_hf_trainer_gets_the_optimizer_check_in_a_fresh_process(tmp_path):
    """The import hook: transformers is first imported by the script, and its Trainer is patched then."""
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    script = tmp_path / "train.py"
    script.write_text(HF_HALF)
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", "--no-progress", str(script)],
                            capture_output=True, text=True, timeout=600, cwd=ROOT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1, result.stderr
    assert "train done" not in result.stdout  # the run stops at the first problem, as for any script
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "optimizer step(s) watched" in line)
    assert lines[start + 1].endswith(
        "train.py:14: TL110 risky-optimizer-config: `AdamW` updates 6 float16 parameter tensor(s) (such as "
        "`transformer.wte.weight`) with eps=1e-08, below float16's smallest value (5.96e-08): eps rounds to 0, so "
        "wherever the average of squared gradients underflows (gradients below about 5e-3) the update divides by "
        "zero and the parameter turns inf/NaN; raise adam_epsilon in TrainingArguments "
        "(or the eps of the optimizer you pass) to 1e-4, or train float32 or bfloat16 parameters")
    assert "TL906 non-finite-parameter: step 1: optimizer.step() left `transformer.wte.weight` non-finite" \
        in lines[start + 2]


def test_lightning_true_half_precision_gets_the_optimizer_check(tmp_path, capsys):
    L = pytest.importorskip("lightning")
    original = L.Trainer.__init__
    code, _, report = _run_here(tmp_path, capsys, LIGHTNING_HALF)
    assert L.Trainer.__init__ is original  # restored
    setup = report["events"][0]
    assert (setup["code"], setup["step"], setup["line"]) == ("TL110", 0, 24)  # the fit() line
    assert setup["message"].startswith("`Adam` updates 2 float16 parameter tensor(s) (such as `fc.weight`)")
    assert setup["message"].endswith('use eps=1e-4 in `configure_optimizers`, or precision="16-mixed" '
                                     "(float32 master weights)")
    assert [e["code"] for e in report["events"][1:]] == ["TL906"]
    assert code == 1


def test_accelerate_loss_is_the_loops_own_under_accumulation(tmp_path, capsys):
    accelerate = pytest.importorskip("accelerate")
    code, out, report = _run_here(tmp_path, capsys, ACCELERATE)
    assert accelerate.Accelerator.backward.__name__ == "backward" and \
        not hasattr(accelerate.Accelerator.backward, "__torchlint_wrapped__")
    assert code == 0 and report["events"] == []
    printed = [float(line.split()[1]) for line in out.splitlines() if line.startswith("loss ")]
    # 4 optimizer steps of 2 micro-batches: the loss read is the second one's, not halved by Accelerate
    assert [s["loss"] for s in report["history"]] == pytest.approx(printed[1::2], rel=1e-5)


HF_OWN_CALLBACK = """
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from torchlint.integrations.transformers import TorchlintCallback

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
                                   bos_token_id=0, eos_token_id=0))
rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (16, 16))]
callback = TorchlintCallback()
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, max_steps=2, per_device_train_batch_size=4, report_to=[],
                             save_strategy="no", use_cpu=True, disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[callback])
    trainer.train()
print("own callbacks", sum(isinstance(c, TorchlintCallback) for c in trainer.callback_handler.callbacks),
      "watch", callback.watch)
"""


def test_a_callback_the_script_adds_leaves_the_watching_to_run(tmp_path, capsys, monkeypatch):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    original = transformers.Trainer.__init__
    code, out, report = _run_here(tmp_path, capsys, HF_OWN_CALLBACK)
    assert transformers.Trainer.__init__ is original  # restored
    assert code == 0 and report["events"] == [] and len(report["history"]) == 2
    assert "own callbacks 1 watch None" in out  # not a second callback, and no second watch
