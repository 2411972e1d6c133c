"""Which mode (train or eval) a training loop leaves each model in, read along one iteration.

The events of one iteration of a loop, through the functions it calls (each function's parameters
read as what its call passes): `model.train()` / `model.eval()`, a backward, and a forward of a model
made under no_grad inside a loop of a called function (an evaluation over a data set). TL308 reads
them for an evaluation that leaves the model in eval mode, TL312 for one that runs in train mode.
Only modules shown to hold layers that depend on the mode (dropout, batch normalisation) matter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from torchlint.static.interpret import training
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.model_calls import is_model_call
from torchlint.static.interpret.scopes import WALK_BUDGET, Body
from torchlint.static.interpret.training import BACKWARD, classify
from torchlint.static.traverse import nodes_of

EVAL, TRAIN, FORWARD = "eval", "train", "forward"


def trains(ctx: FileContext, loop: Body) -> bool:
    """A training loop: one iteration runs a backward and an optimizer step."""
    return training.trains({a.kind for a in training.loop_actions(ctx, loop)})


def mode_shapes(ctx: FileContext, mode: str) -> set[str]:
    """The modules the file puts in ``mode`` somewhere (`model.train()`, `model.eval()`). Those put in
    train mode are the models it trains: a frozen teacher or an EMA copy is only put in eval mode."""
    return {module_shape(ctx, entry.receiver, {}) for entry in ctx.timeline
            if isinstance(entry, CallInfo) and mode_of(entry) == mode}


# layers whose forward differs between train and eval mode
MODE_LAYERS = re.compile(r"\b(?:Dropout\w*|AlphaDropout|\w*BatchNorm\w*|Transformer(?:Encoder|Decoder)?(?:Layer)?|"
                         r"DropPath|StochasticDepth|dropout\w*|drop_path)\b|self\.training\b")


def mode_dependent_shapes(ctx: FileContext) -> set[str]:
    """Modules put in train or eval mode whose value shows layers that behave differently in the two."""
    return {module_shape(ctx, entry.receiver, {}) for entry in ctx.timeline
            if isinstance(entry, CallInfo) and mode_of(entry) and has_modes(ctx, ctx.value(entry.receiver))}


def has_modes(ctx: FileContext, value, depth: int = 0) -> bool:
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
        return any(has_modes(ctx, item, depth + 1) for item in value.items)
    if value.kind == "instance" and value.cls is not None:
        return _class_has_modes(ctx, value.cls, depth)
    return False


def _class_has_modes(ctx: FileContext, info, depth: int) -> bool:
    memo = ctx.memo.setdefault("tl308_classes", {})
    if id(info) in memo:
        return memo[id(info)]
    memo[id(info)] = False  # a class holding itself
    found = any(
        any(has_modes(ctx, value, depth + 1) for value in cls.attrs.values())
        or any(_mentions_modes(ctx, method.body) for method in cls.methods.values())
        for cls in info.lineage())
    memo[id(info)] = found
    return found


def _mentions_modes(ctx: FileContext, body) -> bool:
    """A method of this file whose code makes or uses a layer that depends on the mode."""
    node = getattr(body, "node", None)
    return isinstance(node, cst.FunctionDef) and body.origin in ("", ctx.path) \
        and MODE_LAYERS.search(ctx.exact_code(node)) is not None


def mode_of(call: CallInfo) -> str | None:
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


def events(ctx: FileContext, loop: Body) -> Iterator[tuple[str, str, CallInfo, CallInfo]]:
    """(kind, model, call, the call in the loop's own body that leads to it) in the order one
    iteration runs them, through the functions it calls, with each function's parameters read
    as the arguments its call passes. Kinds: EVAL, TRAIN, BACKWARD, FORWARD (an evaluation's)."""
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
        mode = mode_of(entry)
        if mode is not None:
            yield mode, module_shape(ctx, entry.receiver, mapping), entry, here
            continue
        if classify(ctx, entry) == BACKWARD and not (quiet or entry.scope.no_grad):
            yield BACKWARD, "", entry, here
        if site is not None and (quiet or entry.scope.no_grad) and entry.scope.loop_depth > 0 and \
                is_model_call(ctx, entry.node):
            # a forward under no_grad in a loop of a called function: an evaluation over a data set
            yield FORWARD, module_shape(ctx, entry.node.func, mapping), entry, here
        callee = getattr(entry.callee, "body", None)
        if isinstance(callee, Body) and restores_mode(ctx, callee.node):
            continue  # a context manager that puts the mode back when the `with` block ends
        if isinstance(callee, Body) and id(callee) not in seen and budget[0] > 0:
            seen.add(id(callee))
            yield from _expand(ctx, callee, _passed(ctx, entry, callee, mapping), here, seen, budget,
                               quiet or entry.scope.no_grad)
            seen.discard(id(callee))


def restores_mode(ctx: FileContext, function) -> bool:
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
        found[params[0]] = module_shape(ctx, func.value, mapping)
        params = params[1:]
    for name, argument in zip(params, arguments, strict=False):
        found[name] = module_shape(ctx, argument, mapping)
    for name, argument in call.kwargs.items():
        if name in params:
            found[name] = module_shape(ctx, argument, mapping)
    return found


# methods that return the module they are called on
SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval",
                          "requires_grad_", "type", "xpu", "mps"})


def module_shape(ctx: FileContext, node, mapping: dict[str, str]) -> str:
    """The module an expression names (`model.to(device)` names `model`), its root name read
    through ``mapping``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value in SAME_MODULE:
        node = node.func.value
    text = ctx.shape(node)
    root, dot, rest = text.partition(".")
    if root in mapping:
        return mapping[root] + dot + rest
    return text
