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
from torchlint.static.interpret.frames import ClassInfo
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.seeding import TORCH_RANDOM

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
    return any(isinstance(entry, CallInfo) and _call_draws(entry, depth) for entry in body.walk(expand=False))


def _call_draws(call: CallInfo, depth: int) -> bool:
    name = call.name
    if call.form == "function":
        root = (call.qual or "").split(".", 1)[0]
        if root == "torch":
            return name in RANDOM_INIT or name in TORCH_RANDOM or ".init." in (call.qual or "")
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
