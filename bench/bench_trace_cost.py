"""The trace's memory and FLOP formulas against a real training step on CPU.

For a few small models, the training memory `torchlint trace --dims` predicts (weights + gradients
+ AdamW state + activations saved for backward) is compared with the peak of live tensor storage
measured during one real AdamW step (after a warm-up step, so the optimizer state exists), and the
forward FLOPs with torch's FlopCounterMode on real tensors. The loss is ``out.pow(2).mean()``. With
``--device cuda`` the measured peak is the weights and optimizer state plus the step's rise of CUDA's
own `torch.cuda.max_memory_allocated` over what was allocated before it (the caching allocator's
blocks, rounded to 512 bytes; cuBLAS workspaces made by the warm-up step are left out).

    python bench/bench_trace_cost.py [--device cpu|cuda]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from torchlint.graph.costs import summarise  # noqa: E402
from torchlint.graph.formulas import Formulas  # noqa: E402
from torchlint.graph.inputs import parse_input  # noqa: E402
from torchlint.graph.peak import LiveStorage, optimizer_step_extra, training_peak  # noqa: E402
from torchlint.graph.shapes import propagate, trace  # noqa: E402
from torchlint.graph.target import load_target  # noqa: E402

CASES = [  # target, constructor kwargs, input spec, dims, real input maker
    ("fixtures/models/llama.py:Llama", '{"dim": 256, "layers": 4, "heads": 4, "hidden": 688, "vocab": 1000}',
     "int64[B, T]", {"B": 8, "T": 256}, lambda: torch.randint(0, 1000, (8, 256))),
    ("fixtures/models/llama.py:Llama", '{"dim": 512, "layers": 2, "heads": 8, "hidden": 1376, "vocab": 2000}',
     "int64[B, T]", {"B": 4, "T": 512}, lambda: torch.randint(0, 2000, (4, 512))),
    ("fixtures/models/mlp.py:MLP", '{"features": 784, "hidden": 2048, "classes": 10}', "float32[B, 784]",
     {"B": 512}, lambda: torch.randn(512, 784)),
    ("fixtures/models/attention.py:Attention", '{"dim": 256, "heads": 8}', "float32[B, T, 256]",
     {"B": 8, "T": 512}, lambda: torch.randn(8, 512, 256)),
]


def measured(model: torch.nn.Module, make_input, device: str = "cpu") -> tuple[int, int]:
    """Peak live bytes of one AdamW step after a warm-up step, and the forward FLOPs."""
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=False)

    def step():
        optimizer.zero_grad(set_to_none=True)
        out = model(make_input().to(device))
        out.float().pow(2).mean().backward()
        optimizer.step()

    step()
    optimizer.zero_grad(set_to_none=True)
    resident = sum(t.untyped_storage().nbytes() for t in [*model.parameters(), *model.buffers()])
    resident += sum(v.untyped_storage().nbytes() for state in optimizer.state.values() for v in state.values()
                    if isinstance(v, torch.Tensor) and v.dim() > 0)
    if device == "cuda":  # the step's own rise over what stays allocated (weights, state, cuBLAS workspaces)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return resident + torch.cuda.max_memory_allocated() - before, _flops(model, make_input, device)
    with LiveStorage(resident) as live:
        step()
    return live.peak, _flops(model, make_input, device)


def _flops(model: torch.nn.Module, make_input, device: str) -> int:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:  # CPU flash attention
        model(make_input().to(device))  # has no FLOP formula in torch; the math kernel's matmuls are the same count
    return counter.get_total_flops()


def predicted(target_text: str, kwargs: str | None, spec: str, dims: dict[str, int]):
    target = load_target(target_text, None, kwargs)
    inputs = [parse_input(spec)]
    graph = trace(target, inputs)
    report = propagate(target, graph, inputs)
    costs = summarise(report.rows, graph, target.model, "adamw")
    formulas = Formulas(report.symbols.names, dims)
    resident = formulas.value(costs.weights + costs.optimizer_state)
    peak = training_peak(graph, report.meter.sizes, formulas.value, resident, formulas.value(costs.trainable),
                         optimizer_step_extra(target.model, "adamw"))
    return formulas.value(costs.training), peak, formulas.value(costs.forward_flops)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    device = parser.parse_args().device
    torch.manual_seed(0)
    print(f"measured on {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}")
    print(f"{'model':44} {'sum':>9} {'peak':>9} {'measured':>9} {'sum/m':>6} {'peak/m':>6}  "
          f"{'FLOPs pred':>10} {'FLOPs real':>10}")
    for target_text, kwargs, spec, dims, make_input in CASES:
        memory, peak_predicted, flops = predicted(target_text, kwargs, spec, dims)
        peak, real_flops = measured(real_model(target_text, kwargs), make_input, device)
        label = f"{Path(target_text).stem} {_short(kwargs)} {dims}"[:44]
        mib = 2**20
        print(f"{label:44} {memory / mib:7.1f}Mi {peak_predicted / mib:7.1f}Mi {peak / mib:7.1f}Mi "
              f"{memory / peak:6.3f} {peak_predicted / peak:6.3f}  {flops / 1e9:9.2f}G {real_flops / 1e9:9.2f}G")


def _short(kwargs: str | None) -> str:
    return ",".join(f"{k}={v}" for k, v in __import__("json").loads(kwargs or "{}").items())


def real_model(target_text: str, kwargs: str | None) -> torch.nn.Module:
    """The model with real CPU weights (random: only sizes matter here)."""
    real = load_target(target_text, None, kwargs)
    model = real.model.to_empty(device="cpu") if real.device == "meta" else real.model
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.02)
    _reinit_buffers(model, target_text, kwargs)
    return model.train()


def _reinit_buffers(model: torch.nn.Module, target_text: str, kwargs: str | None) -> None:
    """Buffers made in __init__ are lost by to_empty: take them from a CPU build."""
    import json

    module_path, _, name = target_text.partition(":")
    sys.path.insert(0, str(ROOT / Path(module_path).parent))
    module = __import__(Path(module_path).stem)
    fresh = getattr(module, name)(**json.loads(kwargs or "{}"))
    for buffer, source in zip(model.buffers(), fresh.buffers(), strict=True):
        buffer.copy_(source)


if __name__ == "__main__":
    main()
