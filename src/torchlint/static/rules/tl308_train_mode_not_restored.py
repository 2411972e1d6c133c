"""TL308 train-mode-not-restored: a training loop that puts its model in eval mode and never back."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.scopes import WALK_BUDGET, Body
from torchlint.static.interpret.training import BACKWARD, STEP, actions, classify
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import nodes_of

EVAL, TRAIN = "eval", "train"


class TrainModeNotRestored(Rule):
    info = RuleInfo(
        "TL308", "train-mode-not-restored", "error",
        "A training loop that puts the model in eval mode (an evaluation inside it) and never back "
        "to train mode: later steps train without dropout and with frozen BatchNorm statistics.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        training = [loop for loop in ctx.loops if _trains(ctx, loop)]
        if not training:
            return
        switched = _train_mode_shapes(ctx)
        if not switched:
            return
        layered = _mode_dependent_shapes(ctx)
        reported: set[int] = set()
        # the innermost loop first: an evaluation every N batches is reported at the batch loop
        for loop in sorted(training, key=_depth, reverse=True):
            for event, site, model in _left_in_eval(ctx, loop, switched):
                own = _shape(ctx, event.receiver, {})  # as its function writes it (`self.encoder`)
                if id(event.node) in reported or not (own in layered or _has_modes(ctx, ctx.value(event.receiver))):
                    continue
                reported.add(id(event.node))
                ctx.report(
                    self.info, site.node,
                    f"`{ctx.code(site.node, 50)}` puts `{model}` in eval mode and nothing in this loop puts it "
                    "back: every later training step runs with dropout off and BatchNorm using (and no "
                    f"longer updating) its running statistics. Call `{model}.train()` at the start of each "
                    "training step or epoch, or after the evaluation",
                    related=() if site is event else ((event.node, f"`{model}` is put in eval mode here"),),
                )


def _trains(ctx: FileContext, loop: Body) -> bool:
    kinds = {a.kind for a in actions(ctx, loop)}
    return BACKWARD in kinds and STEP in kinds


def _depth(loop: Body) -> int:
    return loop.scope.loop_depth


def _train_mode_shapes(ctx: FileContext) -> set[str]:
    """The modules the file puts in train mode somewhere (`model.train()`): the models it trains.
    A module only ever put in eval mode (a frozen teacher, an EMA copy) is not one."""
    found = set()
    for entry in ctx.timeline:
        if isinstance(entry, CallInfo) and _mode(entry) == TRAIN:
            found.add(_shape(ctx, entry.receiver, {}))
    return found


# layers whose forward differs between train and eval mode
MODE_LAYERS = re.compile(r"\b(?:Dropout\w*|AlphaDropout|\w*BatchNorm\w*|Transformer(?:Encoder|Decoder)?(?:Layer)?|"
                         r"DropPath|StochasticDepth|dropout\w*|drop_path)\b|self\.training\b")


def _mode_dependent_shapes(ctx: FileContext) -> set[str]:
    """Modules put in train or eval mode whose value shows layers that behave differently in the two."""
    return {_shape(ctx, entry.receiver, {}) for entry in ctx.timeline
            if isinstance(entry, CallInfo) and _mode(entry) and _has_modes(ctx, ctx.value(entry.receiver))}


def _has_modes(ctx: FileContext, value, depth: int = 0) -> bool:
    """Evidence that the module has dropout or batch normalisation: such a layer itself, a Hugging
    Face model, a container or class of the project's holding one. Unknown modules have none."""
    if depth > 4:
        return False
    if value.kind == "module":
        qual = value.qual or ""
        if qual.startswith("transformers."):
            return True
        if MODE_LAYERS.search(qual.rsplit(".", 1)[-1]):
            return True
        return any(_has_modes(ctx, item, depth + 1) for item in value.items)
    if value.kind == "instance" and value.cls is not None:
        return _class_has_modes(ctx, value.cls, depth)
    return False


def _class_has_modes(ctx: FileContext, info, depth: int) -> bool:
    memo = ctx.memo.setdefault("tl308_classes", {})
    if id(info) in memo:
        return memo[id(info)]
    memo[id(info)] = False  # a class holding itself
    found = any(
        any(_has_modes(ctx, value, depth + 1) for value in cls.attrs.values())
        or any(_mentions_modes(ctx, method.body) for method in cls.methods.values())
        for cls in info.lineage())
    memo[id(info)] = found
    return found


def _mentions_modes(ctx: FileContext, body) -> bool:
    """A method of this file whose code makes or uses a layer that depends on the mode."""
    node = getattr(body, "node", None)
    return isinstance(node, cst.FunctionDef) and body.origin in ("", ctx.path) \
        and MODE_LAYERS.search(ctx.exact_code(node)) is not None


