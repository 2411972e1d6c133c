"""Whether building an object draws from torch's generator: a layer's initial weights.

TL505 asks it of the model a file builds before seeding: `DropPath(0.1)`, a data transform with a
`forward`, or a loss module draw nothing when they are made, so seeding after them is right. The
answer is False only with evidence: every call in the constructors of the class and of its project
bases is known not to draw (builtins, the standard library, torch calls other than random ones and
randomly initialised layers, the project's own code that does the same), and its other bases are
`nn.Module`-like. An unknown call or base counts as a draw.
"""

from __future__ import annotations

import builtins

import libcst as cst

from torchlint.static.interpret.context import CallInfo
from torchlint.static.interpret.frames import ClassInfo, dotted
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.seeding import TORCH_RANDOM
from torchlint.static.traverse import nodes_of

# layers whose constructor draws their initial weights from torch's generator
RANDOM_INIT = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding", "EmbeddingBag", "RNN", "LSTM",
    "GRU", "RNNCell", "LSTMCell", "GRUCell", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer",
    "MultiheadAttention",
})
NEUTRAL_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "abc.ABC", "typing.Generic"})
QUIET_MODULES = frozenset({"abc", "collections", "copy", "dataclasses", "enum", "functools", "inspect", "itertools",
                           "logging", "math", "numbers", "operator", "os", "re", "sys", "typing", "warnings"})
# methods that (re)initialise a module's weights
INIT_METHODS = frozenset({"apply", "reset_parameters", "_reset_parameters", "init_weights", "_init_weights"})
BUILTIN_NAMES = frozenset(dir(builtins))
DEPTH = 4
# layers whose only random draws are a weight and a bias, and what overwrites a tensor with a constant
CONSTANT_FILLABLE = frozenset({"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                               "ConvTranspose2d", "ConvTranspose3d"})
CONSTANT_FILLS = frozenset({"zero_", "fill_"})
CONSTANT_INITS = frozenset({"zeros_", "ones_", "constant_"})  # torch.nn.init


def draws_when_built(cls: ClassInfo, depth: int = 0) -> bool:
    """Building an instance of ``cls`` may draw from torch's generator (True unless shown not to)."""
    if depth > DEPTH:
        return True
    for info in cls.lineage():
        local_bases = sum(1 for base in info.bases if not base)
        if local_bases > len(info.parents):
            return True  # a base defined somewhere the analysis does not see
        for base in info.bases:
            if base and base not in NEUTRAL_BASES and (
                    not base.startswith("torch.nn.") or base.rsplit(".", 1)[-1] in RANDOM_INIT):
                return True
        init = info.methods.get("__init__")
        if init is not None and (not isinstance(init.body, Body) or _body_draws(init.body, depth)):
            return True
    return False


def _body_draws(body: Body, depth: int) -> bool:
    overwritten = None
    for entry in body.walk(expand=False):
        if not isinstance(entry, CallInfo) or not _call_draws(entry, depth):
            continue
        if entry.form == "function" and entry.name in CONSTANT_FILLABLE and isinstance(body.node, cst.FunctionDef):
            if overwritten is None:
                overwritten = _constant_layers(body.node)
            if id(entry.node) in overwritten:
                continue  # `self.linear = nn.Linear(...)`, then its weight and bias zeroed: no draw left
        return True
    return False


def _constant_layers(function: cst.FunctionDef) -> set[int]:
    """Layer constructions in ``function`` (`self.x = nn.Linear(...)`) whose weight and bias it then
    fills with constants (`self.x.weight.detach().zero_()`, `nn.init.zeros_(self.x.bias)`)."""
    filled: set[str] = set()
    for call in nodes_of(function.body, (cst.Call,)):
        func = call.func
        target = None
        if isinstance(func, cst.Attribute) and func.attr.value in CONSTANT_FILLS:
            target = func.value
        elif isinstance(func, cst.Attribute) and func.attr.value in CONSTANT_INITS and call.args:
            target = call.args[0].value
        while isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute) and \
                target.func.attr.value in ("detach", "data"):
            target = target.func.value
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            target = target.value
        if isinstance(target, cst.Attribute) and target.attr.value in ("weight", "bias"):
            filled.add(f"{dotted(target.value)}.{target.attr.value}")
    found: set[int] = set()
    for assign in nodes_of(function.body, (cst.Assign,)):
        if len(assign.targets) != 1 or not isinstance(assign.value, cst.Call):
            continue
        name = dotted(assign.targets[0].target)
        no_bias = any(arg.keyword is not None and arg.keyword.value == "bias" and
                      isinstance(arg.value, cst.Name) and arg.value.value == "False" for arg in assign.value.args)
        if name and f"{name}.weight" in filled and (no_bias or f"{name}.bias" in filled):
            found.add(id(assign.value))
    return found


def _call_draws(call: CallInfo, depth: int) -> bool:
    name = call.name
    if call.form == "function":
        root = (call.qual or "").split(".", 1)[0]
        if root == "torch":
            return name in RANDOM_INIT or name in TORCH_RANDOM or (
                ".init." in (call.qual or "") and name not in CONSTANT_INITS)
        return root not in QUIET_MODULES
    if call.form == "method":
        return name in TORCH_RANDOM or name in INIT_METHODS
    callee = call.callee
    if callee.kind == "class" and callee.cls is not None:
        return draws_when_built(callee.cls, depth + 1)
    if isinstance(callee.body, Body):
        return depth >= DEPTH or _body_draws(callee.body, depth + 1)
    func = call.node.func
    return not (isinstance(func, cst.Name) and func.value in BUILTIN_NAMES and not callee.kind)
