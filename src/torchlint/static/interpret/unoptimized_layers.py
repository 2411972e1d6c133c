"""New layers of a model that its forward uses but that no optimizer was given.

`optimizer = AdamW(model.encoder.parameters())` for `model = Classifier(encoder)` whose `__init__`
builds `self.head = nn.Linear(d, k)`: the head gets gradients every step and nothing applies them,
so it keeps its random initialisation and the classifier predicts through a random projection. A
pretrained part left out on purpose (linear probing, a frozen backbone) is not this: only layers the
class builds itself from `torch.nn` (fresh weights) count, and only in files that load no weights
into anything (`load_state_dict`, `from_pretrained`, `torch.load`) and never touch that layer's
`requires_grad`.

Every optimizer of the file must take, for this model, sub-modules only (`model.encoder`), read from
the construction: `X.parameters()`, a comprehension or `filter` over it, parameter-group dicts, or a
name bound to one of these. Anything else (the whole model, an unknown list) and nothing is said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.interpret.unfreezing import is_optimizer_construction
from torchlint.static.traverse import nodes_of

# layers with weights a training run must learn (a norm layer's affine starts as the identity)
_WEIGHTED = frozenset(f"torch.nn.{name}" for name in (
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Embedding", "LSTM", "GRU", "RNN", "MultiheadAttention", "TransformerEncoder", "TransformerEncoderLayer",
    "TransformerDecoder", "TransformerDecoderLayer", "Transformer",
))
_LOADS = re.compile(r"\b(?:load_state_dict|from_pretrained|torch\.load|load_checkpoint)\b")
_DEPTH = 3


@dataclass
class UnoptimizedLayer:
    optimizer: cst.Call  # an optimizer construction given sub-modules of the model only
    part: cst.CSTNode  # the sub-module it is given (`model.encoder` in `model.encoder.parameters()`)
    model: str  # the model's code (`model`)
    layer: str  # the attribute the class builds (`head`)
    built: cst.CSTNode  # where the class builds it
    class_name: str


def unoptimized_layers(ctx: FileContext) -> list[UnoptimizedLayer]:
    source = ctx.source
    if ".parameters()" not in source or "optim" not in source or _LOADS.search(source):
        return []
    optimizers = [call for call in ctx.calls.values() if is_optimizer_construction(call.node, ctx.qualify)]
    if not optimizers:
        return []
    given: dict[str, set[str]] = {}  # model code -> sub-module attributes the optimizers take
    models: dict[str, object] = {}
    takers: dict[str, tuple] = {}  # model code -> (the first optimizer that takes its sub-modules, that part)
    for call in optimizers:
        sources = parameter_sources(ctx, call.node.args[0].value, _DEPTH) if call.node.args else None
        if not sources:
            return []  # a parameter list read from something else: unknown
        for node in sources:
            code = dotted_code(node)
            if code is None:
                return []
            root, _, rest = code.partition(".")
            if not rest:
                given.setdefault(root, set()).add("")  # the whole model
                continue
            given.setdefault(root, set()).add(rest.split(".", 1)[0])
            models.setdefault(root, _root_value(ctx, node))
            takers.setdefault(root, (call.node, node))
    found = []
    for model, attributes in given.items():
        if "" in attributes:
            continue
        value = models.get(model)
        cls = getattr(value, "cls", None)
        if cls is None or getattr(value, "kind", None) != "instance":
            continue
        forward = _method_source(ctx, cls, "forward")
        if forward is None or "no_grad" in forward:
            continue
        for name, attr in cls.attrs.items():
            if name in attributes or attr.kind != "module" or attr.qual not in _WEIGHTED:
                continue
            if not re.search(rf"\bself\.{re.escape(name)}\b", forward):
                continue
            if re.search(rf"\.{re.escape(name)}\b[^\n]*requires_grad|requires_grad[^\n]*\.{re.escape(name)}\b", source):
                continue
            found.append(UnoptimizedLayer(*takers[model], model, name, attr.node, cls.name))
    return found


def parameter_sources(ctx: FileContext, node, depth: int) -> list | None:
    """The `X` of every `X.parameters()` a parameter argument is made of; None when it is something else."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters" \
            and not node.args:
        return [node.func.value]
    if isinstance(node, (cst.ListComp, cst.GeneratorExp)) and node.for_in.inner_for_in is None:
        return parameter_sources(ctx, node.for_in.iter, depth)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("filter", "list") \
            and node.args:
        return parameter_sources(ctx, node.args[-1].value, depth)
    if isinstance(node, (cst.List, cst.Tuple)) and node.elements:
        found: list = []
        for element in node.elements:
            inner = _group_params(element.value)
            part = parameter_sources(ctx, inner, depth) if inner is not None else None
            if part is None:
                return None
            found.extend(part)
        return found
    if isinstance(node, cst.Name) and depth > 0:
        made = ctx.value(node).node
        if not isinstance(made, cst.BaseExpression) or made is node:
            made = _only_assignment(ctx, node.value)
        if made is not None:
            return parameter_sources(ctx, made, depth - 1)
    return None


def _only_assignment(ctx: FileContext, name: str):
    """The value of the file's one plain assignment to ``name`` (a comprehension the walker keeps no node
    for); None when it is assigned more than once, or never."""
    assignments = ctx.memo.get("TL310 assignments")
    if assignments is None:
        assignments = ctx.memo["TL310 assignments"] = {}
        for assign in nodes_of(ctx.module, (cst.Assign,)):
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    assignments.setdefault(target.target.value, []).append(assign.value)
    found = assignments.get(name, [])
    return found[0] if len(found) == 1 else None


def _group_params(node):
    """`{"params": X, ...}` -> X; any other element: itself."""
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) and \
                    element.key.evaluated_value == "params":
                return element.value
        return None
    return node


def _root_value(ctx: FileContext, node):
    """The model the root name holds: its value here, else the one class every instance of that name
    in the file has (inside a comprehension the walker records no values)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    value = ctx.value(node)
    if value.cls is not None or not isinstance(node, cst.Name):
        return value
    classes = {}
    for name in nodes_of(ctx.module, (cst.Name,)):
        if name.value == node.value:
            seen = ctx.values.get(id(name))
            if seen is not None and seen.kind == "instance" and seen.cls is not None:
                classes[id(seen.cls)] = seen
    return next(iter(classes.values())) if len(classes) == 1 else value


def _method_source(ctx: FileContext, cls, name: str) -> str | None:
    method = cls.find("methods", name)
    node = getattr(method, "node", None)
    if not isinstance(node, cst.FunctionDef):
        node = getattr(getattr(method, "body", None), "node", None)
    if not isinstance(node, cst.FunctionDef):
        return None
    return ctx.code(node, 100_000)
