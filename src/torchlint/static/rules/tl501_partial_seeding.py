"""TL501 partial-seeding: some RNGs seeded, others used unseeded; DataLoader workers without seeding."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule

SEEDERS = {
    "random.seed": "random",
    "numpy.random.seed": "numpy",
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
    "torch.cuda.manual_seed": "cuda",
    "torch.cuda.manual_seed_all": "cuda",
}
SEEDS_EVERYTHING = frozenset({"seed_everything", "set_seed", "set_reproducible", "enable_full_determinism"})
TORCH_RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
    "multinomial", "poisson", "dropout", "Dropout", "random_split", "RandomSampler", "uniform_", "normal_",
    "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "Linear", "Conv1d", "Conv2d",
    "Conv3d", "LSTM", "GRU", "RNN", "Embedding", "MultiheadAttention", "TransformerEncoderLayer",
})


def rng_used(call: CallInfo) -> str | None:
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


class PartialSeeding(Rule):
    info = RuleInfo(
        "TL501", "partial-seeding", "warning",
        "Some random number generators are seeded and others the code uses are not: runs differ anyway.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        calls = list(ctx.calls.values())
        if any(c.name in SEEDS_EVERYTHING for c in calls):
            return
        seeds = [c for c in calls if c.form == "function" and c.qual in SEEDERS]
        if not seeds:
            return
        seeded = {SEEDERS[c.qual] for c in seeds}
        if "torch" not in seeded and len(seeded) < 2:
            return  # one algorithm-local seed (np.random.seed for a sampling scheme) is not run seeding
        used: dict[str, CallInfo] = {}
        for call in calls:
            rng = rng_used(call)
            if rng is not None:
                used.setdefault(rng, call)
        missing = sorted(rng for rng in used if rng not in seeded)
        if missing:
            first = used[missing[0]]
            names = {"random": "random.seed", "numpy": "np.random.seed", "torch": "torch.manual_seed"}
            ctx.report(
                self.info, seeds[0].node,
                f"seeds {', '.join(sorted(seeded))} but this file also draws from "
                f"{', '.join(missing)} (e.g. `{ctx.code(first.node, 40)}`), which stays unseeded: runs still "
                f"differ. Add {', '.join(names[m] for m in missing)}",
            )
        for call in calls:
            if call.form == "function" and (call.qual or "").endswith("DataLoader"):
                workers = ctx.value(call.kwargs.get("num_workers"))
                if workers.op == "const" and workers.const and workers.const > 0 and \
                        not {"worker_init_fn", "generator"} & set(call.kwargs) and {"numpy", "random"} & set(used):
                    ctx.report(
                        self.info, call.node,
                        f"`{ctx.code(call.node)}`: its worker processes start with the same numpy/random state "
                        "(identical augmentations, runs not reproducible); pass worker_init_fn that seeds "
                        "them from torch.initial_seed(), and a seeded generator",
                    )
