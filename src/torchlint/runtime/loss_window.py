"""The ops between the model's output and `backward()`: the loss computation no module hook sees.

A `TorchFunctionMode` is pushed when an outermost forward call returns (with gradients on) and
popped at the next forward call, at `backward()` and at the optimizer step: only the few ops that
make the loss (`F.cross_entropy`, `torch.log(out - 100)`, `.mean()`) pass through it. It records
each op's name, output, arguments and the user's line: references and Python only, no kernel and
no sync. When a step's loss is non-finite while the model's output is finite, the
slow path looks through these records for the first op that made NaN/Inf from finite inputs. The
outputs kept are bounded by a byte budget and released at each step.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from torchlint.runtime import replay

BUDGET = 256 * 2**20  # bytes of recorded outputs per step
_SKIPPED = ("detach", "size", "dim", "numel", "item", "tolist", "backward")


class LossWindow(TorchFunctionMode):
    """Records the ops run while it is open; `first_non_finite()` reads them on the slow path."""

    def __init__(self, budget: int = BUDGET) -> None:
        super().__init__()
        self.budget = budget
        self.records: list[tuple[str, torch.Tensor, tuple, str | None, int | None]] = []
        self.used = 0
        self.full = False  # some ops were not recorded for lack of budget
        self.listening = False
        self._pushed = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if self.listening and isinstance(result, torch.Tensor) and result.is_floating_point():
            name = getattr(func, "__name__", str(func))
            if not name.startswith("__get") and name not in _SKIPPED:
                self._record(name, result, args, kwargs)
        return result

    def _record(self, name: str, result: torch.Tensor, args, kwargs) -> None:
        """References only: the inputs are sorted out on the slow path, when a step needs them."""
        size = result.numel() * result.element_size()
        if self.used + size > self.budget:
            self.full = True
            return
        self.used += size
        self.records.append((name, result.detach(), (*args, *(kwargs or {}).values()), *replay.user_frame()))

    def open(self) -> None:
        if not self._pushed:
            self.__enter__()
            self._pushed = True
        self.listening = True

    def close(self) -> None:
        """Stop recording; pop the mode when it is the innermost one (else it stays, silent, until then)."""
        self.listening = False
        if self._pushed and _top_mode() is self:
            self.__exit__(None, None, None)
            self._pushed = False

    def take(self) -> tuple:
        """The step's records, handed over (to be judged one step late); the window starts empty."""
        taken = (self.records, self.used, self.full)
        self.records, self.used, self.full = [], 0, False
        return taken

    def put(self, taken: tuple) -> None:
        self.records, self.used, self.full = taken

    def clear(self) -> None:
        self.take()

    def first_non_finite(self):
        """(op, file, line, stats) of the first recorded op whose inputs are finite and whose output
        is not, or None."""
        for name, output, arguments, file, line in self.records:
            inputs = [t.detach() for t in replay._floats(arguments)]
            record = (name, output, inputs, file, line)
            if name.endswith("_") and not name.endswith("__"):  # in place: its first input is the output
                inputs = inputs[1:]
            if not torch.isfinite(output).all() and all(torch.isfinite(i).all() for i in inputs):
                return name, file, line, replay._describe(record)
        return None


def _top_mode():
    depth = torch._C._len_torch_function_stack()
    return torch._C._get_function_stack_at(depth - 1) if depth else None
