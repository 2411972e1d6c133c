"""The slow path of a watch, run for the failing step only: name the module, the parameter, the op.

Each method builds one event. Replays (see `replay`) start from the step's kept inputs and RNG
state and leave the user's state as it was. When a replay does not make the NaN/Inf again (code
that keeps state between calls), the event says so rather than naming a wrong op.
"""

from __future__ import annotations

import math
import os

import torch

from torchlint.runtime import replay
from torchlint.runtime.catalog import (
    EXPLODING_GRADIENT,
    NON_FINITE_FORWARD,
    NON_FINITE_GRADIENT,
    NON_FINITE_PARAMETER,
    VANISHING_GRADIENT,
)
from torchlint.runtime.causes import update_causes
from torchlint.runtime.optim_state import explain_non_finite, explain_vanishing
from torchlint.runtime.records import Event, Track
from torchlint.runtime.reductions import installed, local
from torchlint.runtime.snapshot import Snapshot

NOT_REPRODUCED = "the replay of this step from its kept inputs and RNG state did not reproduce it: stateful code?"
NOT_REPLAYED = ("not replayed: the model is sharded across ranks (FSDP, DTensor), and its forward on one rank alone "
                "would wait for the others")
NOT_REPLAYED_LATE = ("not replayed: the GPU was still busy, so this step's check was read when the next step began, "
                     "after its update, and the weights it started from were too large to keep a copy of; "
                     "`torchlint run --sync` (or `watch(..., sync=True)`) reads every check at its own step and "
                     "replays it")


def _updates(track: Track) -> str:
    """The update(s) since the parameters were last measured: the last step's, or those of a range."""
    step, since = track.last_step, track.param_step
    if since is None or since >= step:
        return f"step {step}: optimizer.step()"
    return f"steps {since}-{step}: the optimizer's updates"


def _at(file: str | None, line: int | None) -> str:
    return f" at {os.path.basename(file)}:{line}" if file else ""


