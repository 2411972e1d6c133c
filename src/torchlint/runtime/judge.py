"""The verdict on a step's values, in causal order: what the last update left, then the forward,
the gradients, their growth and vanishing, memory, graphs kept alive and gradients never cleared.

Mixed into `Watch`, which reads the values (see `watch`) and hands them here; each event itself is
built by `SlowPath`.
"""

from __future__ import annotations

import math
import statistics

import torch

from torchlint.runtime.bookkeeping import kept_alive_event, not_cleared_event
from torchlint.runtime.catalog import GRAPH_KEPT_ALIVE, MEMORY_GROWTH
from torchlint.runtime.records import StepStats, Track
from torchlint.runtime.reductions import local, memory_event, norms


class StepJudge:
    """The judgement of one step's values (the watch's state is set up by `Watch.__init__`)."""

    def _judge(self, optimizer, track: Track, params, param_norms, stats: StepStats, forward_nan: bool,
               forward_inf: bool, has_grads: bool, loss_known: bool, stale: int, site) -> None:
        """The first thing wrong, in causal order: the parameters the last update left, then this
        step's forward, its gradients, their growth, their vanishing, memory.

        A NaN in the model's output is always reported. An infinity alone is reported only when it
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
