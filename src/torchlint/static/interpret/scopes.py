"""Where code runs (inside no_grad? a loop? which function?) and what each body does, in order.

The walker records, for the module, every function and every loop, the calls and the few
assignments the training-loop rules care about. Rules expand a loop's log through the calls it
makes to functions and methods of the same file, so a `fit()` loop that calls `self.train_step()`
is judged on what `train_step` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Functions that run when a model is built, before any graph exists.
INIT_FUNCTIONS = frozenset({
    "__init__", "reset_parameters", "_reset_parameters", "_init_weights", "init_weights", "initialize_weights",
    "_initialize_weights", "weights_init", "weight_init", "init_params", "_init_params", "initialize",
})


WALK_BUDGET = 20_000  # entries one walk may visit through followed calls


@dataclass(frozen=True)
class Scope:
    no_grad: bool = False  # inside torch.no_grad()/inference_mode(), or a function decorated so
    loop_depth: int = 0
    function: str | None = None  # innermost enclosing function
    debug: bool = False  # inside `if ...debug...:` or a function whose name mentions debug
    init: bool = False  # model construction: __init__, reset_parameters, a function given to .apply()
    cond: tuple[tuple[str, bool], ...] = ()  # the flags this code runs under (`if use_amp:` -> ("use_amp", True))
    guarded: bool = False  # under an if/try/except inside the innermost loop: not run every iteration
    fp16: bool = False  # inside a float16 autocast region (or a function only ever called in one)
    # The tests of the ifs this code runs under, from the start of its function, with the value each
    # has here: `if (i + 1) % k == 0:` -> (test, True); after `if n < k: continue` -> (test, False).
    gates: tuple[tuple[Any, bool], ...] = ()


MODULE_SCOPE = Scope()


@dataclass
class Mark:
    """A non-call event in a body: `p.grad = None`, `os.environ["X"] = ...`, `cudnn.benchmark = True`,
    `total += loss`."""

    kind: str  # "grad_none" | "env" | "setattr" | "accumulate"
    node: Any
    name: str = ""  # env variable or qualified attribute
    value: Any = None  # the assigned/accumulated expression node
    scope: Scope = MODULE_SCOPE


@dataclass
class Body:
    """The ordered log of a module, function or loop body."""

    kind: str  # "module" | "function" | "loop"
    node: Any
    scope: Scope
    entries: list[Any] = field(default_factory=list)  # CallInfo | Mark | Body (a nested loop)
    iterable: Any = None  # for loops: the value iterated over
    origin: str = ""  # the file it is written in (a project module's body is walked in its importer)
    qualname: str = ""  # `train` or `Trainer.fit` for a module-level function or method, else ""
    halves: set[str] = field(default_factory=set)  # parameters whose module it converts to float16 in place

    def walk(self, expand: bool = True, _seen: set[int] | None = None, _budget: list[int] | None = None
             ) -> Iterator[Any]:
        """Entries in order, descending into nested loops and (if expand) into local calls; past a
        budget of entries calls are no longer followed (every path is walked: exponential at worst)."""
        seen = _seen if _seen is not None else {id(self)}
        budget = _budget if _budget is not None else [WALK_BUDGET]
        for entry in self.entries:
            if isinstance(entry, Body):
                yield entry
                yield from entry.walk(expand, seen, budget)
                continue
            budget[0] -= 1
            yield entry
            body = getattr(getattr(entry, "callee", None), "body", None)
            if expand and isinstance(body, Body) and id(body) not in seen and budget[0] > 0:
                seen.add(id(body))
                yield from body.walk(expand, seen, budget)
                seen.discard(id(body))
