"""`--repro K`: run the first K steps twice and compare them bitwise (TL905).

A script is run twice in fresh processes, as a user re-runs it: each run writes, per optimizer
step, the loss and an exact digest of every parameter and its gradient, taken in the step
pre-hook (before the update). The first step where the two runs differ, and the first parameter
or gradient there, is the finding.

    python -m torchlint.runtime.repro K OUT.jsonl script.py [script args]
    python -m torchlint.runtime.repro K OUT.jsonl -m package.module [script args]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import torch

from torchlint.runtime.launch import Program, execute, from_argv


def digest(tensor: torch.Tensor) -> str:
    """An exact fingerprint of a tensor's bytes (position-weighted, so permutations differ too)."""
    data = tensor.detach().contiguous().reshape(-1).view(torch.uint8).to(torch.int64).cpu()
    weights = torch.arange(1, data.numel() + 1, dtype=torch.int64) % 65521 + 1
    return f"{tuple(tensor.shape)}:{int((data * weights).sum())}:{int(data.sum())}"


def compare(first: list[dict], second: list[dict]):
    """(step, what differs, loss a, loss b) for the first difference, or None."""
    for a, b in zip(first, second, strict=False):
        for name, (param_a, grad_a) in a["params"].items():
            param_b, grad_b = b["params"].get(name, (None, None))
            if param_a != param_b:
                return a["step"], f"parameter `{name}`", a["loss"], b["loss"]
            if grad_a != grad_b:
                return a["step"], f"the gradient of `{name}`", a["loss"], b["loss"]
        if a["loss"] != b["loss"]:
            return a["step"], "the loss", a["loss"], b["loss"]
    return None


class _Done(Exception):
    pass


def record(program: Program, steps: int, out_path: str) -> None:
    """The child: run the script, writing one JSON line per optimizer step, stopping after `steps`."""
    from torch.nn.modules.module import register_module_forward_hook
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    modules: dict[int, torch.nn.Module] = {}
    state = {"step": 0, "loss": None}
    original_backward = torch.Tensor.backward

    def backward(tensor, *a, **k):
        if tensor.numel() == 1:
            state["loss"] = tensor.detach()
        return original_backward(tensor, *a, **k)

    def on_forward(module, _args, _output):
        modules.setdefault(id(module), module)

    def names() -> dict[int, str]:
        best: dict[int, tuple[int, str]] = {}
        for module in modules.values():
            size = sum(1 for _ in module.parameters())
            for name, param in module.named_parameters():
                if size > best.get(id(param), (-1, ""))[0]:
                    best[id(param)] = (size, name)
        return {key: name for key, (_, name) in best.items()}

    def before_step(optimizer, _a, _k):
        state["step"] += 1
        named = names()
        params = {}
        for index, param in enumerate(p for group in optimizer.param_groups for p in group["params"]):
            grad = digest(param.grad) if param.grad is not None else None
            params[named.get(id(param), f"parameter {index}")] = (digest(param), grad)
        loss = state["loss"]
        line = {"step": state["step"], "loss": float(loss.float()) if loss is not None else None, "params": params}
        with open(out_path, "a") as out:
            out.write(json.dumps(line) + "\n")
        if state["step"] >= steps:
            raise _Done

    handles = [register_module_forward_hook(on_forward), register_optimizer_step_pre_hook(before_step)]
    torch.Tensor.backward = backward
    try:
        execute(program)
    except (_Done, SystemExit):
        pass
    finally:
        torch.Tensor.backward = original_backward
        for handle in handles:
            handle.remove()


def script_runs_differ(program: Program, steps: int):
    """Run the script twice in fresh processes; the first difference (see `compare`), or None.
    Also returns how many steps both runs reached."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for attempt in range(2):
            out = os.path.join(scratch, f"run{attempt}.jsonl")
            open(out, "w").close()
            subprocess.run([sys.executable, "-m", "torchlint.runtime.repro", str(steps), out, *program.argv()],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            with open(out) as lines:
                runs.append([json.loads(line) for line in lines])
    return compare(*runs), min(len(runs[0]), len(runs[1]))


if __name__ == "__main__":
    record(from_argv(sys.argv[3:]), int(sys.argv[1]), sys.argv[2])
