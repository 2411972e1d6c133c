"""Which random number generators a module seeds and which it draws from (global state only).

TL501 compares the two for a file, and for the project modules the file imports: their summaries
carry a ``SeedingUse`` each, so a training script that seeds `torch` and `random` but not NumPy is
seen to leave unseeded the `np.random.choice` its imported training loop draws clients with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchlint.static.interpret.context import CallInfo, FileContext

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


def rng_used(call: CallInfo) -> str | None:
    """The global generator a call draws from: "random", "numpy" or "torch" (None: none)."""
    if call.form != "function":
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


@dataclass(frozen=True)
class SeedingUse:
    """A module's seeding: the generators it seeds, whether it calls a seed-everything helper, and
    its first draw from each generator outside per-item code (the call node)."""

    seeded: frozenset[str] = frozenset()
    everything: bool = False
    draws: dict[str, Any] = field(default_factory=dict)


def seeding_use(ctx: FileContext) -> SeedingUse:
    seeded, everything, draws = set(), False, {}
    for call in ctx.calls.values():
        if call.name in SEEDS_EVERYTHING:
            everything = True
        elif call.form == "function" and call.qual in SEEDERS:
            seeded.add(SEEDERS[call.qual])
        else:
            rng = rng_used(call)
            if rng is not None and call.scope.function not in PER_ITEM:
                draws.setdefault(rng, call.node)
    return SeedingUse(frozenset(seeded), everything, draws)
