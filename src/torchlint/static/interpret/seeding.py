"""Which random number generators a module seeds and which it draws from (global state only).

TL501 compares the two for a file, and for the project modules the file imports: their summaries
carry a ``SeedingUse`` each, so a training script that seeds `torch` and `random` but not NumPy is
seen to leave unseeded the `np.random.choice` its imported training loop draws clients with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.traverse import nodes_of

SEEDERS = {
    "random.seed": "random",
    "numpy.random.seed": "numpy",
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
    "torch.cuda.manual_seed": "cuda",
    "torch.cuda.manual_seed_all": "cuda",
}
SEED_CALLS = {"random": "random.seed", "numpy": "np.random.seed", "torch": "torch.manual_seed"}  # the fix
SEEDS_EVERYTHING = frozenset({"seed_everything", "set_seed", "set_reproducible", "enable_full_determinism"})
TORCH_RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
    "multinomial", "poisson", "dropout", "Dropout", "random_split", "RandomSampler", "uniform_", "normal_",
    "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "Linear", "Conv1d", "Conv2d",
    "Conv3d", "LSTM", "GRU", "RNN", "Embedding", "MultiheadAttention", "TransformerEncoderLayer",
})
# Code that runs in DataLoader workers when there are any, where PyTorch reseeds `random`, NumPy
# (since 1.9) and torch per worker from the loader's base seed: not evidence of an unseeded draw.
PER_ITEM = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__", "__call__", "forward"})


def rng_used(call: CallInfo, ctx: FileContext | None = None) -> str | None:
    """The global generator a call draws from: "random", "numpy" or "torch" (None: none). With
    ``ctx``, a draw the code writes into a string (`'%06x' % random.randrange(16**6)`, a unique
    name) does not count: it labels something and never reaches the numbers; nor does a draw that
    picks the seed (``seed_draws``)."""
    if call.form != "function" or (ctx is not None and (id(call.node) in ctx.as_text
                                                        or id(call.node) in seed_draws(ctx))):
        return None
    qual = call.qual or ""
    name = call.name
    if qual.startswith("random.") and qual.count(".") == 1 and name not in ("seed", "Random", "SystemRandom",
                                                                            "getstate", "setstate"):
        return "random"
    if qual.startswith("numpy.random.") and name not in ("seed", "default_rng", "RandomState", "Generator",
                                                         "get_state", "set_state", "SeedSequence"):
        return "numpy"
    if qual.startswith("torch.") and name in TORCH_RANDOM:
        return "torch"
    if qual.endswith("DataLoader") and "shuffle" in call.kwargs:
        return "torch"
    return None


# calls whose argument seeds a generator: the global ones, and a dedicated generator made or reseeded
SEEDED_BY_ARGUMENT = frozenset(SEEDERS) | {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState",
                                            "numpy.random.SeedSequence"}


def seed_draws(ctx: FileContext) -> set[int]:
    """Ids of the draws whose result is a seed: `torch.manual_seed(randint(0, sys.maxsize))`, or
    `seed = args.seed if args.seed is not None else random.randint(0, 2**32 - 1)` and then
    `torch.manual_seed(seed)` in the same function. Such a draw picks the run's seed (a run without
    one is meant to differ); no number the program computes with comes from it."""
    found = ctx.memo.get("seed draws")
    if found is not None:
        return found
    found = set()
    seeding = [call for call in ctx.calls.values() if call.args and (
        (call.form == "function" and call.qual in SEEDED_BY_ARGUMENT) or
        (call.form == "method" and call.name == "manual_seed"))]
    for call in seeding:
        values = [call.args[0], *(value for value in _assigned_to(ctx, call) if value is not None)]
        found.update(id(node) for value in values for node in nodes_of(value, (cst.Call,)))
    ctx.memo["seed draws"] = found
    return found


def _drawn_from(ctx: FileContext, draw: cst.Call) -> str | None:
    """The global generator a draw uses, as `rng_used` reads it (not leaving out the seed's own draws)."""
    info = ctx.call(draw)
    return rng_used(info) if info is not None else None


def _assigned_to(ctx: FileContext, call: CallInfo) -> list:
    """What the function (or module) holding the call assigns to its first argument, when that is a
    name (`seed = ...` before `torch.manual_seed(seed)`); None for an assignment it cannot read."""
    argument = call.args[0]
    if not isinstance(argument, cst.Name):
        return []
    holder = ctx.holders().get(id(call))
    scope = holder.node if holder is not None else ctx.module
    return list(ctx.assignments(scope).get(argument.value, ()))


def drawn_seed(ctx: FileContext, call: CallInfo) -> bool:
    """`torch.manual_seed(randint(0, sys.maxsize))`, or a name only ever assigned such a draw: a seed
    that differs in every run (each worker its own stream), which makes no run reproducible."""
    if not call.args:
        return False
    values = _assigned_to(ctx, call) or [call.args[0]]
    draws = seed_draws(ctx)
    seeded = {SEEDERS[c.qual] for c in ctx.calls.values() if c.form == "function" and c.qual in SEEDERS and c is not call}
    # `np.random.seed(args.seed)` then `torch.manual_seed(np.random.randint(1, 10000))` (Rainbow): the
    # draw comes from a seeded generator, so the seed it picks is the same in every run
    return all(isinstance(value, cst.Call) and id(value) in draws and _drawn_from(ctx, value) not in seeded
               for value in values)


@dataclass(frozen=True)
class SeedingUse:
    """A module's seeding: the generators it seeds, whether it calls a seed-everything helper, and
    its draws outside per-item code: per generator, the first draw (the call node) in each top-level
    function or class (its name; None for module level and code it cannot name)."""

    seeded: frozenset[str] = frozenset()
    everything: bool = False
    draws: dict[str, list[tuple[Any, str | None]]] = field(default_factory=dict)

    def reached(self, rng: str, names: Callable[[str], bool]) -> Any:
        """The first draw from ``rng`` that runs for a program using the definitions ``names``
        accepts (module-level draws always do); None when there is none."""
        return next((node for node, owner in self.draws.get(rng, ()) if owner is None or names(owner)), None)


def seeding_use(ctx: FileContext) -> SeedingUse:
    seeded, everything, draws = set(), False, {}
    owners = {id(entry): body.qualname.split(".", 1)[0] for body in ctx.functions if body.qualname
              for entry in body.walk(expand=False)}
    for call in ctx.calls.values():
        if call.name in SEEDS_EVERYTHING:
            everything = True
        elif call.form == "function" and call.qual in SEEDERS:
            seeded.add(SEEDERS[call.qual])
        else:
            rng = rng_used(call, ctx)
            if rng is not None and call.scope.function not in PER_ITEM:
                owner = owners.get(id(call))
                found = draws.setdefault(rng, [])
                if all(owner != known for _, known in found):
                    found.append((call.node, owner))
    return SeedingUse(frozenset(seeded), everything, draws)
