"""`with torchlint.watch(model, optimizer):` cheap per-step checks, slow path only when one fires.

Cheap path, every step, in a few kernels whatever the number of modules: the outputs of each
outermost model call get one reduction each (`reductions.finiteness`), the gradients one foreach
norm, the parameters one on the first PARAM_FIRST steps and every PARAM_EVERY-th step after (a step
whose loss, outputs or gradients are not finite measures them too, so an update that left NaN
parameters is still told apart from a bad forward), and the loss is the tensor `backward()` was last
called on. All of it is stacked and read with one device sync per step, at the step boundary (the
optimizer's step pre-hook). Inner module calls only keep their place on a stack: a NaN made inside
the model reaches its output, the loss or the gradients, and the replay of the flagged step finds
the module and the op (a model sharded across ranks, which no replay can run, has its modules'
outputs checked as they are made instead). A parameter norm read at step N+1 is the one the updates
since its last reading left, so NaN parameters (TL906) and a step that dwarfs the weights (TL903)
are found without another sync. At the start of each forward pass the RNG state is kept (a few KiB,
no sync) so that a replay draws the same dropout masks. Only the outermost call's inputs and output
gradient are kept until the step: no activation or gradient outlives backward, so peak memory is
that of the unwatched run.

The ops between the model's output and `backward()` (the loss computation) pass through a
`LossWindow` that keeps references to them until the step: no kernel, no sync.

Slow path, for the failing step only (see `slow_path` and `replay`): the forward pass is replayed
from its inputs to name the op, or forward and backward under anomaly detection, or forward and
backward with hooks on every module to find the one that amplifies the gradient most, then its op.

A model under `torch.compile` is watched from the outside: the hooks return at once while Dynamo
traces, so the compiled graph holds none of them (the compiled wrapper's own call is watched, and a
replay runs the original module eagerly). The hooks never disturb the program: a forward that
raises (even one the program catches) leaves the bookkeeping right, whichever way torch calls the
hook on that path, and an error of torchlint's own switches the watch off with one warning instead
of stopping the training.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass

import torch

from torchlint.runtime.bookkeeping import (
    GradClearing,
    GraphTracker,
)
from torchlint.runtime.causes import clipping_seen
from torchlint.runtime.dead_units import DeadUnits
from torchlint.runtime.forward_hooks import ForwardHooks
from torchlint.runtime.judge import StepJudge
from torchlint.runtime.late_steps import LateSteps, WeightsBefore
from torchlint.runtime.loss_window import LossWindow
from torchlint.runtime.ranks import RankState
from torchlint.runtime.records import Call, Event, StepStats, StopRun, Track
from torchlint.runtime.reductions import (
    Reading,
    device_busy,
    grad_norm_list,
    memory_in_use,
    norms,
)
from torchlint.runtime.slow_path import SlowPath
from torchlint.runtime.snapshot import Snapshot
from torchlint.runtime.wrappers import quiet_about_global_hooks

__all__ = ["Event", "StepStats", "StopRun", "Watch", "watch"]

PARAM_FIRST, PARAM_EVERY = 5, 10  # parameter norms on steps 1..5, then every 10th (and on any bad step)


class Watch(ForwardHooks, LateSteps, StepJudge, SlowPath):
    """Watch a model and its optimizer; `events` holds what fired (the first problem by default)."""

    process: Watch | None = None  # the process-wide watch (`torchlint run`) while it is on

    def __init__(self, model: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None,
                 explode_factor: float = 1e3, warmup: int = 5, stop_at_first: bool = True,
                 max_steps: int | None = None, on_step=None, snapshot: bool = False, files=(),
                 ranks: bool | None = None, sync: bool = False) -> None:
        self.model = model
        self.optimizer = optimizer
        self.explode_factor = explode_factor
        self.warmup = warmup
        self.stop_at_first = stop_at_first
        self.max_steps = max_steps
        self.on_step = on_step  # called with each StepStats (the progress bar)
        self.files = [os.path.abspath(f) for f in files]  # the user's files beyond the modules' (a script)
        self.snapshot = snapshot  # keep each step's starting state, to replay an update that went NaN
        self.sync = sync  # read every step's check at its own step on a GPU too (see `_may_read_late`)
        self._late: tuple | None = None  # (step, its state): a step whose check is read when the next begins
        self._late_replays_off = False  # the step being judged was read late, without its weights: no replay
        self._weights = WeightsBefore()  # the weights late steps started from
        self.read_late = 0  # steps whose check was read when the next step began (a busy GPU)
        self._snapshots: dict[torch.optim.Optimizer, Snapshot] = {}
        self.step = 0
        self.events: list[Event] = []
        self.setup: list[Event] = []  # found before the first step by a framework integration (TL110)
        self.annotators: list = []  # a framework's functions that add its settings to the events, at the end
        self.history: list[StepStats] = []
        self._tracks: dict[torch.optim.Optimizer, Track] = {}
        # keyed by module object: names are resolved only on the slow path
        # module outputs of the running forward, checked together when it returns: (module, call index)
        # a value per floating-point output of each outermost call this step, finite when the output
        # is (read with the step's one sync), and the index of the call it belongs to
        self._probes: list[torch.Tensor] = []
        self._probe_keys: list[tuple[torch.nn.Module, int]] = []  # (module, index of its outermost call)
        self._inner_outputs = False  # this forward cannot be replayed (sharded): its modules' outputs are probed
        self._unreplayable: dict[int, bool] = {}  # id(outermost module) -> whether no replay can run it
        self._image_convs: dict[int, bool] = {}  # id(outermost module) -> whether it holds an image convolution
        self._forward_values: list[float] = []  # the probes, as read at the step (for the slow path)
        self._inner_looks = False  # inner calls are looked at this forward (ranks, the first convolution)
        self._recording_ran = False  # this forward is a DDP wrapper's: the modules that run are noted
        self._calls: list[Call] = []
        self._stack: list[torch.nn.Module] = []  # the modules entered and not yet left, innermost last
        self._ignoring = False  # inside an outermost call made with gradients off
        self._rng: tuple | None = None
        self._grad_bytes = 0  # kept gradients of outermost outputs, bounded by GRAD_BUDGET
        self._loss: torch.Tensor | None = None
        self._first_loss = math.nan  # the run's first finite loss: a 1000x fall means it converged
        self._backward_site: tuple[str, int] | None = None  # where loss.backward() was called
        self._roots: dict[int, set[type]] = {}  # outermost modules seen: the classes they are made of
        self._handles: list = []
        self._backward = None
        self._replaying = False
        self._disabled = False
        self._clipped = False  # a gradient-clipping function ran since the last step
        self._loss_window: LossWindow | None = None
        self._exits = contextlib.ExitStack()
        self._clock = time.perf_counter()
        self._graphs = GraphTracker()
        self._clearing = GradClearing()
        self._pixels_unchecked = True  # TL912, once per run
        self._dead = DeadUnits()  # TL913, on the steps that measure the parameters
        self._measuring = True  # whether the coming step reads the parameters (step 1 does)
        self.ranks = RankState(model is None if ranks is None else ranks)  # when every rank watches: see RankState

    # -- installation ------------------------------------------------------------------
    def __enter__(self) -> Watch:
        if self.model is None:  # process-wide: every module and every optimizer of the program
            from torch.nn.modules.module import (
                register_module_forward_hook,
                register_module_forward_pre_hook,
            )
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            self._handles.append(register_module_forward_pre_hook(self._on_pre_forward))
            self._handles.append(register_module_forward_hook(self._on_forward, with_kwargs=True, always_call=True))
            self._handles.append(register_optimizer_step_pre_hook(self._before_step))
            Watch.process = self
        else:
            for module in self.model.modules():
                self._handles.append(module.register_forward_pre_hook(self._on_pre_forward))
                self._handles.append(module.register_forward_hook(self._on_forward, with_kwargs=True,
                                                                  always_call=True))
            self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
        self._patch_backward()
        self._loss_window = LossWindow()
        self._exits.enter_context(clipping_seen(self._saw_clipping))
        if self.model is None:
            self._exits.enter_context(quiet_about_global_hooks())
        self._clock = time.perf_counter()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if Watch.process is self:
            Watch.process = None
        if self._backward is not None:
            torch.Tensor.backward = self._backward
            self._backward = None
        if self._loss_window is not None:
            self._loss_window.close()
            self._loss_window.clear()
        self._exits.close()
        if not self._disabled and (exc_type is None or issubclass(exc_type, (StopRun, SystemExit))):
            try:
                if self._late is not None:
                    with contextlib.suppress(StopRun):  # the run is over anyway
                        self._judge_late()  # the last step's exchange, when no forward followed it
            except Exception as error:  # a rank that died: its report is its own traceback
                self._internal_error(error)
                return
            self._after_last_step()

    def _saw_clipping(self) -> None:
        self._clipped = True

    def _patch_backward(self) -> None:
        """Remember the scalar that `backward()` is called on: the loss, read with the step's sync."""
        original = torch.Tensor.backward
        watcher = self

        def backward(tensor, *args, **kwargs):
            if watcher._loss_window is not None:
                watcher._loss_window.close()
            if tensor.numel() == 1 and not watcher._replaying:
                watcher._loss = tensor.detach()
                caller = sys._getframe(1)
                watcher._backward_site = (caller.f_code.co_filename, caller.f_lineno)
                if not watcher._disabled:
                    watcher._bookkeeping(tensor)
            return original(tensor, *args, **kwargs)

        self._backward = original
        torch.Tensor.backward = backward

    def _bookkeeping(self, loss: torch.Tensor) -> None:
        """At each backward: were the last step's gradients cleared; mark this loss's graph."""
        try:
            self._clearing.on_backward(self._backward_site)
            self._graphs.mark(loss, self.step)
        except Exception as error:
            self._internal_error(error)

    # -- the cheap check, once per step ------------------------------------------------------
    def _before_step(self, optimizer, args, kwargs):
        """The step hook. With a closure (LBFGS, Lightning), forward and backward run inside
        `step()`: the check then runs when the closure returns, before the update."""
        if self._replaying or self._disabled:
            return None
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)  # args[0] is the optimizer
        if callable(closure):
            def checked_closure(*c_args, **c_kwargs):
                result = closure(*c_args, **c_kwargs)
                self._guarded_check(optimizer)
                return result

            if "closure" in kwargs:
                return args, {**kwargs, "closure": checked_closure}
            return (args[0], checked_closure, *args[2:]), kwargs
        self._guarded_check(optimizer)
        return None

    def _guarded_check(self, optimizer) -> None:
        """A failure of torchlint's own never stops the user's training: the watch switches itself
        off with one warning (tests set TORCHLINT_STRICT to see the error instead)."""
        if self._replaying or self._disabled:
            return
        try:
            if self._loss_window is not None:
                self._loss_window.close()
            self._check_step(optimizer)
        except StopRun:
            raise
        except Exception as error:
            self._internal_error(error)

    def _internal_error(self, error: Exception) -> None:
        if os.environ.get("TORCHLINT_STRICT"):
            raise error
        import warnings

        warnings.warn(f"torchlint: watch switched off after an internal error: {error!r}", stacklevel=3)
        self._disabled = True
        self.__exit__(RuntimeError, None, None)

    def agreed_events(self) -> list[Event]:
        """The events of the steps whose exchange between ranks is finished: a framework that stops on
        these stops every rank at the same step (with one rank: all events)."""
        return [e for e in self.events if e.step <= self.ranks.agreed_through]

    def _settle_ranks(self) -> None:
        """Finish the last step's exchange (see `ranks`): a rank that found something stops them all here."""
        if self.ranks.pending:
            self.ranks.settle(self)
            if self.events and self.stop_at_first and self.model is None:
                raise StopRun()

    def _check_step(self, optimizer) -> None:
        self._settle_ranks()
        if self._late is not None:  # the last step, read one step late: judged before this one
            self._judge_late()
        self.step += 1
        track = self._tracks.setdefault(optimizer, Track())
        lrs = [group.get("lr") for group in optimizer.param_groups]
        if track.first_lrs is None:
            track.first_lrs = lrs
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [(p.grad.coalesce().values() if p.grad.is_sparse else p.grad) for p in params if p.grad is not None]
        device = grads[0].device if grads else (params[0].device if params else torch.device("cpu"))
        late = self._may_read_late(device) and device_busy(device)
        # read late, the parameters before this update are not there any more: measured on every such step
        measured = _measures(self.step, self.snapshot) or late
        # every value of the step in one vector, read with its one sync: the outputs' probes, each
        # gradient's norm, the loss, the parameter norm (on the steps that measure it), the dead shares
        values = list(self._probes)
        grad_norms = grad_norm_list(grads)
        values += grad_norms
        if self._loss is not None:
            values.append(self._loss.reshape(()))
        param_norms = norms([p.detach() for p in params], device) if measured and params else None
        if param_norms is not None:
            values.append(torch.linalg.vector_norm(param_norms))
        values += [share for _, share in self._dead.pending]
        reading = Reading(values, device)
        stale, site = self._clearing.on_step(optimizer, params)  # before the update, whenever it is judged
        step = _Step(optimizer, track, params, bool(grads), device, lrs, self._clipped, param_norms, len(grad_norms),
                     stale, site, reading)
        if late and not reading.ready():  # the GPU is still busy: judged when the next step begins
            saved = self._weights.save(optimizer, params)  # before the update: what a replay starts from
            self.read_late += 1
            self._late = (step, self._take_step_state(), saved)
            if not saved:
                for call in self._late[1]["calls"]:
                    call.grad_out = None  # no replay can run: its gradients are not needed
            if self.max_steps is not None and self.step >= self.max_steps:
                self._judge_late()
                raise StopRun()
            self._step_over()
            return
        self._finish_step(step)

    def _step_over(self) -> None:
        """The next step starts afresh: nothing of this one's calls, probes, loss or stack is kept."""
        self._measuring = _measures(self.step + 1, self.snapshot)
        self._stack.clear()
        self.ranks.end_step()
        self._reset_step_state()

    def _finish_step(self, step: _Step) -> None:
        """Read the step's values (at once, or late), judge them, and start the next step afresh."""
        optimizer, track, params, param_norms = step.optimizer, step.track, step.params, step.param_norms
        host = step.reading.values()
        probes, grads_read = len(self._probes), step.grads_read
        self._forward_values = host[:probes]
        forward_nan = any(v != v for v in self._forward_values)
        forward_inf = any(v in (math.inf, -math.inf) for v in self._forward_values)
        grad_norm = math.sqrt(math.fsum(v * v for v in host[probes:probes + grads_read]))
        rest = host[probes + grads_read:]
        loss = rest.pop(0) if self._loss is not None else math.nan
        param_total = rest.pop(0) if param_norms is not None else math.nan
        dead = rest
        bad = forward_nan or forward_inf or not math.isfinite(grad_norm) or (
            self._loss is not None and not math.isfinite(loss))
        if param_norms is None and bad:  # was it the last update? (a second sync, on a failing step only)
            param_norms = norms([p.detach() for p in params], step.device)
            param_total = torch.linalg.vector_norm(param_norms).item()
        memory = memory_in_use(step.device)
        now = time.perf_counter()
        stats = StepStats(self.step, loss, grad_norm, param_total if param_norms is not None else None, memory,
                          now - self._clock)
        self._clock = now
        self.history.append(stats)
        if math.isnan(self._first_loss) and math.isfinite(loss):
            self._first_loss = loss
        try:
            before = len(self.events)
            self._judge(optimizer, track, params, param_norms, stats, bool(forward_nan), bool(forward_inf),
                        step.has_grads, self._loss is not None, step.stale, step.site)
            if dead and not self.events:
                event = self._dead.judge(self.step, dead, self._name_of)
                if event is not None:
                    self._record(event)
            self.ranks.after_judge(self, before, stats)
            if self.snapshot and not self.events:
                self._snapshots.setdefault(optimizer, Snapshot()).save(optimizer, self.step)
            if self.on_step is not None:
                self.on_step(stats)
            if self.events and self.stop_at_first and self.model is None and not self.ranks.pending:
                raise StopRun()  # with several ranks, all stop together once the exchange is finished
            if self.max_steps is not None and self.step >= self.max_steps:
                raise StopRun()
        finally:
            if param_norms is not None:
                track.param_norms, track.param_total, track.param_step = param_norms, param_total, self.step
            track.last_step = self.step
            track.lrs, track.clipped = step.lrs, step.clipped  # what the update about to run uses
            self._step_over()


@dataclass
class _Step:
    """A step's check as made at its optimizer step, for its judgement (then, or one step late)."""

    optimizer: torch.optim.Optimizer
    track: Track
    params: list
    has_grads: bool
    device: torch.device
    lrs: list
    clipped: bool
    param_norms: torch.Tensor | None
    grads_read: int
    stale: int  # gradients the first backward since the last step found uncleared
    site: tuple | None
    reading: Reading


def _measures(step: int, snapshot: bool) -> bool:
    """Whether a step reads the parameter norms (and the ReLU layers' dead units)."""
    return snapshot or step <= PARAM_FIRST or step % PARAM_EVERY == 0


def watch(model: torch.nn.Module, optimizer: torch.optim.Optimizer, **options) -> Watch:
    """Use as `with torchlint.watch(model, optimizer) as w: ...`; then read `w.events` and `w.history`.
    With several ranks that all run the watch, `ranks=True` makes them exchange their checks each step."""
    return Watch(model, optimizer, **options)
