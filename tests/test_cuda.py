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
            kept.append(out)  # 2 MiB of activations (and their graph) kept per step
    [event] = watcher.events
    assert event.code == "TL904" and "allocated CUDA memory grew" in event.message
