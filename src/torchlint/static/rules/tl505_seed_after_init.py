"""TL505 seed-after-init: torch seeded only after the model's weights were drawn."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.construction_draws import RANDOM_INIT, draws_when_built
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.seeding import SEEDS_EVERYTHING
from torchlint.static.rules.base import Rule

TORCH_SEEDS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
LOADS = frozenset({"load_state_dict", "load_checkpoint", "from_pretrained"})


class SeedAfterInit(Rule):
    info = RuleInfo(
        "TL505", "seed-after-init", "warning",
        "torch is seeded only after the model is built: its initial weights, drawn when its layers are "
        "made, differ from run to run.",
        tags=("reproducibility",),
    )

    def on_end(self, ctx: FileContext) -> None:
        for body in [ctx.module_body, *ctx.functions]:
            if body is None:
                continue
            built = None
            for entry in body.entries:
                if not isinstance(entry, CallInfo):
                    continue
                if entry.name in LOADS:
                    break  # weights restored from a checkpoint: their first draw does not matter
                if built is None and _builds_model(ctx, entry):
                    built = entry
                elif _seeds_torch(ctx, entry):
                    if built is not None and not _loads_later(body, entry):
                        ctx.report(
                            self.info, entry.node,
                            f"`{ctx.code(entry.node, 40)}` seeds torch after `{ctx.code(built.node, 40)}` has "
                            "built the model, whose layers drew their initial weights from the unseeded "
                            "generator: every run starts from different weights. Seed before building the model",
                            related=((built.node, "the model is built here, before the seed"),),
                        )
                    break


def _builds_model(ctx: FileContext, call: CallInfo) -> bool:
    """A call whose result is a module with randomly initialised layers: a `torch.nn` layer that draws
    its weights, or an instance of one of the project's module classes (directly or through a
    function that returns one) whose construction may draw. Pretrained models are left out."""
    value = ctx.value(call.node)
    if value.kind == "module":
        qual = value.qual or ""
        return qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1] in RANDOM_INIT
    return value.kind == "instance" and value.cls is not None and value.cls.is_module and draws_when_built(value.cls)


def _seeds_torch(ctx: FileContext, call: CallInfo) -> bool:
    """`torch.manual_seed(...)`, a seed-everything helper, or a function of the file that calls one."""
    if call.name in SEEDS_EVERYTHING or (call.form == "function" and call.qual in TORCH_SEEDS):
        return True
    body = getattr(call.callee, "body", None)
    if isinstance(body, Body):
        return any(isinstance(e, CallInfo) and (e.name in SEEDS_EVERYTHING or e.qual in TORCH_SEEDS)
                   for e in body.walk(expand=False))
    return False


def _loads_later(body: Body, seed: CallInfo) -> bool:
    """Weights loaded after the seed (`model.load_state_dict(...)`): the first draw is overwritten."""
    after = False
    for entry in body.walk(expand=True):
        if entry is seed:
            after = True
        elif after and isinstance(entry, CallInfo) and entry.name in LOADS:
            return True
    return False
