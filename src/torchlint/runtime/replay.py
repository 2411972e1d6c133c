"""The slow path: re-run one module or one step to name the op, with the user's state left untouched.

Every replay runs inside `preserved`: the RNG is set to the state it had when the step's forward
began (so dropout draws the same mask), and afterwards the RNG, the module's buffers (BatchNorm
running statistics) and its modules' attributes (a call counter) are put back as they were, so the
user's run goes on exactly as without us.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from torchlint.runtime.reductions import float_outputs

TORCH_ROOT = str(Path(torch.__file__).parent)
HERE = str(Path(__file__).resolve().parents[1])
_SKIPPED = ("detach", "size", "dim", "isfinite", "all")


def _frame(skipped: tuple[str, ...]) -> tuple[str | None, int | None]:
    """The innermost frame of the stack outside torchlint, context managers, torch's dispatch and
    the `skipped` folders."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith((HERE, *skipped)) and "contextlib" not in name \
                and not name.endswith(("overrides.py", "_ops.py")):
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


def user_frame() -> tuple[str | None, int | None]:
    """The innermost frame that is the user's code (not torch, not torchlint)."""
    return _frame((TORCH_ROOT,))


def innermost_frame() -> tuple[str | None, int | None]:
    """The innermost frame that is not torchlint's (torch's own included: an optimizer's update)."""
    return _frame(())


def _floats(values) -> list[torch.Tensor]:
    """The floating-point tensors among values, one level of lists/tuples flattened (foreach ops)."""
    out = []
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        out.extend(t for t in items if isinstance(t, torch.Tensor) and t.is_floating_point())
    return out


