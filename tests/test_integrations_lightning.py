"""The Lightning callback against the real library: same checks as `torchlint run`, the fit stops cleanly."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from torchlint.integrations.lightning import TorchlintCallback  # noqa: E402


class Classifier(L.LightningModule):
    def __init__(self, nan_at_step: int | None = None):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.nan_at_step = nan_at_step

    def training_step(self, batch, batch_idx):
        x, y = batch
        probs = F.softmax(self.fc(x), dim=-1)
        if self.global_step == self.nan_at_step:
            probs = probs * 0  # every probability underflows: log gives -inf
        return F.nll_loss(torch.log(probs), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


LOG_LINE = inspect.getsourcelines(Classifier.training_step)[1] + 5


def _fit(model, callback, epochs=1):
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8)
    trainer = L.Trainer(max_epochs=epochs, callbacks=[callback], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    trainer.fit(model, data)
    return trainer


def test_first_nan_stops_the_fit_with_the_op_and_line(capsys):
    callback = TorchlintCallback()
    trainer = _fit(Classifier(nan_at_step=3), callback, epochs=2)
    assert [(e.code, e.step, e.line) for e in callback.events] == [("TL901", 4, LOG_LINE)]
    assert "torch.log" in callback.events[0].message
    assert trainer.global_step == 4  # stopped at the step that made it, not after 16
    assert f"test_integrations_lightning.py:{LOG_LINE}: TL901" in capsys.readouterr().err


def test_clean_fit_runs_every_step_and_reports_nothing(capsys):
    callback = TorchlintCallback()
    trainer = _fit(Classifier(), callback)
    assert trainer.global_step == 8 and callback.events == []
    assert "torchlint:" not in capsys.readouterr().err


def test_stop_on_event_false_lets_the_fit_finish():
    callback = TorchlintCallback(stop_on_event=False)
    trainer = _fit(Classifier(nan_at_step=3), callback)
    assert trainer.global_step == 8
    assert [e.code for e in callback.events] == ["TL901"]


def test_the_callback_is_a_callback_of_the_package_in_use():
    assert isinstance(TorchlintCallback(), L.pytorch.Callback)
    pl = pytest.importorskip("pytorch_lightning")
    from torchlint.integrations.pytorch_lightning import TorchlintCallback as Legacy

    assert isinstance(Legacy(), pl.Callback)


class HalfAdam(Classifier):
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def test_true_half_precision_with_adams_default_eps_is_reported_at_the_fit_start(capsys):
    callback = TorchlintCallback(stop_on_event=False)
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(32, 4) * 1e-3, torch.randint(0, 3, (32,))), batch_size=8)
    trainer = L.Trainer(max_steps=3, precision="16-true", callbacks=[callback], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu")
    trainer.fit(HalfAdam(), data)  # the fit line
    setup = callback.events[0]
    assert (setup.code, setup.step, setup.line) == ("TL110", 0, inspect.currentframe().f_lineno - 2)
    assert setup.message.startswith("`Adam` updates 2 float16 parameter tensor(s) (such as `fc.weight`) with eps=1e-08")
    assert [e.code for e in callback.events[1:]] == ["TL906"]  # small gradients: the first update divided by 0
    assert "TL110 risky-optimizer-config before the first step" in capsys.readouterr().err
