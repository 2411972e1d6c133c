"""Several ranks (torchrun, DistributedDataParallel): one exchange per step, cross-rank checks.

Once the program has a default process group of two or more ranks, each step's check starts one
all-reduce of a small table over a gloo group of torchlint's own: so it never pairs with one of
the program's collectives (a DDP bucket that one rank never launched, say), and on GPUs it reads
nothing from the device (the step's values were read by the step's one sync already). Each rank
fills its row: whether an event fired there (and how early in causal order), its loss and its
parameter norm. A rank that found something first leaves its events in the process
group's key-value store, so nothing else is collective.

The all-reduce is finished where every rank runs the same code: at the next outermost forward
(before DDP's forward runs a collective), the next check, or the end of the watch. Its latency
overlaps the optimizer's update, and no rank stops while the others may still be in one of the
program's own collectives after the step (a logged loss all-reduced across ranks): they all stop
together before the next forward. Every rank reads the same table, so all take the same decision:
stop when any rank found something, with the events of the rank that saw the cause, which rank 0
reports; parameters that differ between the ranks of a DDP model (TL911); a loss that is
non-finite on some ranks only.
"""

from __future__ import annotations

import inspect
import math
import os
import pickle

import torch

from torchlint.runtime.catalog import (
    NON_FINITE_FORWARD,
    NON_FINITE_PARAMETER,
    RANKS_DIVERGED,
    UNUSED_PARAMETERS,
)
from torchlint.runtime.records import Event
from torchlint.runtime.wrappers import is_ddp

DRIFT = 1e-5  # relative spread of the parameter norms across ranks that is not rounding
ORIGIN_CODES = (NON_FINITE_PARAMETER.code, NON_FINITE_FORWARD.code)  # a rank's own cause, not an all-reduced effect
ORDER, LOSS, PARAM = 0, 1, 2  # columns of a row


def world() -> tuple[int, int] | None:
    """(rank, world size) of the program's default process group, when it has two ranks or more."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    size = dist.get_world_size()
    return (dist.get_rank(), size) if size > 1 else None


class Ranks:
    """torchlint's own gloo group over the program's ranks."""

    made = 0  # watches of this process that found ranks: the same count on every rank

    def __init__(self, rank: int, size: int) -> None:
        import torch.distributed as dist

        self.rank, self.size = rank, size
        self._dist = dist
        self._group = dist.new_group(backend="gloo")  # every rank makes it at its first step: same order
        self._store = dist.distributed_c10d._get_default_store()
        Ranks.made += 1
        self._prefix = f"torchlint/{Ranks.made}/"

    def start(self, row: list[float]):
        """Start the all-reduce of every rank's row (the other rows are 0 here: the sum is each row)."""
        table = torch.zeros(self.size, len(row), dtype=torch.float64)
        table[self.rank] = torch.tensor(row, dtype=torch.float64)
        return self._dist.all_reduce(table, group=self._group, async_op=True), table

    @staticmethod
    def finish(started) -> list[list[float]]:
        work, table = started
        work.wait()
        return table.tolist()

    def publish(self, step: int, events: list[Event]) -> None:
        """Leave this rank's events of a step where the others can read them (before the exchange)."""
        self._store.set(f"{self._prefix}{step}/{self.rank}", pickle.dumps(events))

    def events_of(self, step: int, table: list[list[float]]) -> list[list[Event]]:
        """Each rank's published events of a step (those the table says exist)."""
        return [pickle.loads(self._store.get(f"{self._prefix}{step}/{rank}")) if row[ORDER] else []
                for rank, row in enumerate(table)]


def order(events: list[Event]) -> float:
    """0 when nothing fired; 1 when the rank made the problem itself (its forward, its parameters);
    2 when its replay located the op; 3 otherwise (DDP all-reduces gradients, so a NaN gradient one
    rank made reaches every rank, and only that rank's replay reproduces it)."""
    if not events:
        return 0.0
    if events[0].code in ORIGIN_CODES:
        return 1.0
    return 2.0 if events[0].op or events[0].line else 3.0


def reporting_rank(table: list[list[float]]) -> int | None:
    """The rank whose events are reported: the earliest cause, then the lowest rank."""
    fired = [(row[ORDER], rank) for rank, row in enumerate(table) if row[ORDER]]
    return min(fired)[1] if fired else None


def annotate(gathered: list[list[Event]], table: list[list[float]], source: int) -> list[Event]:
    """The reporting rank's events, each naming its rank and what the other ranks saw."""
    events = gathered[source]
    others = [f"{', '.join(e.code for e in found)} on rank {rank}" for rank, found in enumerate(gathered)
              if found and rank != source]
    finite = [(rank, row[LOSS]) for rank, row in enumerate(table) if rank != source and math.isfinite(row[LOSS])]
    parts = []
    if not math.isfinite(table[source][LOSS]) and finite:
        shown = ", ".join(f"rank {rank}: {loss:.4g}" for rank, loss in finite[:4])
        parts.append(f"the loss was finite on the other ranks ({shown}): this rank's batch (its shard of the data) "
                     "makes it")
    if others:
        shared = " (gradients are averaged across ranks: a NaN one rank makes reaches all)" if any(
            e.code == "TL902" for found in gathered for e in found) else ""
        parts.append(f"also found: {'; '.join(others[:4])}{shared}")
    for event in events:
        event.message = f"rank {source} of {len(table)}: {event.message}" + "".join(f"; {part}" for part in parts)
    return events


