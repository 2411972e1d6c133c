"""`with torchlint.watch(model, optimizer):` cheap per-step checks, slow path only when one fires.

Cheap path, every step, in a number of kernels that does not grow with the number of modules (on a
GPU): the outputs of the modules a forward pass calls are checked together when its outermost call
returns (`reductions.finiteness`: one fused kernel on a GPU, a sum each on CPU); gradients get one
foreach norm, and so do the parameters on the first PARAM_FIRST steps and every PARAM_EVERY-th step
after (a step whose loss, outputs or gradients are not finite measures them too, so an update that
left NaN parameters is still told apart from a bad forward); the loss is the tensor `backward()`
was last called on. Outputs are held only until their forward returns, and never more than
FLUSH_BYTES of them: past that they are checked at once. The step boundary is the optimizer's step
pre-hook, and all of it is read there with a single device sync per step. A parameter norm read at
step N+1 is the one the updates since its last reading left, so NaN parameters (TL906) and a step
that dwarfs the weights (TL903) are found without another sync. At the start of each forward pass
the RNG state is kept (a few KiB, no sync) so that a replay draws the same dropout masks. Only the
outermost call's inputs and output gradient are kept until the step: no inner activation or
gradient outlives backward, so peak memory is that of the unwatched run, plus at most FLUSH_BYTES
of module outputs held while a forward runs (most of which autograd keeps anyway).

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
import statistics
import sys
import time

import torch

from torchlint.runtime import replay
from torchlint.runtime.bookkeeping import (
    GradClearing,
    GraphTracker,
    kept_alive_event,
    not_cleared_event,
)
from torchlint.runtime.catalog import GRAPH_KEPT_ALIVE, MEMORY_GROWTH
from torchlint.runtime.causes import clipping_seen
from torchlint.runtime.dead_units import DeadUnits
from torchlint.runtime.input_range import is_image_conv, raw_pixels_event
from torchlint.runtime.loss_window import LossWindow
from torchlint.runtime.ranks import RankState
from torchlint.runtime.records import Call, Event, StepStats, StopRun, Track
from torchlint.runtime.reductions import (
    finiteness,
    local,
    memory_event,
    memory_in_use,
    norms,
    total_norm,
)
from torchlint.runtime.repeated_forward import has_batchnorm, same_batch_event
from torchlint.runtime.slow_path import SlowPath
from torchlint.runtime.snapshot import Snapshot
from torchlint.runtime.wrappers import quiet_about_global_hooks, redirected, unwrapped

__all__ = ["Event", "StepStats", "StopRun", "Watch", "watch"]

GRAD_BUDGET = 512 * 2**20  # bytes of outermost-output gradients kept per step for replays
FLUSH_BYTES = 64 * 2**20  # module outputs held for one fused check before it runs early
PARAM_FIRST, PARAM_EVERY = 5, 10  # parameter norms on steps 1..5, then every 10th (and on any bad step)


class Watch(SlowPath):
    """Watch a model and its optimizer; `events` holds what fired (the first problem by default)."""

    process: Watch | None = None  # the process-wide watch (`torchlint run`) while it is on

    def __init__(self, model: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None,
                 explode_factor: float = 1e3, warmup: int = 5, stop_at_first: bool = True,
                 max_steps: int | None = None, on_step=None, snapshot: bool = False, files=(),
                 ranks: bool | None = None) -> None:
        self.model = model
        self.optimizer = optimizer
        self.explode_factor = explode_factor
        self.warmup = warmup
        self.stop_at_first = stop_at_first
        self.max_steps = max_steps
        self.on_step = on_step  # called with each StepStats (the progress bar)
        self.files = [os.path.abspath(f) for f in files]  # the user's files beyond the modules' (a script)
        self.snapshot = snapshot  # keep each step's starting state, to replay an update that went NaN
        self._snapshots: dict[torch.optim.Optimizer, Snapshot] = {}
        self.step = 0
        self.events: list[Event] = []
        self.setup: list[Event] = []  # found before the first step by a framework integration (TL110)
        self.annotators: list = []  # a framework's functions that add its settings to the events, at the end
        self.history: list[StepStats] = []
        self._tracks: dict[torch.optim.Optimizer, Track] = {}
        # keyed by module object: names are resolved only on the slow path
        # module outputs of the running forward, checked together when it returns: (module, call index)
        self._pending: list[torch.Tensor] = []
        self._pending_keys: list[tuple[torch.nn.Module, int]] = []
        self._pending_bytes = 0
        self._sums: list[tuple[int, list, torch.Tensor]] = []  # checked: (call index, keys, a value per output)
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
                self.ranks.settle(self)  # the last step's exchange, when no forward followed it
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

    def _on_pre_forward(self, module, args) -> None:
        if torch.compiler.is_compiling() or self._replaying or self._disabled:  # see the module's doc
            return
        try:
            if not self._stack and redirected(module):  # its inner calls are the outermost ones
                return
            if not self._stack:  # an outermost call begins: keep the RNG state its replay must start from
                self._settle_ranks()
                if self._loss_window is not None:
                    self._loss_window.close()
                # evaluation under no_grad/inference_mode is not training: nothing of it is kept (a
                # validation pass between two steps would otherwise keep every batch alive)
                self._ignoring = not torch.is_grad_enabled()
                self._rng = None if self._ignoring else replay.rng_state()
            self._stack.append(module)
            if self.ranks.enabled:
                self.ranks.ran.add(id(module))
            if self._pixels_unchecked and not self._ignoring and is_image_conv(module):
                self._pixels_unchecked = False  # the first convolution over images of the first training pass
                event = raw_pixels_event(module, args, unwrapped(self._stack[0]), self.step + 1)
                if event is not None:
                    self._record(event)
        except StopRun:
            raise
        except Exception as error:
            self._internal_error(error)

    def _on_forward(self, module, args, *rest) -> None:
        """(module, args, kwargs, output) normally; (module, args, result) when torch calls a global
        `always_call` hook after the forward raised. Either way the call is over: leave it."""
        if torch.compiler.is_compiling() or self._replaying or self._disabled:
            return
        try:
            kwargs, output = rest if len(rest) == 2 else ({}, None)
            failed = len(rest) != 2 or (output is None and sys.exc_info()[1] is not None)
            self._left(module, args, kwargs, output, failed)
        except Exception as error:
            self._internal_error(error)

    def _left(self, module, args, kwargs, output, failed: bool) -> None:
        if not self._stack or self._stack[-1] is not module:  # its pre-hook did not run (an earlier hook raised)
            return
        self._stack.pop()
        outermost = not self._stack
        if self._ignoring:
            self._ignoring = not outermost
            return
        if failed:  # the forward raised: what its inner calls recorded belongs to no kept call
            if outermost:
                pending = len(self._calls)
                self._sums = [entry for entry in self._sums if entry[0] != pending]
                self._drop_pending()
            return
        out = output if isinstance(output, torch.Tensor) else next(
            (o for o in (output if isinstance(output, (tuple, list)) else ()) if isinstance(o, torch.Tensor)), None)
        if outermost:  # calls are numbered in completion order of the outermost ones
            call = Call(unwrapped(module), args, kwargs, self._rng)  # a replay must not run DDP's collectives
            self.ranks.outermost(module)
            if id(module) not in self._roots:
                self._roots[id(module)] = {type(m) for m in module.modules()}
            if module.training and has_batchnorm(self._roots[id(module)]):  # TL914
                event = same_batch_event(self, call)
                if event is not None:
                    self._record(event)
            self._calls.append(call)
            if out is not None and out.requires_grad and out.is_floating_point():
                out.register_hook(lambda grad, c=call: self._keep_grad(c, grad))
                self._graphs.mark(out, self.step, "output")
        call_index = len(self._calls) - 1 if outermost else len(self._calls)
        if self._measuring:
            self._dead.watch(module, output)
        if out is not None and out.is_floating_point() and out.numel():
            self._pending.append(out)  # no detach (an op per module): the check runs under no_grad
            self._pending_keys.append((module, call_index))
            self._pending_bytes += out.numel() * out.element_size()
        if outermost or self._pending_bytes > FLUSH_BYTES:
            self._flush(call_index)
        if outermost and self._loss_window is not None:  # what follows, up to backward(), makes the loss
            self._loss_window.open()

    def _flush(self, call_index: int) -> None:
        """One check of the outputs held: a value per output, finite when it is, in the order they returned."""
        if self._pending:
            with torch.no_grad():
                norms = finiteness(self._pending)
            device = norms[0].device
            self._sums.append((call_index, self._pending_keys, torch.stack([n.to(device) for n in norms])))
        self._drop_pending()

    def _drop_pending(self) -> None:
        self._pending, self._pending_keys, self._pending_bytes = [], [], 0

    def _keep_grad(self, call: Call, grad: torch.Tensor) -> None:
        size = grad.numel() * grad.element_size()
        if self._grad_bytes + size <= GRAD_BUDGET:
            call.grad_out = grad
            self._grad_bytes += size

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
        self.step += 1
        track = self._tracks.setdefault(optimizer, Track())
        lrs, clipped = [group.get("lr") for group in optimizer.param_groups], self._clipped
        if track.first_lrs is None:
            track.first_lrs = lrs
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [(p.grad.coalesce().values() if p.grad.is_sparse else p.grad) for p in params if p.grad is not None]
        device = grads[0].device if grads else (params[0].device if params else torch.device("cpu"))
        sums = torch.cat([s.to(device) for _, _, s in self._sums]) if self._sums else torch.zeros(1, device=device)
        grad_norm = total_norm(grads, device)
        measured = _measures(self.step, self.snapshot)
        param_norms = norms([p.detach() for p in params], device) if measured else None
        # torch.full, not torch.tensor: a fill kernel, no host-to-device copy (which would sync on CUDA)
        unknown = torch.full((), math.nan, device=device) if self._loss is None or not measured else None
        loss = self._loss.float().to(device).reshape(()) if self._loss is not None else unknown
        forward_nan, forward_inf, grad_norm, param_total, loss, *dead = torch.stack(  # the one sync of the step
            [torch.isnan(sums).any().float(), torch.isinf(sums).any().float(), grad_norm,
             torch.linalg.vector_norm(param_norms) if measured else unknown, loss,
             *(share.to(device) for _, share in self._dead.pending)]).tolist()
        bad = forward_nan or forward_inf or not math.isfinite(grad_norm) or (
            self._loss is not None and not math.isfinite(loss))
        if param_norms is None and bad:  # was it the last update? (a second sync, on a failing step only)
            param_norms = norms([p.detach() for p in params], device)
            param_total = torch.linalg.vector_norm(param_norms).item()
        memory = memory_in_use(device)
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
                        bool(grads), self._loss is not None)
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
            self._measuring = _measures(self.step + 1, self.snapshot)
            track.lrs, track.clipped = lrs, clipped  # what the update about to run uses
            self._sums.clear()
            self._drop_pending()
            self._calls.clear()
            self._grad_bytes = 0
            self._loss = None
            self._backward_site = None
            self._stack.clear()
            self._clipped = False
            self.ranks.end_step()
            self._dead.pending.clear()
            if self._loss_window is not None:
                self._loss_window.clear()

    def _judge(self, optimizer, track: Track, params, param_norms, stats: StepStats, forward_nan: bool,
               forward_inf: bool, has_grads: bool, loss_known: bool) -> None:
        """The first thing wrong, in causal order: the parameters the last update left, then this
        step's forward, its gradients, their growth, their vanishing, memory.

        A NaN in any module's output is always reported. An infinity alone is reported only when it
        reaches the loss or the gradients: -inf is how attention masks are written, and a softmax
        absorbs it."""
        downstream_bad = not math.isfinite(stats.grad_norm) or (loss_known and not math.isfinite(stats.loss))
        median = statistics.median(track.norms[-50:]) if len(track.norms) >= self.warmup else None
        if param_norms is not None and self._update_went_wrong(optimizer, track, params, param_norms,
                                                               stats.param_norm):
            return
        if forward_nan or (forward_inf and downstream_bad):
            self._forward_event(nan=forward_nan)
        elif loss_known and not math.isfinite(stats.loss):
            self._loss_event(stats.loss)
        elif not math.isfinite(stats.grad_norm):
            self._gradient_event(stats.grad_norm)
        elif median is not None and stats.grad_norm > self.explode_factor * median:
            self._explosion_event(stats.grad_norm, median)
        else:
            track.norms.append(stats.grad_norm)
            floor = min((group.get("eps") or 0.0 for group in optimizer.param_groups), default=0.0)
            learned = loss_known and (stats.loss == 0 or stats.loss < 1e-3 * self._first_loss)  # converged
            track.low_steps = track.low_steps + 1 if has_grads and stats.grad_norm <= floor and not learned else 0
            if track.low_steps == self.warmup:
                self._vanishing_event(optimizer, stats.grad_norm, floor)
            if not any(e.code == MEMORY_GROWTH.code for e in self.events):
                event = memory_event(self.history, self.step, params[0].device if params else torch.device("cpu"))
                if event is not None:
                    self._record(event)
            alive, kinds = self._graphs.kept_alive(self.step)
            if alive and not any(e.code == GRAPH_KEPT_ALIVE.code for e in self.events):
                self._record(kept_alive_event(self.step, alive, kinds))
        stale, site = self._clearing.on_step(optimizer, params)
        if stale and not self.events:
            self._record(not_cleared_event(self.step, stale, site))

    def _after_last_step(self) -> None:
        """The parameters the final optimizer.step() left: one more sync, at the end of the run."""
        for optimizer, track in self._tracks.items():
            if track.param_total is None or (self.events and self.stop_at_first):
                continue
            params = [p for group in optimizer.param_groups for p in group["params"]]
            if not params:
                continue
            param_norms = norms([p.detach() for p in params], params[0].device)
            self._update_went_wrong(optimizer, track, params, param_norms,
                                    torch.linalg.vector_norm(param_norms).item())

    def _update_went_wrong(self, optimizer, track: Track, params, param_norms, total: float) -> bool:
        """What the last update of this optimizer left: NaN/Inf parameters (TL906), or a parameter
        norm multiplied beyond `explode_factor` (TL903). True when one of them fired. A norm that
        overflows float32 while every value is finite (weights near 1e20) is not a NaN parameter."""
        if not math.isfinite(total) and not all(torch.isfinite(local(p)).all() for p in params):
            self._parameter_event(optimizer, track, params, param_norms)
        elif track.param_total and total > self.explode_factor * track.param_total:
            self._update_event(optimizer, track, params, param_norms, total)
        else:
            return False
        return True


def _measures(step: int, snapshot: bool) -> bool:
    """Whether a step reads the parameter norms (and the ReLU layers' dead units)."""
    return snapshot or step <= PARAM_FIRST or step % PARAM_EVERY == 0


def watch(model: torch.nn.Module, optimizer: torch.optim.Optimizer, **options) -> Watch:
    """Use as `with torchlint.watch(model, optimizer) as w: ...`; then read `w.events` and `w.history`.
    With several ranks that all run the watch, `ranks=True` makes them exchange their checks each step."""
    return Watch(model, optimizer, **options)
