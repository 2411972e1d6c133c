"""`torchlint run model.py:Net`: train a model for a few steps on synthetic data under `watch`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from torchlint.graph.inputs import InputSpec
from torchlint.runtime.watch import Event, StepStats, watch

SIZES = {"B": 8}  # symbolic dims get these sizes; any other name gets 16
OTHER_SIZE = 16


@dataclass
class RunReport:
    target: str
    inputs: list[str]
    device: str  # "process" for a script run unchanged
    steps: int = 0
    history: list[StepStats] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    repro: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the user's files involved
    not_observed: list = field(default_factory=list)  # static findings no event confirmed
    rank: int | None = None  # this process's rank when the program ran on several (torchrun, DDP)
    world: int = 1  # how many ranks exchanged their checks each step


# the static rules whose mechanism the runtime checks can observe (numerics, memory, seeding)
OBSERVABLE = ("TL1", "TL301", "TL402")


def settle(report: RunReport, repro_ran: bool = False) -> RunReport:
    """List the static findings in the files involved that no runtime event confirmed or explained."""
    from torchlint.runtime.confirm import static_findings

    seen = {(os.path.abspath(f.path), f.line, f.code) for e in report.events for f in e.confirmed}
    prefixes = (*OBSERVABLE, "TL5") if repro_ran else OBSERVABLE
    report.not_observed = [f for f in static_findings(report.sources)
                           if f.code.startswith(prefixes) and (os.path.abspath(f.path), f.line, f.code) not in seen]
    return report


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
              device_name: str, explode_factor: float, on_step=None, snapshot: bool = False,
              sync: bool = False) -> RunReport:
    device = torch.device("cuda" if device_name == "auto" and torch.cuda.is_available() else
                          ("cpu" if device_name == "auto" else device_name))
    torch.manual_seed(0)
    model = target.model.to(device).train()
    inputs, criterion, optimizer = training_setup(model, specs, loss, optimizer_name, lr, device)
    report = RunReport(target.name, [str(s) for s in specs], str(device), notes=list(target.notes))
    with watch(model, optimizer, explode_factor=explode_factor, on_step=on_step, snapshot=snapshot, sync=sync,
               files=[str(target.source)] if target.source else []) as watcher:
        for _ in range(steps):
            train_step(model, inputs, criterion, optimizer)
            report.steps += 1
            if watcher.events:
                break
    report.events, report.history = watcher.events, watcher.history
    report.sources = watcher.sources()
    return report


def check_repro(build, specs: list[InputSpec], steps: int, loss: str, optimizer_name: str, lr: float | None,
                source: str | None) -> Event | None:
    """Train twice from the same seeds; the first step whose loss or parameters differ bitwise is TL905."""
    from torchlint.runtime.repro import compare, digest

    def trajectory():
        torch.manual_seed(0)
        model = build().train()
        torch.manual_seed(1)
        inputs, criterion, optimizer = training_setup(model, specs, loss, optimizer_name, lr, torch.device("cpu"))
        records = []
        for step in range(1, steps + 1):
            value = train_step(model, inputs, criterion, optimizer)
            records.append({"step": step, "loss": value.item(),
                            "params": {n: (digest(p), None) for n, p in model.named_parameters()}})
        return records

    return repro_event(compare(trajectory(), trajectory()), [source])


def repro_event(difference, sources: list[str | None]) -> Event | None:
    """The TL905 event for the first difference between two runs, explained by static TL5xx findings."""
    from torchlint.runtime.catalog import NONDETERMINISTIC
    from torchlint.runtime.confirm import explain

    if difference is None:
        return None
    step, where, loss_a, loss_b = difference
    losses = f" (loss {loss_a:.6g} vs {loss_b:.6g})" if loss_a is not None and loss_b is not None else ""
    name = where.split("`")[1] if "`" in where else None
    event = Event(NONDETERMINISTIC.code, NONDETERMINISTIC.name, step,
                  f"step {step}: two runs from the same seeds differ first in {where}{losses}", name)
    explain(event, sources)
    return event
