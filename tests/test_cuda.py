"""The runtime checks on a CUDA device: same findings as on CPU, one host sync per step.

Marked `cuda`: skipped (with the reason) where no CUDA device is present.
"""

import subprocess
import sys
import warnings

import pytest
from conftest import FIXTURES, ROOT
from test_runtime_late import LOG_LINE, LogNet

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


def _keeping(steps: int, keep) -> list:
    """The events of a Linear(1024) trained on CUDA while `keep(output)` runs after each step."""
    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 1024).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    with torchlint.watch(model, optimizer) as watcher:
        for _ in range(steps):
            optimizer.zero_grad()
            out = model(torch.randn(512, 1024, device="cuda"))
            out.pow(2).mean().backward()
            optimizer.step()
            keep(out)
    return watcher.events


def test_cuda_memory_growth_uses_the_allocator():
    kept = []
    # 2 MiB kept per step, without a graph: only the allocator sees it
    [event] = _keeping(40, lambda out: kept.append(out.detach().clone()))
    assert event.code == "TL904" and "allocated CUDA memory grew" in event.message


def test_cuda_outputs_kept_with_their_graphs_are_found_exactly():
    kept = []
    [event] = _keeping(10, kept.append)  # each step's output and its graph
    assert (event.code, event.step) == ("TL908", 5)


def _train_log_net(wrap=lambda model: model, busy: bool = False, steps: int = 8, zero_at: int | None = 5,
                   **options):
    """LogNet's steps on CUDA (wrapped by `wrap`), a zero input row at step `zero_at` + 1 (log(0));
    `busy`: about 10 ms of GPU work queued before each optimizer step, so the GPU is still busy when
    the step is checked."""
    torch.manual_seed(0)
    model = wrap(LogNet().cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.watch(model, optimizer, **options) as watcher:
        for step in range(steps):
            x = torch.randn(32, 8, device="cuda")
            if step == zero_at:
                x[3] = 0
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            if busy:
                torch.cuda._sleep(20_000_000)
            optimizer.step()
    return watcher


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])  # reduce-overhead: CUDA graphs
def test_a_compiled_model_on_cuda_is_watched_and_its_nan_named_by_an_eager_replay(mode):
    [event] = _train_log_net(lambda model: torch.compile(model, mode=mode)).events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL901", 6, "<model>", "log", LOG_LINE)


def test_a_busy_gpu_is_read_one_step_late_and_the_op_still_named():
    """The step's check is read when the next step begins, and judged with the weights it started
    from (the update has run by then)."""
    watcher = _train_log_net(busy=True)
    [event] = watcher.events
    assert (event.code, event.step, event.module, event.op, event.line) == ("TL901", 6, "<model>", "log", LOG_LINE)
    assert watcher.read_late >= 5  # timing: a step may find the GPU done (7 of 8 were read late on an H200)


def test_sync_reads_every_step_at_its_own_step():
    watcher = _train_log_net(busy=True, steps=3, zero_at=None, sync=True)
    assert watcher.read_late == 0 and watcher.events == []