def _mode(call: CallInfo) -> str | None:
    if call.form != "method" or call.receiver is None:
        return None
    if call.name == "eval" and not call.args and not call.kwargs:
        return EVAL
    if call.name == "train":
        argument = call.args[0] if call.args else call.kwargs.get("mode")
        if isinstance(argument, cst.Name) and argument.value == "False":
            return EVAL
        return TRAIN
    return None


def _left_in_eval(ctx: FileContext, loop: Body, switched: set[str]) -> Iterator[tuple[CallInfo, CallInfo, str]]:
    """Each eval() of a trained model (one the file puts in train mode somewhere, named as the loop or
    as the eval's own function names it) in one iteration of ``loop`` after which, going round the
    loop, a backward comes before any train() of that model (compared in the loop's terms); with the
    call in the loop leading to it."""
    events = list(_events(ctx, loop))
    for index, (kind, model, call, site) in enumerate(events):
        if kind != EVAL or (model not in switched and _shape(ctx, call.receiver, {}) not in switched):
            continue
        ahead = events[index + 1:] + events[:index]
        for other_kind, other_model, _, other_site in ahead:
            if other_kind == TRAIN and other_model == model:
                break
            # a backward the evaluating call itself may run (a shared train-or-test routine) is not training
            if other_kind == BACKWARD and other_site is not site:
                yield call, site, model
                break


def _events(ctx: FileContext, loop: Body) -> Iterator[tuple[str, str, CallInfo, CallInfo]]:
    """(kind, model, call, the call in the loop's own body that leads to it) in the order one
    iteration runs them, through the functions it calls, with each function's parameters read
    as the arguments its call passes."""
    budget = [WALK_BUDGET]
    yield from _expand(ctx, loop, {}, None, {id(loop)}, budget, False)


def _expand(ctx, body: Body, mapping: dict[str, str], site, seen: set[int], budget: list[int], quiet: bool):
    """``quiet``: called from under torch.no_grad(), where a backward does not run."""
    for entry in body.entries:
        if isinstance(entry, Body):
            yield from _expand(ctx, entry, mapping, site, seen, budget, quiet)
            continue
        budget[0] -= 1
        if not isinstance(entry, CallInfo):
            continue
        here = site if site is not None else entry
        mode = _mode(entry)
        if mode is not None:
            yield mode, _shape(ctx, entry.receiver, mapping), entry, here
            continue
        if classify(ctx, entry) == BACKWARD and not (quiet or entry.scope.no_grad):
            yield BACKWARD, "", entry, here
        callee = getattr(entry.callee, "body", None)
        if isinstance(callee, Body) and _restores_mode(ctx, callee.node):
            continue  # a context manager that puts the mode back when the `with` block ends
        if isinstance(callee, Body) and id(callee) not in seen and budget[0] > 0:
            seen.add(id(callee))
            yield from _expand(ctx, callee, _passed(ctx, entry, callee, mapping), here, seen, budget,
                               quiet or entry.scope.no_grad)
            seen.discard(id(callee))


def _restores_mode(ctx: FileContext, function) -> bool:
    """A generator (a `@contextmanager`) that yields and sets the mode again: `.train(...)` or
    `m.training = was_training` (in its `finally:` or after the `yield`)."""
    if not isinstance(function, cst.FunctionDef):
        return False
    cache = ctx.memo.setdefault("TL308 restores", {})
    found = cache.get(id(function))
    if found is None:
        nodes = list(nodes_of(function, (cst.Yield, cst.Call, cst.Assign)))
        found = any(isinstance(n, cst.Yield) for n in nodes) and any(
            (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "train") or
            (isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "training"
                                               for t in n.targets))
            for n in nodes)
        cache[id(function)] = found
    return found


def _passed(ctx: FileContext, call: CallInfo, callee: Body, mapping: dict[str, str]) -> dict[str, str]:
    """A called function's parameter names, each read as the argument the call passes (in the
    caller's terms: through ``mapping``)."""
    node = callee.node
    if not isinstance(node, cst.FunctionDef):
        return {}
    params = [p.name.value for p in params_of(node.params)]
    found: dict[str, str] = {}
    arguments = list(call.args)
    func = call.node.func
    if params and params[0] == "self" and isinstance(func, cst.Attribute):  # `model.val_start()`: self is model
        found[params[0]] = _shape(ctx, func.value, mapping)
        params = params[1:]
    for name, argument in zip(params, arguments, strict=False):
        found[name] = _shape(ctx, argument, mapping)
    for name, argument in call.kwargs.items():
        if name in params:
            found[name] = _shape(ctx, argument, mapping)
    return found


# methods that return the module they are called on
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval",
                          "requires_grad_", "type", "xpu", "mps"})


def _shape(ctx: FileContext, node, mapping: dict[str, str]) -> str:
    """The module an expression names (`model.to(device)` names `model`), its root name read
    through ``mapping``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in _SAME_MODULE:
        node = node.func.value
    text = ctx.shape(node)
    root, dot, rest = text.partition(".")
    if root in mapping:
        return mapping[root] + dot + rest
    return text
