"""The runtime checks on a CUDA device: same findings as on CPU, one host sync per step.

Marked `cuda`: skipped (with the reason) where no CUDA device is present.
"""

import subprocess
import sys
import warnings

import pytest
from conftest import FIXTURES, ROOT

torch = pytest.importorskip("torch")
import torchlint  # noqa: E402

pytestmark = pytest.mark.cuda


def _syncs(fn) -> int:
    """How many times `fn` makes the host wait for the device (CUDA's sync debug mode warns on each)."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught)


def test_one_host_sync_per_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU())
                                  for _ in range(6)]).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")

    def steps(n=10):
        for _ in range(n):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    steps(3)  # warm-up: lazy initialisation may sync
    plain = _syncs(steps)

    def watched():
        with torchlint.watch(model, optimizer) as watcher:
            steps()
        assert watcher.events == [] and watcher.step == 10

    # 13 modules are checked each step; one sync per step, plus one at the end for the last update
    assert _syncs(watched) - plain <= 10 + 1


def test_seed_exercise_on_cuda_same_step_layer_op_and_line():
    import importlib.util

    spec = importlib.util.spec_from_file_location("nan_hunt_mlp", FIXTURES / "numerics" / "nan_hunt_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.MLP().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    features, labels = torch.randn(64, 16, device="cuda"), torch.randint(0, 4, (64,), device="cuda")
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(1, 60):
            module.STEP = step
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(features), labels).backward()
            optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL903", 51, "layer2", "log", 17)


def test_run_model_on_cuda_names_the_nan_op():
    result = subprocess.run([sys.executable, "-m", "torchlint", "run", "--device", "cuda", "--steps", "5",
                             str(FIXTURES / "models" / "sqrt_head.py:SqrtHead")],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "on cuda" in result.stdout and "TL901 non-finite-forward: step 1:" in result.stdout
    assert "op torch.sqrt" in result.stdout


def test_cuda_memory_growth_uses_the_allocator():
    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 1024).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    kept = []
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(40):
            optimizer.zero_grad()
            out = model(torch.randn(512, 1024, device="cuda"))
            out.pow(2).mean().backward()
            optimizer.step()
            kept.append(out.detach().clone())  # 2 MiB kept per step, without a graph: only the allocator sees it
    [event] = watcher.events
    assert event.code == "TL904" and "allocated CUDA memory grew" in event.message


def test_cuda_outputs_kept_with_their_graphs_are_found_exactly():
    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 1024).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    kept = []
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(10):
            optimizer.zero_grad()
            out = model(torch.randn(512, 1024, device="cuda"))
            out.pow(2).mean().backward()
            optimizer.step()
            kept.append(out)  # each step's output and its graph
    [event] = watcher.events
    assert (event.code, event.step) == ("TL908", 5)


class _LogNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)
        self.out = torch.nn.Linear(64, 1)

    def forward(self, x):
        return self.out(torch.log(x.abs().sum(-1, keepdim=True)) * self.fc(x))  # -inf at a zero row


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])  # reduce-overhead: CUDA graphs
def test_a_compiled_model_on_cuda_is_watched_and_its_nan_named_by_an_eager_replay(mode):
    torch.manual_seed(0)
    model = torch.compile(_LogNet().cuda(), mode=mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(8):
            x = torch.randn(32, 64, device="cuda")
            if step == 5:
                x[3] = 0
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL901", 6, "<model>", "log", 125)


def test_a_busy_gpu_is_read_one_step_late_and_the_op_still_named():
    """The host queues a long kernel before each optimizer step, so the GPU is still busy when the
    step's check is made: it is read when the next step begins, and judged with the weights it
    started from (the update has run by then)."""
    torch.manual_seed(0)
    model = _LogNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer) as watcher:
        for step in range(8):
            x = torch.randn(32, 64, device="cuda")
            if step == 5:
                x[3] = 0
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            torch.cuda._sleep(20_000_000)  # about 10 ms of GPU time
            optimizer.step()
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL901", 6, "<model>", "log", 125)
    assert watcher.read_late >= 5  # timing: a step may find the GPU done (7 of 8 were read late on an H200)


def test_sync_reads_every_step_at_its_own_step():
    torch.manual_seed(0)
    model = _LogNet().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer, sync=True) as watcher:
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(32, 64, device="cuda")).pow(2).mean().backward()
            torch.cuda._sleep(20_000_000)
            optimizer.step()
    assert watcher.read_late == 0 and watcher.events == []
