"""`with torchlint.watch(model, optimizer):` cheap per-step checks, slow path only when one fires.

Cheap path, every step: each module's output contributes one float32 sum (its finiteness says
whether the output holds a NaN/Inf); gradients get one foreach norm; the step boundary is the
optimizer's step pre-hook. All of it is read with a single device sync per step. Gradient norms at
module outputs and inputs are kept as tensors and read only when something fires.

Slow path, for the failing step only: the first module (in completion order) whose output is not
finite, or the module that amplifies the gradient most, is re-run on its saved input under a
TorchFunctionMode that records every op and its source line, which names the op.
"""

from __future__ import annotations

import os
import statistics
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from torchlint.runtime.catalog import (
    EXPLODING_GRADIENT,
    MEMORY_GROWTH,
    NON_FINITE_FORWARD,
    NON_FINITE_GRADIENT,
)

MEMORY_WINDOW = 20  # steps
MEMORY_MIN_GROWTH = 8 * 2**20  # bytes over the window

_TORCH_ROOT = str(Path(torch.__file__).parent)
_HERE = str(Path(__file__).resolve().parents[1])


@dataclass
class Event:
    code: str
    name: str
    step: int
    message: str
    module: str | None = None
    op: str | None = None
    file: str | None = None
    line: int | None = None
    confirmed: list = field(default_factory=list)  # static findings at the same line


def _user_frame() -> tuple[str | None, int | None]:
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_TORCH_ROOT) and not frame.filename.startswith(_HERE) \
                and "contextlib" not in frame.filename:
            return frame.filename, frame.lineno
    return None, None