def rng_state() -> tuple:
    """The default generators' state: CPU, and every CUDA device once CUDA is in use (no device sync)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def set_rng_state(state: tuple) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def preserved(module: torch.nn.Module, start_rng: tuple | None):
    """Run a replay from the step's RNG state; restore the RNG, the module's buffers and its modules'
    plain attributes (a call counter) afterwards."""
    saved_rng = rng_state()
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    attributes = [(m, dict(m.__dict__)) for m in module.modules()]  # counters and flags a forward may set
    if start_rng is not None:
        set_rng_state(start_rng)
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, copy in buffers:
                buffer.copy_(copy)
        for owner, saved in attributes:
            owner.__dict__.clear()
            owner.__dict__.update(saved)
        set_rng_state(saved_rng)


def tensor_stats(tensor: torch.Tensor) -> str:
    """min/max of the finite values and the NaN/Inf counts, e.g. `min -2.1, max 0.003, 0 NaN, 0 Inf of 64`."""
    values = tensor.detach().float()
    finite = values[torch.isfinite(values)]
    nan, inf = int(torch.isnan(values).sum()), int(torch.isinf(values).sum())
    span = f"min {finite.min().item():.3g}, max {finite.max().item():.3g}, " if finite.numel() else ""
    return f"{span}{nan} NaN, {inf} Inf of {values.numel()}"


def _first_tensor(output):
    """The output tensor whose gradient the watch kept: the first floating-point one of a tuple, a
    list or a dict (see `reductions.float_outputs`), or None."""
    found = float_outputs(output)
    return found[0] if found else None


class _FirstNonFinite(Exception):
    pass


class OpRecorder(TorchFunctionMode):
    """Records each torch op run inside it: name, output, tensor inputs and the user's source line.

    With `stop_at`, only what the search needs is kept. The first op that turns inputs free of it
    into an output with it ("nan": NaN; "non-finite": NaN or Inf) is recorded last, and the replay
    is cut short there. Ops whose output holds an infinity are kept in `infinite`, by output
    identity, so that a NaN made of infinities (inf - inf, 0 * inf) can be traced back to the op
    that made the infinity.
    """

    def __init__(self, stop_at: str | None = None, frames: str = "user", stack: list | None = None) -> None:
        super().__init__()
        self.stop = stop_at
        self.frame = user_frame if frames == "user" else innermost_frame
        self.records: list[tuple[str, torch.Tensor, list[torch.Tensor], str | None, int | None]] = []
        self.infinite: dict[int, tuple[str, torch.Tensor, list[torch.Tensor], str | None, int | None]] = {}
        self.stack = stack  # the modules being run (kept by hooks), innermost last
        self.makers: dict[int, torch.nn.Module] = {}  # output id -> the innermost module running the op

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if not self.stop:
            result = func(*args, **(kwargs or {}))
            if isinstance(result, torch.Tensor) and not name.startswith("__get") and name not in _SKIPPED:
                self.records.append((name, result, [a for a in args if isinstance(a, torch.Tensor)], *self.frame()))
            return result
        if name.startswith("__get") or name in _SKIPPED:
            return func(*args, **(kwargs or {}))
        bad = torch.isnan if self.stop == "nan" else (lambda t: ~torch.isfinite(t))
        inputs = _floats(args)
        clean_before = not any(bad(i).any() for i in inputs)  # before the op: in-place ops change their inputs
        result = func(*args, **(kwargs or {}))
        outputs = _floats((result,))
        if clean_before and any(bad(o).any() for o in outputs):
            out = next(o for o in outputs if bad(o).any())
            self.records.append((name, out, inputs, *self.frame()))
            self._maker(out)
            raise _FirstNonFinite
        if self.stop == "nan" and isinstance(result, torch.Tensor) and result.is_floating_point() \
                and torch.isinf(result).any():
            self.infinite[id(result)] = (name, result, inputs, *self.frame())
            self._maker(result)
        return result

    def _maker(self, output: torch.Tensor) -> None:
        if self.stack:
            self.makers[id(output)] = self.stack[-1]

    def origin(self, record):
        """Follow inputs holding an infinity back to the op that made it from finite inputs."""
        seen = set()
        while True:
            source = next((self.infinite[id(i)] for i in record[2] if id(i) in self.infinite and id(i) not in seen),
                          None)
            if source is None:
                return record
            seen.add(id(source[1]))
            record = source


def _describe(record) -> str:
    name, out, inputs, _, _ = record
    if name.endswith("_") and not name.endswith("__"):  # in place: its first input is now the output
        inputs = inputs[1:]
    stats = "; ".join(f"input {tensor_stats(i)}" for i in inputs if i.is_floating_point())
    return f"{stats}; output {tensor_stats(out)}"


@dataclass
class Origin:
    """Where a replay saw a non-finite value made from finite inputs."""

    op: str
    file: str | None
    line: int | None
    stats: str
    module: torch.nn.Module | None  # the innermost module that ran the op


@contextlib.contextmanager
def module_stack(root: torch.nn.Module):
    """A list that holds, while a forward runs, the modules entered and not yet left, innermost last."""
    stack: list[torch.nn.Module] = []

    def enter(module, _args):
        stack.append(module)

    def leave(module, _args, _output):
        if stack and stack[-1] is module:
            stack.pop()

    handles = []
    for module in root.modules():
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave, always_call=True))
    try:
        yield stack
    finally:
        for handle in handles:
            handle.remove()


def _replay_for(root: torch.nn.Module, args: tuple, kwargs: dict, start_rng: tuple | None, stop_at: str):
    with module_stack(root) as stack:
        recorder = OpRecorder(stop_at=stop_at, stack=stack)
        with preserved(root, start_rng), torch.no_grad(), recorder:
            try:
                root(*args, **kwargs)
            except _FirstNonFinite:
                pass
    return recorder


def first_non_finite_op(root: torch.nn.Module, args: tuple, kwargs: dict, start_rng: tuple | None,
                        nan: bool = False) -> Origin | None:
    """Replay `root` from the step's RNG state: the first op that turns finite inputs into NaN/Inf,
    with the innermost module running it, or None. With `nan`, the first op that makes a NaN, or,
    when that NaN is made of infinities, the op that made them (log of 0 before `0 * -inf`); when no
    op makes a NaN (an output whose sum is NaN because it holds both +inf and -inf), the first op
    that makes an infinity."""
    recorder = _replay_for(root, args, kwargs, start_rng, "nan" if nan else "non-finite")
    if not recorder.records and nan:
        recorder = _replay_for(root, args, kwargs, start_rng, "non-finite")
    if not recorder.records:
        return None
    record = recorder.records[0]
    origin = recorder.origin(record)
    name, _, _, file, line = origin
    stats = _describe(origin)
    if origin is not record:
        nan_file, nan_line = record[3], record[4]
        where = f" at {os.path.basename(nan_file)}:{nan_line}" if nan_file else ""
        stats += f"; it becomes NaN in torch.{record[0]}{where}"
    return Origin(name, file, line, stats, recorder.makers.get(id(origin[1])))


def anomaly_replay(root: torch.nn.Module, args: tuple, kwargs: dict, grad_out: torch.Tensor,
                   start_rng: tuple | None):
    """Replay the step's forward and backward under detect_anomaly(check_nan=True): the backward
    function that returned NaN and the user's line of its forward op. .grad is left untouched."""
    args = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    kwargs = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    params = [p for p in root.parameters() if p.requires_grad]
    with preserved(root, start_rng), warnings.catch_warnings(record=True) as caught, \
            torch.autograd.detect_anomaly(check_nan=True):
        warnings.simplefilter("always")
        out = root(*args, **kwargs)
        out = out if isinstance(out, torch.Tensor) else _first_tensor(out)
        try:
            torch.autograd.grad(out, params, grad_outputs=grad_out, allow_unused=True)
        except RuntimeError as error:
            function = re.search(r"Function '(\w+)' returned nan", str(error))
            frames = "\n".join(str(w.message) for w in caught)
            found = [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', frames)
                     if not f.startswith((TORCH_ROOT, HERE))]
            file, line = found[-1] if found else (None, None)
            return (function.group(1) if function else None), file, line
    return None, None, None


