"""The Hugging Face Trainer callback against the real library: a tiny GPT-2 built from a config, nothing
downloaded. Same checks as `torchlint run`; training stops cleanly; the optimizer's set-up is checked."""

from __future__ import annotations

import inspect
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # the Trainer needs it

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

from torchlint.integrations.transformers import TorchlintCallback  # noqa: E402


class LogGate(torch.nn.Module):
    """The MLP's activation: x + log(sigmoid(x)), except at the step the test picks, when the gate is
    zeroed and the log gives -inf."""

    def __init__(self):
        super().__init__()
        self.zeroed = False

    def forward(self, x):
        gate = torch.sigmoid(x) * (0.0 if self.zeroed else 1.0)
        return x + torch.log(gate)


LOG_LINE = inspect.getsourcelines(LogGate.forward)[1] + 2


class ZeroAt(TrainerCallback):
    def __init__(self, gate, step):
        self.gate, self.step = gate, step

    def on_step_begin(self, args, state, control, **kwargs):
        self.gate.zeroed = state.global_step + 1 == self.step


class ScaledLoss(Trainer):
    """Multiplies the loss of one step by 1e5: the gradient norm jumps by as much."""

    scale_at = None

    def compute_loss(self, model, inputs, *args, **kwargs):
        loss = super().compute_loss(model, inputs, *args, **kwargs)
        return loss * 1e5 if self.state.global_step + 1 == self.scale_at else loss


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever the Trainer writes under output_dir


def _model(gate=None, half=False):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
                                       bos_token_id=0, eos_token_id=0))
    if gate is not None:
        model.transformer.h[0].mlp.act = gate
    return model.half() if half else model


def _train(model, callbacks, steps=8, trainer_class=Trainer, **arguments):
    rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (32, 16), generator=torch.Generator().manual_seed(1))]
    args = TrainingArguments(output_dir="out", max_steps=steps, per_device_train_batch_size=4, report_to=[],
                             save_strategy="no", use_cpu=True, disable_tqdm=True, logging_steps=1, seed=0,
                             **{"optim": "adamw_torch", **arguments})
    trainer = trainer_class(model=model, args=args, train_dataset=rows, callbacks=callbacks)  # the Trainer line
    trainer.train()
    return trainer


TRAINER_LINE = inspect.getsourcelines(_train)[1] + 5


def _losses(trainer):
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def test_clean_training_reports_nothing_and_trains_identically(capsys):
    plain = _train(_model(LogGate()), [])
    callback = TorchlintCallback()
    watched = _train(_model(LogGate()), [callback])
    assert callback.events == [] and watched.state.global_step == 8
    assert _losses(watched) == _losses(plain) and len(_losses(plain)) == 8
    assert "torchlint:" not in capsys.readouterr().err
    assert not any(k.startswith("torchlint/") for entry in watched.state.log_history for k in entry)


def test_nan_is_found_at_its_step_with_the_op_and_line_and_stops_training(capsys):
    gate, callback = LogGate(), TorchlintCallback()
    trainer = _train(_model(gate), [ZeroAt(gate, 2), callback])
    assert [(e.code, e.step, e.op, e.line) for e in callback.events] == [("TL901", 2, "log", LOG_LINE)]
    assert callback.events[0].module == "transformer.h.0.mlp.act"
    assert trainer.state.global_step == 2  # stopped after the step that made it, not after 8
    assert {"torchlint/TL901": 2.0, "step": 2} in trainer.state.log_history
    err = capsys.readouterr().err
    assert err.count("torchlint:") == 1
    assert f"test_integrations_transformers.py:{LOG_LINE}: TL901 non-finite-forward at step 2:" in err


def test_stop_on_event_false_lets_training_finish():
    gate, callback = LogGate(), TorchlintCallback(stop_on_event=False)
    trainer = _train(_model(gate), [ZeroAt(gate, 2), callback], steps=4)
    assert trainer.state.global_step == 4
    assert [e.code for e in callback.events] == ["TL901"]


def test_eps_below_float16_on_float16_parameters_is_reported_before_the_first_step(capsys):
    callback = TorchlintCallback()
    trainer = _train(_model(half=True), [callback], adam_epsilon=1e-8)
    setup, found = callback.events
    assert (setup.code, setup.step, setup.file, setup.line) == ("TL110", 0, __file__, TRAINER_LINE)
    assert setup.message == (
        "`AdamW` updates 6 float16 parameter tensor(s) (such as `transformer.wte.weight`) with eps=1e-08, below "
        "float16's smallest value (5.96e-08): eps rounds to 0, so wherever the average of squared gradients "
        "underflows (gradients below about 5e-3) the update divides by zero and the parameter turns inf/NaN; raise adam_epsilon in TrainingArguments (or the eps of the optimizer you pass) to 1e-4, or "
        "train float32 or bfloat16 parameters")
    assert (found.code, found.step) == ("TL906", 1)  # and the first update did it
    assert trainer.state.global_step == 2
    assert "TL110 risky-optimizer-config before the first step:" in capsys.readouterr().err


def test_no_eps_finding_where_eps_is_safe():
    """float32 parameters, a float16-safe eps, and the fused kernel (it adds eps in float32)."""
    for model, arguments in ((_model(), {}), (_model(half=True), {"adam_epsilon": 1e-4}),
                             (_model(half=True), {"optim": "adamw_torch_fused"})):
        callback = TorchlintCallback()
        _train(model, [callback], steps=2, **arguments)
        assert callback.events == [], arguments


def test_explosion_names_max_grad_norm_zero():
    ScaledLoss.scale_at = 8
    callback = TorchlintCallback()
    trainer = _train(_model(), [callback], trainer_class=ScaledLoss, max_grad_norm=0.0)
    assert [(e.code, e.step) for e in callback.events] == [("TL903", 8)]
    assert callback.events[0].message.endswith(
        "; TrainingArguments(max_grad_norm=0.0) switches the Trainer's gradient clipping off")
    assert trainer.state.global_step == 8
    clipped = TorchlintCallback()  # with the default max_grad_norm=1 the step is clipped: nothing exploded
    _train(_model(), [clipped], trainer_class=ScaledLoss)
    assert clipped.events == []