class _OpRecorder(TorchFunctionMode):
    """Records each torch op run inside it: name, output tensor, inputs, the user's source line."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, torch.Tensor, list[torch.Tensor], str | None, int | None]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", str(func))
        if isinstance(result, torch.Tensor) and not name.startswith("__get") and name not in ("detach", "size", "dim"):
            inputs = [a for a in args if isinstance(a, torch.Tensor)]
            file, line = _user_frame()
            self.records.append((name, result, inputs, file, line))
        return result


class StopRun(Exception):
    """Raised from the step hook to stop a watched script at its first problem or at --max-steps."""


class Watch:
    """Watch a model and its optimizer; `events` holds what fired (the first problem by default)."""

    def __init__(self, model: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None,
                 explode_factor: float = 1e3, warmup: int = 5, stop_at_first: bool = True,
                 max_steps: int | None = None) -> None:
        self.model = model
        self.optimizer = optimizer
        self.explode_factor = explode_factor
        self.warmup = warmup
        self.stop_at_first = stop_at_first
        self.step = 0
        self.events: list[Event] = []
        self.norm_history: list[float] = []
        self.max_steps = max_steps
        self.memory: list[int] = []
        # keyed by module object: names are resolved only on the slow path
        self._sums: list[tuple[torch.nn.Module, torch.Tensor]] = []
        self._inputs: dict[torch.nn.Module, tuple] = {}
        self._grad_out: dict[torch.nn.Module, torch.Tensor] = {}
        self._grad_in: dict[torch.nn.Module, torch.Tensor] = {}
        self._handles: list = []
        self._replaying = False

    # -- installation ------------------------------------------------------------------
    def __enter__(self) -> Watch:
        if self.model is None:  # process-wide: every module and every optimizer of the program
            from torch.nn.modules.module import register_module_forward_hook
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            self._handles.append(register_module_forward_hook(self._on_forward))
            self._handles.append(register_optimizer_step_pre_hook(self._before_step))
            return self
        for module in self.model.modules():
            self._handles.append(module.register_forward_hook(self._on_forward))
        self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _on_forward(self, module, args, output) -> None:
        if self._replaying:
            return
        out = output if isinstance(output, torch.Tensor) else next(
            (o for o in (output if isinstance(output, (tuple, list)) else ()) if isinstance(o, torch.Tensor)), None)
        if out is None or not out.is_floating_point():
            return
        self._sums.append((module, out.detach().float().sum()))
        self._inputs[module] = args
        if out.requires_grad:
            out.register_hook(lambda grad, m=module: self._grad_out.__setitem__(m, grad))
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is not None and first.requires_grad:
            first.register_hook(lambda grad, m=module: self._grad_in.__setitem__(m, grad))

    def _name_of(self, module: torch.nn.Module) -> str:
        """Its path in the watched model, or in the outermost module seen this step that contains it."""
        roots = [self.model] if self.model is not None else [m for m, _ in reversed(self._sums)]
        for root in roots:
            for name, sub in root.named_modules():
                if sub is module:
                    return name or ("<model>" if self.model is not None else type(root).__name__)
        return type(module).__name__

    # -- the cheap check, once per step ------------------------------------------------------
    def _before_step(self, optimizer, args, kwargs) -> None:
        self.step += 1
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        sums = torch.stack([s for _, s in self._sums]) if self._sums else torch.zeros(1)
        norms = torch._foreach_norm(grads) if grads else [torch.zeros(())]
        total = torch.linalg.vector_norm(torch.stack([n.float() for n in norms]))
        forward_ok, grad_norm = torch.stack([torch.isfinite(sums).all().float(), total.float()]).tolist()  # one sync
        try:
            if not forward_ok:
                self._forward_event(sums)
            elif not torch.isfinite(torch.tensor(grad_norm)):
                self._gradient_event(grad_norm)
            elif len(self.norm_history) >= self.warmup and \
                    grad_norm > self.explode_factor * statistics.median(self.norm_history[-50:]):
                self._explosion_event(grad_norm, statistics.median(self.norm_history[-50:]))
            else:
                self.norm_history.append(grad_norm)
                self._check_memory(grads[0].device if grads else torch.device("cpu"))
            if self.events and self.stop_at_first and self.model is None:
                raise StopRun()
            if self.max_steps is not None and self.step >= self.max_steps:
                raise StopRun()
        finally:
            self._sums.clear()
            self._inputs.clear()
            self._grad_out.clear()
            self._grad_in.clear()

    def _record(self, event: Event) -> None:
        if self.stop_at_first and self.events:
            return
        from torchlint.runtime.confirm import confirm

        confirm(event)
        self.events.append(event)

    # -- slow paths: name the module and the op ----------------------------------------------------
    def _forward_event(self, sums: torch.Tensor) -> None:
        finite = torch.isfinite(sums).tolist()
        module = self._sums[finite.index(False)][0]
        name = self._name_of(module)
        op = file = line = None
        if module in self._inputs:
            recorder = _OpRecorder()
            self._replaying = True
            try:
                with torch.no_grad(), recorder:
                    module(*self._inputs[module])
            finally:
                self._replaying = False
            for op_name, out, inputs, op_file, op_line in recorder.records:
                if not torch.isfinite(out).all() and all(torch.isfinite(i).all() for i in inputs if i.is_floating_point()):
                    op, file, line = op_name, op_file, op_line
                    break
        where = f"`{name}`" + (f", op torch.{op} at {os.path.basename(file)}:{line}" if op else "")
        self._record(Event(NON_FINITE_FORWARD.code, NON_FINITE_FORWARD.name, self.step,
                           f"step {self.step}: first non-finite output in {where}", name, op, file, line))

    def _check_memory(self, device: torch.device) -> None:
        """Allocated CUDA memory (a host-side counter: no sync) or the process RSS, once per step."""
        if device.type == "cuda":
            used = torch.cuda.memory_allocated(device)
        else:
            try:
                with open("/proc/self/statm") as statm:
                    used = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                return
        self.memory.append(used)
        if len(self.memory) <= MEMORY_WINDOW or any(e.code == MEMORY_GROWTH.code for e in self.events):
            return
        window = self.memory[-MEMORY_WINDOW - 1:]
        rises = sum(b > a for a, b in zip(window, window[1:], strict=False))
        growth = window[-1] - window[0]
        if rises >= 0.8 * MEMORY_WINDOW and growth > max(MEMORY_MIN_GROWTH, 0.05 * window[0]):
            per_step = growth / MEMORY_WINDOW / 2**20
            where = "allocated CUDA memory" if device.type == "cuda" else "resident memory"
            self._record(Event(MEMORY_GROWTH.code, MEMORY_GROWTH.name, self.step,
                               f"step {self.step}: {where} grew in {rises} of the last {MEMORY_WINDOW} steps, "
                               f"{per_step:.1f} MiB per step ({window[0] / 2**20:.0f} -> {window[-1] / 2**20:.0f} MiB): "
                               "something keeps each iteration alive, such as a loss accumulated without .item() (TL402)"))

    def _gradient_event(self, grad_norm: float) -> None:
        """Finite forward, non-finite gradient (sqrt or norm at 0...): replay this step's backward
        under anomaly detection. The parameters have not been updated yet, so no snapshot is needed."""
        backward = file = line = None
        root = self._sums[-1][0] if self._sums else None  # the outermost module completes last
        if root is not None and root in self._inputs and root in self._grad_out \
                and torch.isfinite(self._grad_out[root]).all():
            backward, file, line = self._anomaly_replay(root)
        where = f": {backward} at {os.path.basename(file)}:{line}" if backward else ""
        self._record(Event(NON_FINITE_GRADIENT.code, NON_FINITE_GRADIENT.name, self.step,
                           f"step {self.step}: gradient norm is {grad_norm} with a finite forward pass{where}",
                           self._name_of(root) if root is not None else None,
                           backward.removesuffix("Backward0").lower() if backward else None, file, line))

    def _anomaly_replay(self, root: torch.nn.Module):
        import re
        import warnings

        args = [a.detach() if isinstance(a, torch.Tensor) else a for a in self._inputs[root]]
        params = [p for p in root.parameters() if p.requires_grad]
        self._replaying = True
        try:
            with warnings.catch_warnings(record=True) as caught, torch.autograd.detect_anomaly(check_nan=True):
                warnings.simplefilter("always")
                out = root(*args)
                try:
                    torch.autograd.grad(out, params, grad_outputs=self._grad_out[root], allow_unused=True)
                except RuntimeError as error:
                    function = re.search(r"Function '(\w+)' returned nan", str(error))
                    frames = "\n".join(str(w.message) for w in caught)
                    found = [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', frames)
                             if not f.startswith(_TORCH_ROOT) and not f.startswith(_HERE)]
                    file, line = found[-1] if found else (None, None)
                    return (function.group(1) if function else None), file, line
        finally:
            self._replaying = False
        return None, None, None

    def _explosion_event(self, grad_norm: float, median: float) -> None:
        amplification = {}
        for module, grad_in in self._grad_in.items():
            grad_out = self._grad_out.get(module)
            if grad_out is not None:
                amplification[module] = (grad_in.norm() / grad_out.norm().clamp_min(1e-30)).item()
        module = max(amplification, key=amplification.get) if amplification else None
        name = self._name_of(module) if module is not None else None
        op = file = line = None
        if module is not None and module in self._inputs and module in self._grad_out:
            op, file, line = self._amplifying_op(module)
        where = f" in `{name}`" + (f", op torch.{op} at {os.path.basename(file)}:{line}" if op else "") if name else ""
        self._record(Event(EXPLODING_GRADIENT.code, EXPLODING_GRADIENT.name, self.step,
                           f"step {self.step}: gradient norm {grad_norm:.3g} is {grad_norm / median:.3g}x the "
                           f"running median {median:.3g}{where}", name, op, file, line))

    def _amplifying_op(self, module: torch.nn.Module):
        """Replay the module with the same upstream gradient; the op whose input gradient is largest
        relative to its output gradient is the one that blew it up. torch.autograd.grad leaves the
        parameters' .grad untouched: the real step is about to use them."""
        args = [a.detach().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in self._inputs[module]]
        recorder = _OpRecorder()
        self._replaying = True
        try:
            with torch.enable_grad(), recorder:
                out = module(*args)
        finally:
            self._replaying = False
        tensors = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        tensors += [r for _, r, _, _, _ in recorder.records if r.requires_grad and r is not out]
        grads = torch.autograd.grad(out, [*tensors, out], grad_outputs=self._grad_out[module], allow_unused=True)
        by_id = {id(t): g for t, g in zip([*tensors, out], grads, strict=True)}
        best, best_ratio = (None, None, None), 0.0
        for op_name, result, inputs, file, line in recorder.records:
            out_grad = by_id.get(id(result))
            if out_grad is None or out_grad.norm().item() == 0:
                continue
            for tensor in inputs:
                in_grad = by_id.get(id(tensor))
                if in_grad is not None:
                    ratio = in_grad.norm().item() / out_grad.norm().item()
                    if ratio > best_ratio:
                        best, best_ratio = (op_name, file, line), ratio
        return best


def watch(model: torch.nn.Module, optimizer: torch.optim.Optimizer, **options) -> Watch:
    """Use as `with torchlint.watch(model, optimizer) as w: ...`; then read `w.events`."""
    return Watch(model, optimizer, **options)
