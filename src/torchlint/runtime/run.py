"""`torchlint run model.py:Net`: train a model for a few steps on synthetic data under `watch`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from torchlint.graph.inputs import InputSpec
from torchlint.runtime.watch import Event, watch

SIZES = {"B": 8}  # symbolic dims get these sizes; any other name gets 16
OTHER_SIZE = 16


@dataclass
class RunReport:
    target: str
    inputs: list[str]
    device: str
    steps: int = 0
    losses: list[float] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    repro: list[str] = field(default_factory=list)


def synthetic_inputs(model: torch.nn.Module, specs: list[InputSpec], device: torch.device) -> list[torch.Tensor]:
    vocab = next((m.num_embeddings for m in model.modules() if isinstance(m, torch.nn.Embedding)), 2)
    tensors = []
    for spec in specs:
        shape = [SIZES.get(d, OTHER_SIZE) if isinstance(d, str) else d for d in spec.dims]
        dtype = getattr(torch, spec.dtype)
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, device=device, dtype=dtype))
        elif dtype == torch.bool:
            tensors.append(torch.rand(shape, device=device) > 0.5)
        else:
            tensors.append(torch.randint(0, vocab, shape, device=device, dtype=dtype))
    return tensors


def training_setup(model, specs: list[InputSpec], loss: str, optimizer_name: str, lr: float | None,
                   device: torch.device):
    """Synthetic inputs, a criterion against fixed synthetic targets, and the optimizer."""
    inputs = synthetic_inputs(model, specs, device)
    with torch.no_grad():
        sample = model(*inputs)
    sample = sample[0] if isinstance(sample, (tuple, list)) else sample
    if loss == "ce":
        targets = torch.randint(0, sample.shape[-1], sample.shape[:-1], device=device)

        def criterion(out):
            return torch.nn.functional.cross_entropy(out.flatten(0, -2), targets.flatten())
    else:
        targets = torch.randn_like(sample)

        def criterion(out):
            return torch.nn.functional.mse_loss(out, targets)
    if optimizer_name == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=lr or 1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr or 1e-2)
    return inputs, criterion, optimizer


def train_step(model, inputs, criterion, optimizer) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    output = model(*inputs)
    value = criterion(output[0] if isinstance(output, (tuple, list)) else output)
    value.backward()
    optimizer.step()
    return value.detach()


def run_model(target, specs: list[InputSpec], steps: int, loss: str, optimizer_name: str, lr: float | None,
              device_name: str, explode_factor: float) -> RunReport:
    device = torch.device("cuda" if device_name == "auto" and torch.cuda.is_available() else
                          ("cpu" if device_name == "auto" else device_name))
    torch.manual_seed(0)
    model = target.model.to(device).train()
    inputs, criterion, optimizer = training_setup(model, specs, loss, optimizer_name, lr, device)
    report = RunReport(target.name, [str(s) for s in specs], str(device), notes=list(target.notes))
    with watch(model, optimizer, explode_factor=explode_factor) as watcher:
        for _ in range(steps):
            value = train_step(model, inputs, criterion, optimizer)
            report.steps += 1
            if watcher.events:
                break
            report.losses.append(value.item())
    report.events = watcher.events
    return report


def check_repro(build, specs: list[InputSpec], steps: int, loss: str, optimizer_name: str, lr: float | None,
                source: str | None) -> Event | None:
    """Train twice from the same seeds; the first step whose loss or parameters differ bitwise is TL905."""
    from torchlint.runtime.catalog import NONDETERMINISTIC

    def trajectory():
        torch.manual_seed(0)
        model = build().train()
        torch.manual_seed(1)
        inputs, criterion, optimizer = training_setup(model, specs, loss, optimizer_name, lr, torch.device("cpu"))
        history = []
        for _ in range(steps):
            value = train_step(model, inputs, criterion, optimizer)
            history.append((value, {n: p.detach().clone() for n, p in model.named_parameters()}))
        return history

    first, second = trajectory(), trajectory()
    for step, ((loss_a, params_a), (loss_b, params_b)) in enumerate(zip(first, second, strict=True), start=1):
        differing = [n for n in params_a if not torch.equal(params_a[n], params_b[n])]
        if differing or not torch.equal(loss_a, loss_b):
            where = f"parameter `{differing[0]}`" if differing else "the loss"
            event = Event(NONDETERMINISTIC.code, NONDETERMINISTIC.name, step,
                          f"step {step}: two runs from the same seeds differ first in {where} "
                          f"(loss {loss_a.item():.6g} vs {loss_b.item():.6g})", differing[0] if differing else None)
            if source:
                from torchlint.api import check_paths

                event.confirmed = [f for f in check_paths([source]) if f.code.startswith("TL5")]
            return event
    return None


def _display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def render_run(report: RunReport) -> str:
    if report.device == "process":
        out = [f"{report.target}: {report.steps} optimizer step(s) watched"]
    else:
        out = [f"{report.target}: {report.steps} step(s) on {report.device}, synthetic inputs "
               f"{', '.join(report.inputs)}"]
    out.extend(f"note: {note}" for note in report.notes)
    if report.losses:
        out.append(f"loss: first {report.losses[0]:.4g}, last {report.losses[-1]:.4g}")
    for event in report.events:
        where = f"{_display(event.file)}:{event.line}: " if event.file else ""
        out.append(f"{where}{event.code} {event.name}: {event.message}")
        for finding in event.confirmed:
            verb = "explained by" if event.code in ("TL904", "TL905") else "confirms"
            out.append(f"  {verb} {finding.code} {finding.name} (static) at line {finding.line}: {finding.message}")
    if not report.events:
        out.append(f"No NaN/Inf or exploding gradient in {report.steps} steps.")
    for note in report.repro:
        out.append(note)
    return "\n".join(out) + "\n"