@dataclass
class Amplifier:
    """A module seen in a replay, with what its own replay needs."""

    module: torch.nn.Module
    args: tuple
    kwargs: dict
    grad_out: torch.Tensor
    rng: tuple
    ratio: float


def amplifying_module(root: torch.nn.Module, args: tuple, kwargs: dict, grad_out: torch.Tensor,
                      start_rng: tuple | None) -> Amplifier | None:
    """Replay a forward call and its backward from the same upstream gradient, with hooks on every
    module; the module with the largest input-gradient / output-gradient norm ratio. Nothing of this
    is kept during normal steps, and `torch.autograd.grad` leaves `.grad` alone."""
    seen: dict[torch.nn.Module, dict] = {}
    handles = []

    def before(module, m_args, m_kwargs):
        seen.setdefault(module, {})["rng"] = rng_state()

    def after(module, m_args, m_kwargs, output):
        entry = seen.setdefault(module, {})
        entry["inputs"] = (m_args, m_kwargs)
        out = output if isinstance(output, torch.Tensor) else _first_tensor(output)
        first = m_args[0] if m_args and isinstance(m_args[0], torch.Tensor) else None
        if out is not None and out.requires_grad and first is not None and first.requires_grad:
            out.register_hook(lambda grad, e=entry: e.__setitem__("grad_out", grad))
            first.register_hook(lambda grad, e=entry: e.__setitem__("grad_in", grad))

    args = [a.detach().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]
    with preserved(root, start_rng):
        for module in root.modules():
            handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(module.register_forward_hook(after, with_kwargs=True))
        try:
            with torch.enable_grad():
                out = root(*args, **kwargs)
                out = out if isinstance(out, torch.Tensor) else _first_tensor(out)
                leaves = [p for p in root.parameters() if p.requires_grad]
                leaves += [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
                if out is None or not out.requires_grad or not leaves:
                    return None
                torch.autograd.grad(out, leaves, grad_outputs=grad_out, allow_unused=True)
        finally:
            for handle in handles:
                handle.remove()
    best = None
    for module, entry in seen.items():
        if "grad_in" in entry and "grad_out" in entry:
            ratio = (entry["grad_in"].norm() / entry["grad_out"].norm().clamp_min(1e-30)).item()
            if best is None or ratio > best.ratio:
                best = Amplifier(module, *entry["inputs"], entry["grad_out"], entry["rng"], ratio)
    return best


def amplifying_op(module: torch.nn.Module, args: tuple, kwargs: dict, grad_out: torch.Tensor,
                  start_rng: tuple | None):
    """Replay the module with the same upstream gradient; the op whose input gradient is largest
    relative to its output gradient blew it up: (op, file, line, stats of its inputs)."""
    args = [a.detach().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]
    recorder = OpRecorder()
    with preserved(module, start_rng):
        with torch.enable_grad(), recorder:
            out = module(*args, **kwargs)
            out = out if isinstance(out, torch.Tensor) else _first_tensor(out)
        tensors = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        tensors += [r for _, r, _, _, _ in recorder.records if r.requires_grad and r is not out]
        grads = torch.autograd.grad(out, [*tensors, out], grad_outputs=grad_out, allow_unused=True)
    by_id = {id(t): g for t, g in zip([*tensors, out], grads, strict=True)}
    best, best_ratio = (None, None, None, None), 0.0
    for op_name, result, inputs, file, line in recorder.records:
        out_grad = by_id.get(id(result))
        if out_grad is None or out_grad.norm().item() == 0:
            continue
        for tensor in inputs:
            in_grad = by_id.get(id(tensor))
            if in_grad is not None:
                ratio = in_grad.norm().item() / out_grad.norm().item()
                if ratio > best_ratio:
                    best, best_ratio = (op_name, file, line, f"input {tensor_stats(tensor)}"), ratio
    return best


def first_non_finite_update(optimizer: torch.optim.Optimizer):
    """Run `optimizer.step()` (from a restored snapshot) until the first op that makes NaN/Inf from
    finite inputs: (op, file, line, stats) with the optimizer's own source line, or None."""
    recorder = OpRecorder(stop_at="non-finite", frames="torch")
    with torch.no_grad(), recorder:
        try:
            optimizer.step()
        except _FirstNonFinite:
            pass
    if not recorder.records:
        return None
    record = recorder.records[0]
    return record[0], record[3], record[4], _describe(record)
