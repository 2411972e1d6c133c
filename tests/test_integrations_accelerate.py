"""`torchlint.integrations.accelerate.watch` in a plain Accelerate loop, against the real library (CPU)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from torchlint.integrations.accelerate import watch  # noqa: E402


def _train(zero_at=None, wrap=True, accumulation=1, half=False, seen=None, **options):
    """The loop of the README; at step `zero_at` the probabilities are zeroed and their log is -inf."""
    torch.manual_seed(0)
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=accumulation)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model = model.half() if half else model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2) if half else torch.optim.SGD(model.parameters(), lr=0.1)
    data = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8)
    model, optimizer, data = accelerator.prepare(model, optimizer, data)
    losses = []
    with watch(accelerator, model, optimizer, **options) if wrap else _Nothing() as w:  # the watch line
        for batch, (x, y) in enumerate(data, 1):
            with accelerator.accumulate(model):
                probs = F.softmax(model(x.to(model[0].weight.dtype)).float(), dim=-1)
                if batch == zero_at:
                    probs = probs * 0
                loss = F.nll_loss(torch.log(probs), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
                losses.append(loss.item())
    if seen is not None:
        seen["backward"] = "backward" in vars(accelerator)
    return losses, w


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


WATCH_LINE = inspect.getsourcelines(_train)[1] + 10
LOG_LINE = WATCH_LINE + 6


def test_clean_loop_reports_nothing_and_trains_identically(capsys):
    plain, _ = _train(wrap=False)
    seen = {}
    watched, w = _train(seen=seen)
    assert watched == plain and len(plain) == 8
    assert w.events == [] and w.step == 8
    assert seen["backward"] is False  # accelerator.backward is the class's again after the block
    assert "torchlint:" not in capsys.readouterr().err


def test_first_nan_ends_the_block_before_the_update_with_the_op_and_line(capsys):
    losses, w = _train(zero_at=3)
    assert [(e.code, e.step, e.op, e.line) for e in w.events] == [("TL901", 3, "log", LOG_LINE)]
    assert len(losses) == 2  # step 3 raised inside optimizer.step(): no update, the rest of the loop skipped
    assert f"test_integrations_accelerate.py:{LOG_LINE}: TL901 non-finite-forward at step 3:" in capsys.readouterr().err


def test_stop_on_event_false_keeps_the_loop_going():
    losses, w = _train(zero_at=3, stop_on_event=False)
    assert len(losses) == 8
    assert [e.code for e in w.events] == ["TL901"]


def test_gradient_accumulation_reads_the_loss_the_loop_computed():
    losses, w = _train(accumulation=2)
    assert w.step == 4  # optimizer steps, not batches
    # the last micro-batch's loss as the loop computed it, not divided by the accumulation steps
    assert [s.loss for s in w.history] == pytest.approx(losses[1::2])


def test_eps_below_float16_on_float16_parameters():
    _, w = _train(half=True, stop_on_event=False)
    setup = w.events[0]
    assert (setup.code, setup.step, setup.line) == ("TL110", 0, WATCH_LINE)
    assert setup.message.startswith("`Adam` updates 4 float16 parameter tensor(s) (such as `0.weight`) with eps=1e-08")
    assert setup.message.endswith("; use eps=1e-4, or keep float32 parameters (Accelerator(mixed_precision=...) "
                                  "keeps them)")
    assert [e.code for e in w.events[1:]] == ["TL906"]


def test_eps_zero_is_reported_whatever_the_dtype_and_a_plain_optimizer_is_not():
    from torchlint.integrations.common import optimizer_events

    model = torch.nn.Linear(2, 2)
    [event] = optimizer_events(torch.optim.Adam(model.parameters(), eps=0), model, "unused")
    assert (event.code, event.step, event.message) == (
        "TL110", 0, "`Adam` has eps=0: the update divides by sqrt(v) + eps, so a parameter with zero gradient "
        "history gives 0/0 = NaN; keep eps > 0")
    assert optimizer_events(torch.optim.SGD(model.half().parameters(), lr=0.1), model, "unused") == []