def _non_finite_input(call):
    """The first floating-point input of a kept call that holds NaN/Inf, or None."""
    inputs = [a for a in (*call.args, *call.kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    return next((a for a in inputs if not torch.isfinite(a).all()), None)


class SlowPath:
    """Mixed into `Watch`: the events, built from what the cheap path kept."""

    def sources(self) -> list[str]:
        """The user's files involved: those given, then those that define the watched modules' classes,
        leaving out installed libraries (a Hugging Face model's classes are not the user's code)."""
        import inspect

        types = {type(m) for m in self.model.modules()} if self.model is not None else set().union(*self._roots.values())
        files = set()
        for cls in types:
            try:
                file = inspect.getsourcefile(cls)
            except TypeError:
                continue
            if file and not file.startswith((replay.TORCH_ROOT, replay.HERE)) and not installed(file):
                files.add(os.path.abspath(file))
        return [*self.files, *sorted(files - set(self.files))]

    def _record(self, event: Event) -> None:
        if self.stop_at_first and self.events:
            return
        from torchlint.runtime.confirm import confirm, explain

        confirm(event)
        explain(event, self.sources())
        self.events.append(event)

    def _name_of(self, module: torch.nn.Module) -> str:
        """Its path in the watched model, or in the outermost module seen this step that contains it."""
        from torchlint.runtime.wrappers import unwrapped

        # named inside DDP and torch.compile wrappers: `layer1`, not `_orig_mod.layer1`
        roots = [unwrapped(self.model)] if self.model is not None else [c.module for c in self._calls]
        for root in roots:
            for name, sub in root.named_modules():
                if sub is module:
                    return name or ("<model>" if self.model is not None else type(root).__name__)
        return type(module).__name__

    def _param_name(self, param: torch.Tensor, index: int) -> str:
        from torchlint.runtime.wrappers import unwrapped

        roots = [unwrapped(self.model)] if self.model is not None else [c.module for c in self._calls]
        for root in roots:
            for name, candidate in root.named_parameters():
                if candidate is param:
                    return name
        return f"parameter {index}"

    def _replayable(self) -> list:
        """The step's outermost calls a replay may run on this rank alone (none of a sharded model)."""
        from torchlint.runtime.wrappers import replays_alone

        if self._late_replays_off:
            return []
        return self._calls if all(replays_alone(call.module) for call in self._calls) else []

    def _not_replayed(self) -> str:
        return NOT_REPLAYED_LATE if self._late_replays_off else NOT_REPLAYED

    def _replay(self, function, *args):
        self._replaying = True
        try:
            return function(*args)
        finally:
            self._replaying = False

    def _forward_event(self, nan: bool) -> None:
        """The first model call whose output holds NaN/Inf (`nan`: NaN), or, in a sharded model
        that no replay can run, the first of its modules' outputs. The replay of that call, op by
        op, names the op that made it and the innermost module running that op: the maker, not the
        module that consumed its output."""
        values, keys = self._forward_values, self._probe_keys
        first = next(i for i, v in enumerate(values) if (v != v if nan else not math.isfinite(v)))
        earlier = next(i for i, v in enumerate(values) if not math.isfinite(v))
        if keys[earlier][1] == keys[first][1]:  # an infinity earlier in the same forward: the NaN is made of it
            first = earlier
        module, call_index = keys[first]
        calls = self._replayable()
        call = calls[call_index] if 0 <= call_index < len(calls) else None
        found = self._replay(replay.first_non_finite_op, call.module, call.args, call.kwargs, call.rng, nan) \
            if call is not None else None
        if found is not None and found.module is not None:
            module = found.module
        name = self._name_of(module)
        op, file, line, stats = (found.op, found.file, found.line, found.stats) if found else (None, None, None, None)
        where = f"`{name}`" + (f", op torch.{op}{_at(file, line)}" if op else "")
        kept = self._calls[call_index] if found is None and 0 <= call_index < len(self._calls) else None
        bad_input = _non_finite_input(kept) if kept is not None else None
        if bad_input is not None:  # made before the model: the data, or the code that prepares it
            stats = f"its input already holds NaN/Inf: {replay.tensor_stats(bad_input)}; it comes from the data"
        elif found is None and call is not None:
            stats = NOT_REPRODUCED
        elif found is None and self._calls and not calls:
            stats = self._not_replayed()
        detail = f" ({stats})" if stats else ""
        self._record(Event(NON_FINITE_FORWARD.code, NON_FINITE_FORWARD.name, self.step,
                           f"step {self.step}: first non-finite output in {where}{detail}", name, op, file, line))

    def _loss_event(self, loss: float) -> None:
        """The model's output is finite but the loss is not: it is made after the model, in code no
        module hook sees. The ops recorded between the model's output and `backward()` name the
        op and its line; else the static findings in the file that calls backward() explain it."""
        found = self._loss_window.first_non_finite() if self._loss_window is not None else None
        head = f"step {self.step}: the loss is {loss} while the model's output is finite"
        if found is not None:
            op, file, line, stats = found
            self._record(Event(NON_FINITE_FORWARD.code, NON_FINITE_FORWARD.name, self.step,
                               f"{head}: torch.{op}{_at(file, line)}, between the model's output and the loss, "
                               f"made it from finite inputs ({stats})", None, op, file, line))
            return
        site = ""
        if self._backward_site is not None:
            site = f" (backward() at {os.path.basename(self._backward_site[0])}:{self._backward_site[1]})"
        event = Event(NON_FINITE_FORWARD.code, NON_FINITE_FORWARD.name, self.step,
                      f"{head}: it is made between the model's output and the loss{site}")
        if self._backward_site is not None:
            from torchlint.runtime.confirm import explain

            explain(event, [self._backward_site[0]])
        self._record(event)

    def _gradient_event(self, grad_norm: float) -> None:
        """Finite forward, non-finite gradient (sqrt or norm at 0...): replay the step's forward calls
        and their backward under anomaly detection. The parameters have not been updated yet (this is
        the step pre-hook) and each call's RNG state was kept, so the replay is the same computation."""
        backward = file = line = None
        root = self._calls[-1].module if self._calls else None
        replayed = False
        calls = self._replayable()
        for call in calls:
            if call.grad_out is None or not torch.isfinite(call.grad_out).all():
                continue
            replayed = True
            backward, file, line = self._replay(replay.anomaly_replay, call.module, call.args, call.kwargs,
                                                call.grad_out, call.rng)
            if backward:
                root = call.module
                break
        where = f": {backward}{_at(file, line)}" if backward else (f" ({NOT_REPRODUCED})" if replayed else "")
        if self._calls and not calls:
            where = f" ({self._not_replayed()})"
        self._record(Event(NON_FINITE_GRADIENT.code, NON_FINITE_GRADIENT.name, self.step,
                           f"step {self.step}: gradient norm is {grad_norm} with a finite forward pass{where}",
                           self._name_of(root) if root is not None else None,
                           backward.removesuffix("Backward0").lower() if backward else None, file, line))

    def _explosion_event(self, grad_norm: float, median: float) -> None:
        """Replay each forward call and its backward with hooks on every module: the module whose
        input gradient is largest relative to its output gradient is replayed op by op."""
        best = None
        op = file = line = stats = None
        self._replaying = True
        try:
            for call in self._replayable():
                if call.grad_out is not None:
                    found = replay.amplifying_module(call.module, call.args, call.kwargs, call.grad_out, call.rng)
                    if found is not None and (best is None or found.ratio > best.ratio):
                        best = found
            if best is not None:
                op, file, line, stats = replay.amplifying_op(best.module, best.args, best.kwargs, best.grad_out,
                                                             best.rng)
        finally:
            self._replaying = False
        name = self._name_of(best.module) if best is not None else None
        where = f" in `{name}`" + (f", op torch.{op}{_at(file, line)}" if op else "") if name else ""
        detail = f" ({stats})" if stats else ""
        self._record(Event(EXPLODING_GRADIENT.code, EXPLODING_GRADIENT.name, self.step,
                           f"step {self.step}: gradient norm {grad_norm:.3g} is {grad_norm / median:.3g}x the "
                           f"running median {median:.3g}{where}{detail}", name, op, file, line))

    def _update_event(self, optimizer, track: Track, params, param_norms: torch.Tensor, total: float) -> None:
        """One optimizer.step() multiplied the parameter norm: the update dwarfs the weights. Found
        from step 1 on, before any gradient history exists; the likely cause is read from the
        optimizer (lr, scheduler) and from whether clipping ran."""
        before = track.param_norms.to(param_norms.device)
        growth = (param_norms - before).tolist()
        index = max(range(len(growth)), key=growth.__getitem__)
        name = self._param_name(params[index], index)
        step = track.last_step
        grad_norm = next((s.grad_norm for s in self.history if s.step == step), math.nan)
        group = next((i for i, g in enumerate(optimizer.param_groups) if any(p is params[index] for p in g["params"])),
                     0)
        lr_used = track.lrs[group] if group < len(track.lrs) else None
        first_lr = track.first_lrs[group] if track.first_lrs and group < len(track.first_lrs) else None
        why = update_causes(optimizer, params[index], step, grad_norm, float(before[index]), lr_used, first_lr,
                            track.clipped, self.sources())
        self._record(Event(EXPLODING_GRADIENT.code, EXPLODING_GRADIENT.name, step,
                           f"{_updates(track)} multiplied the parameter norm by "
                           f"{total / track.param_total:.3g} ({track.param_total:.3g} -> {total:.3g}; gradient norm "
                           f"{grad_norm:.3g}), most in `{name}` ({float(before[index]):.3g} -> "
                           f"{float(param_norms[index]):.3g}): the update dwarfs the weights{why}", name))

    def _parameter_event(self, optimizer, track: Track, params, param_norms: torch.Tensor) -> None:
        finite = torch.isfinite(param_norms).tolist()
        index = finite.index(False)
        name = self._param_name(params[index], index)
        step = track.last_step
        previous = self.history[-2] if len(self.history) >= 2 else None
        # parameters in use were finite at the last step when its gradients were: its update made the NaN
        exact = previous is not None and previous.step == step and math.isfinite(previous.grad_norm)
        when = (f"step {step}: optimizer.step()" if exact else _updates(track)) if step else \
            "before the first step: the initialisation"
        why = explain_non_finite(optimizer, params[index]) if step else ""
        snapshot = self._snapshots.get(optimizer)
        if step and snapshot is not None and snapshot.step == step:
            why += self._replay_update(optimizer, snapshot)
        self._record(Event(NON_FINITE_PARAMETER.code, NON_FINITE_PARAMETER.name, step or 0,
                           f"{when} left `{name}` non-finite "
                           f"({replay.tensor_stats(local(params[index]))}){why}", name))

    def _replay_update(self, optimizer, snapshot: Snapshot) -> str:
        """Replay the update of the failing step from its snapshot, op by op, then put back the
        present state: `; replayed: ...` naming the op that made the NaN/Inf, or ''."""
        present = Snapshot()
        present.save(optimizer, self.step)
        self._replaying = True
        try:
            snapshot.restore(optimizer)
            found = replay.first_non_finite_update(optimizer)
        finally:
            present.restore(optimizer)
            self._replaying = False
        if found is None:
            return ""
        op, file, line, stats = found
        where = f" ({os.path.basename(file)}:{line})" if file else ""
        return f"; replaying that update, torch.{op}{where} made it from finite inputs: {stats}"

    def _vanishing_event(self, optimizer, grad_norm: float, floor: float) -> None:
        first = self.step - self.warmup + 1
        self._record(Event(VANISHING_GRADIENT.code, VANISHING_GRADIENT.name, self.step,
                           f"steps {first}-{self.step}: {explain_vanishing(optimizer, grad_norm, floor)}"))
