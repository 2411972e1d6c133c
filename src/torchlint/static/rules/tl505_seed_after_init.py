"""TL505 seed-after-init: torch seeded only after the model's weights were drawn."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.construction_draws import RANDOM_INIT, draws_when_built
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.model_modes import SAME_MODULE
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.seeding import SEEDS_EVERYTHING
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import held, nodes_of, simple_statements, target_names

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
                if isinstance(entry, Body) and built is not None and any(
                        isinstance(e, CallInfo) and e.name in LOADS for e in entry.walk(expand=False)):
                    break  # a loop that loads weights (`for rank in ...: model.load_state_dict(...)`)
                if not isinstance(entry, CallInfo):
                    continue
                if entry.name in LOADS or _writes_weights(entry):
                    break  # weights restored from a checkpoint: their first draw does not matter
                if _seeds_torch(ctx, entry):  # (a builder that seeds before it builds: a seeded model)
                    if built is not None and not _loads_later(body, entry) and \
                            _used_after(body.node, built.node, entry.node):
                        ctx.report(
                            self.info, entry.node,
                            f"`{ctx.code(entry.node, 40)}` seeds torch after `{ctx.code(built.node, 40)}` has "
                            "built the model, whose layers drew their initial weights from the unseeded "
                            "generator: every run starts from different weights. Seed before building the model",
                            related=((built.node, "the model is built here, before the seed"),),
                        )
                    break
                if built is None and _builds_model(ctx, entry) and not _without_storage(ctx, body.node, entry.node):
                    built = entry


def _builds_model(ctx: FileContext, call: CallInfo, depth: int = 0) -> bool:
    """A call whose result is a module with randomly initialised layers: a `torch.nn` layer that draws
    its weights, or an instance of one of the project's module classes (directly or through a
    function that returns one) whose construction may draw, or of a project class that builds such a
    module when it is made (an RL agent's actor and critic). Pretrained models are left out, and so
    are `model.to(...)`, `model.eval()` and the like: they return the module they are called on."""
    if call.form == "method" and call.name in SAME_MODULE:
        return False
    value = ctx.value(call.node)
    if value.kind == "module":
        qual = value.qual or ""
        return qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1] in RANDOM_INIT
    if value.kind != "instance" or value.cls is None:
        return False
    if value.cls.is_module:
        return draws_when_built(value.cls)
    return _holds_model(ctx, value.cls, depth)


def _holds_model(ctx: FileContext, cls, depth: int) -> bool:
    """A class of the file that is no module but whose `__init__` builds one and loads no weights."""
    body = getattr(cls.find("methods", "__init__"), "body", None)
    if depth >= 2 or not isinstance(body, Body):
        return False
    calls = [entry for entry in body.walk(expand=False) if isinstance(entry, CallInfo)]
    if any(call.name in LOADS or _writes_weights(call) for call in calls):
        return False
    return any(_builds_model(ctx, call, depth + 1) for call in calls)


# contexts in which a model is built without drawing its weights: they are filled in later (loaded)
_EMPTY_INIT = frozenset({"init_empty_weights", "init_on_device", "no_init_weights", "skip_init"})


def _without_storage(ctx: FileContext, scope, call: cst.Call) -> bool:
    """The model is built under `with torch.device("meta"):`, `init_empty_weights()` or
    `fabric.init_module(empty_init=True)`: no weights are drawn (they are loaded afterwards)."""
    for with_node in nodes_of(scope, (cst.With,)):
        if not any(_empty_init(ctx, item.item) for item in with_node.items):
            continue
        if id(call) in held(with_node.body, {id(call)}):
            return True
    return False


def _empty_init(ctx: FileContext, item: cst.BaseExpression) -> bool:
    if not isinstance(item, cst.Call):
        return False
    qual = ctx.qualify(item.func) or ""
    name = qual.rsplit(".", 1)[-1] or (item.func.attr.value if isinstance(item.func, cst.Attribute) else "")
    if name in _EMPTY_INIT:
        return True
    if name == "init_module":
        return any(arg.keyword is not None and arg.keyword.value == "empty_init" and
                   not (isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None")) for arg in item.args)
    if qual in ("torch.device", "device") or name == "device":
        return any(isinstance(arg.value, cst.SimpleString) and "meta" in arg.value.value for arg in item.args)
    return False


def _seeds_torch(ctx: FileContext, call: CallInfo) -> bool:
    """`torch.manual_seed(...)`, a seed-everything helper, or a function of the file that calls one."""
    if call.name in SEEDS_EVERYTHING or (call.form == "function" and call.qual in TORCH_SEEDS):
        return True
    body = getattr(call.callee, "body", None)
    if isinstance(body, Body):
        return any(isinstance(e, CallInfo) and (e.name in SEEDS_EVERYTHING or e.qual in TORCH_SEEDS)
                   for e in body.walk(expand=False))
    return False


def _writes_weights(call: CallInfo) -> bool:
    """A project function that restores weights: its body loads a state dict, a checkpoint or
    pretrained weights, or assigns a layer's `.weight` / `.bias` (`load_weights_into_gpt(gpt, params)`)."""
    body = getattr(call.callee, "body", None)
    if call.form != "local" or not isinstance(body, Body) or not isinstance(body.node, cst.FunctionDef):
        return False
    if any(isinstance(e, CallInfo) and e.name in LOADS for e in body.walk(expand=False)):
        return True
    return any(isinstance(t.target, cst.Attribute) and t.target.attr.value in ("weight", "bias")
               for assign in nodes_of(body.node.body, (cst.Assign,)) for t in assign.targets)


def _used_after(scope, built: cst.Call, seed: cst.Call) -> bool:
    """The model built before the seed is used after it: it is bound to a name the code reads after
    the seed (a throwaway built to print its size, then a new model built after the seed, is not),
    or it is not bound to a name at all."""
    statements = simple_statements(list(scope.body.body) if isinstance(scope, cst.FunctionDef) and
                                   isinstance(scope.body, cst.IndentedBlock) else list(getattr(scope, "body", ())))
    names: set[str] = set()
    after = None
    for index, small in enumerate(statements):
        holds = {id(node) for node in nodes_of(small, (cst.Call,))}
        if id(built) in holds and isinstance(small, cst.Assign):
            names = {name.value for target in small.targets for name in target_names(target.target)}
        if id(seed) in holds:
            after = index
            break
    if not names or after is None:
        return True
    return any(isinstance(node, cst.Name) and node.value in names
               for small in statements[after + 1:] for node in nodes_of(small, (cst.Name,)))


def _loads_later(body: Body, seed: CallInfo) -> bool:
    """Weights loaded after the seed (`model.load_state_dict(...)`): the first draw is overwritten."""
    after = False
    for entry in body.walk(expand=True):
        if entry is seed:
            after = True
        elif after and isinstance(entry, CallInfo) and entry.name in LOADS:
            return True
    return False
