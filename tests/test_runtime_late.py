"""Checks read one step late (a busy GPU), run on CPU with `reductions.LATE_ON_CPU`: the same events,
steps and lines as when every check is read at its own step."""

import pytest
from conftest import FIXTURES

torch = pytest.importorskip("torch")
import torchlint  # noqa: E402
from torchlint.runtime import late_steps, reductions  # noqa: E402
from torchlint.runtime.records import StopRun  # noqa: E402


@pytest.fixture
def late(monkeypatch):
    monkeypatch.setattr(reductions, "LATE_ON_CPU", True)


class LogNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.out = torch.nn.Linear(8, 1)

    def forward(self, x):
        return self.out(torch.log(x.abs().sum(-1, keepdim=True)) * self.fc(x))  # log(0) at a zero row


LOG_LINE = 25  # of the torch.log above


def _train(steps=8, zero_at=5, **options):
    torch.manual_seed(0)
    model = LogNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer, **options) as watcher:
        for step in range(steps):
            x = torch.randn(16, 8)
            if step == zero_at:
                x[3] = 0
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    return watcher


def _summary(watcher):
    return ([(e.code, e.step, e.module, e.op, e.line, e.message) for e in watcher.events],
            [(s.step, repr(s.loss), repr(s.grad_norm)) for s in watcher.history])  # repr: nan == nan


def test_a_late_step_is_judged_with_the_weights_it_started_from(late):
    watcher = _train()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL901", 6, "<model>", "log", LOG_LINE)
    assert watcher._late is None and len(watcher.history) == 8  # the last step was judged when the watch ended


def test_late_and_synchronous_reads_give_the_same_report(late):
    late_run = _summary(_train())
    synchronous = _summary(_train(sync=True))
    assert late_run == synchronous


def test_the_weights_are_put_back_after_each_late_judgement(late):
    """Every late step is judged with the weights it started from swapped in: were they not put back,
    training would go on from stale weights and the losses would differ."""
    assert _summary(_train(zero_at=None)) == _summary(_train(zero_at=None, sync=True))


def test_without_room_for_the_weights_a_late_step_says_why_it_is_not_replayed(late, monkeypatch):
    monkeypatch.setattr(late_steps, "_fits", lambda params: False)
    [event] = _train().events
    assert (event.code, event.step, event.op) == ("TL901", 6, None)
    assert "(not replayed: the GPU was still busy, so this step's check was read when the next step began" in event.message


def test_a_late_step_with_nan_in_its_input_still_names_the_data(late, monkeypatch):
    monkeypatch.setattr(late_steps, "_fits", lambda params: False)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(3):
            x = torch.randn(8, 4)
            if step == 1:
                x[0, 0] = float("nan")
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    [event] = watcher.events
    assert event.step == 2 and "its input already holds NaN/Inf: " in event.message


def test_a_loss_made_non_finite_after_the_model_is_named_when_read_late(late):
    import runpy

    with pytest.raises(StopRun), torchlint.watch(None, None) as watcher:
        runpy.run_path(str(FIXTURES / "numerics" / "loss_outside_model.py"), run_name="__main__")
    [event] = watcher.events
    assert (event.code, event.step, event.op, event.line) == ("TL901", 1, "log", 18)
    assert watcher.step == 1  # judged when step 2 began, which stopped before its update


def test_max_steps_judges_the_last_step_before_stopping(late):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(StopRun), torchlint.watch(None, None, max_steps=3) as watcher:
        for _ in range(10):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            optimizer.step()
    assert watcher.step == 3 and [s.step for s in watcher.history] == [1, 2, 3] and watcher._late is None


def test_gradients_never_cleared_are_found_at_step_two_when_read_late(late):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(4):
            model(torch.randn(8, 4)).pow(2).mean().backward()  # no zero_grad()
            optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step) == ("TL909", 2)


def test_the_step_vector_is_stacked_from_one_dtype():
    """On CUDA a stack of mixed dtypes copies its inputs one by one (one copy per gradient of a
    bfloat16 model); the values are brought to one dtype first."""
    from torch.utils._python_dispatch import TorchDispatchMode

    stacked = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in (torch.ops.aten.stack.default, torch.ops.aten.cat.default):
                stacked.append({t.dtype for t in args[0]})
            return func(*args, **(kwargs or {}))

    values = [torch.tensor(1.5, dtype=torch.bfloat16), torch.tensor(2.0), torch.tensor(float("nan"), dtype=torch.half)]
    with Spy():
        read = reductions.Reading(values, torch.device("cpu")).values()
    assert stacked == [{torch.float32}] and read[:2] == [1.5, 2.0] and read[2] != read[2]