def drift_event(step: int, table: list[list[float]]) -> Event | None:
    """TL911 when the ranks' parameter norms differ beyond rounding (a DDP model keeps them equal)."""
    norms = [row[PARAM] for row in table]
    if not all(math.isfinite(n) for n in norms):
        return None
    low, high = min(norms), max(norms)
    if high - low <= DRIFT * max(abs(high), 1e-12):
        return None
    shown = ", ".join(f"{n:.8g} on rank {rank}" for rank, n in enumerate(norms[:4]))
    return Event(RANKS_DIVERGED.code, RANKS_DIVERGED.name, step,
                 f"step {step}: the parameters differ between ranks (norm {shown}) although the model is wrapped in "
                 "DistributedDataParallel, which keeps them equal only when they start equal and every rank applies "
                 "the same update: weights loaded or changed on some ranks after wrapping (a checkpoint loaded by "
                 "rank 0 only), or an optimizer over parameters that are not the wrapped model's")


def unused_parameters(wrappers, ran: set[int], step: int) -> Event | None:
    """TL910: under DDP without `find_unused_parameters`, parameters that got no gradient in a step.
    DDP waits for every parameter's gradient, so the next forward fails ("Expected to have finished
    reduction in the prior iteration"), naming parameter indices only."""
    for ddp in wrappers:
        if getattr(ddp, "find_unused_parameters", True) or getattr(ddp, "static_graph", False):
            continue
        model = ddp.module
        missing = [name for name, p in model.named_parameters() if p.requires_grad and p.grad is None]
        if not missing:
            continue
        owners = {name.rpartition(".")[0] for name in missing}
        modules = dict(model.named_modules())
        idle = sorted(o for o in owners if o in modules and id(modules[o]) not in ran)
        shown = ", ".join(f"`{name}`" for name in missing[:6]) + (", ..." if len(missing) > 6 else "")
        why = (f"module(s) {', '.join(f'`{o}`' for o in idle[:4])} did not run in this step's forward" if idle
               else "their modules ran, but their output does not reach the loss")
        file, line = _forward_line(type(model))
        return Event(UNUSED_PARAMETERS.code, UNUSED_PARAMETERS.name, step,
                     f"step {step}: {len(missing)} parameter(s) got no gradient ({shown}): {why}. "
                     "DistributedDataParallel (find_unused_parameters=False) waits for every parameter's gradient, so "
                     "the next forward fails with 'Expected to have finished reduction in the prior iteration'. Use "
                     "every parameter in the loss, leave unused modules out of the model (or freeze them with "
                     "requires_grad_(False)), or pass find_unused_parameters=True (an extra pass over the graph each "
                     "step)", module=idle[0] if idle else None, file=file, line=line)
    return None


def _forward_line(cls) -> tuple[str | None, int | None]:
    """The model's `forward`, where the unused modules would have to be called."""
    try:
        forward = cls.forward
        return os.path.abspath(inspect.getsourcefile(forward)), inspect.getsourcelines(forward)[1]
    except (TypeError, OSError, AttributeError):
        return None, None


class RankState:
    """What a watch knows of the ranks: the group once found, the exchange in flight, and per step
    the DDP wrappers called and the modules that ran (to name the ones behind unused parameters).
    Enabled only where every rank runs the watch (`torchlint run`, the framework integrations,
    `watch(..., ranks=True)`): the group is made, and each step exchanged, by all ranks together,
    so a watch on rank 0 alone would wait for the others forever."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.ranks: Ranks | None = None
        self.ddp_seen = False
        self.wrappers: list = []
        self.ran: set[int] = set()
        self._pending: tuple | None = None  # (started exchange, its step)
        self.agreed_through = math.inf  # the last step whose exchange is finished (every step: one rank)

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def outermost(self, module) -> None:
        if is_ddp(module):
            self.wrappers.append(module)
            self.ddp_seen = True

    def after_judge(self, watch, before: int, stats) -> None:
        """Once the step's own judgement is made (events from `before` on are this step's): start
        the exchange; `settle` finishes it."""
        if not self.enabled:
            return
        if self.ranks is None:
            found = world()
            if found is None:
                return
            self.ranks = Ranks(*found)
        if len(watch.events) == before and not (watch.events and watch.stop_at_first):
            event = unused_parameters(self.wrappers, self.ran, stats.step)
            if event is not None:
                watch._record(event)
        new = watch.events[before:]
        if new:
            self.ranks.publish(stats.step, new)
        row = [order(new), stats.loss, math.nan if stats.param_norm is None else stats.param_norm]
        self._pending = (self.ranks.start(row), stats.step)
        self.agreed_through = stats.step - 1

    def settle(self, watch) -> None:
        """Finish the exchange in flight: every rank ends with the reported rank's events, or a TL911."""
        if self._pending is None:
            return
        started, step = self._pending
        self._pending = None
        table = self.ranks.finish(started)
        self.agreed_through = step
        source = reporting_rank(table)
        if source is not None:
            reported = annotate(self.ranks.events_of(step, table), table, source)
            watch.events[:] = [e for e in watch.events if e.step != step] + reported
        elif self.ddp_seen and not watch.events:
            event = drift_event(step, table)  # the same table on every rank: the same verdict
            if event is not None:
                watch._record(event)

    def end_step(self) -> None:
        self.wrappers.clear()
        self.ran.clear()
