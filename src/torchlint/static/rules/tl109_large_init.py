"""TL109 large-init: parameters initialised to large values."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.grad_mode import never_differentiated
from torchlint.static.rules.base import Rule

# init function -> (positions of the numbers in the function form, their names, what they mean)
_INIT = {
    "uniform_": ((1, "a"), (2, "b")),
    "normal_": ((2, "std"),),
    "trunc_normal_": ((2, "std"),),
    "constant_": ((1, "val"),),
    "fill_": ((1, "value"),),
}
_METHOD_NAMES = {"uniform_": ((1, "from"), (2, "to")), "normal_": ((2, "std"),), "fill_": ((1, "value"),)}


class LargeInit(Rule):
    info = RuleInfo(
        "TL109", "large-init", "warning",
        "Parameters initialised to large values make activations and gradients explode.",
        tags=("numerics", "init"),
        options={"uniform-bound": 1.0, "normal-std": 1.0, "constant": 1.0},
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        qual = call.qual or ""
        name = qual.rsplit(".", 1)[-1]
        if call.form == "function" and qual.startswith("torch.nn.init.") and name in _INIT:
            slots = _INIT[name]
        elif call.form == "method" and name in _METHOD_NAMES and ctx.value(call.receiver).kind == "param":
            slots = _METHOD_NAMES[name]
        else:
            return
        target = call.operand if call.form == "method" else call.param(0, "tensor")
        if _is_bias(target):
            return  # a bias is added, not multiplied: a focal-loss prior `constant_(bias, -2.19)` compounds nothing
        if name in ("constant_", "fill_") and _standalone(ctx, target):
            return  # SSD's L2Norm scale `constant_(self.rescale_factors, 20)`: one learned gain, applied once
        numbers = []
        for position, keyword in slots:
            value = ctx.value(call.param(position, keyword))
            if value.op == "const" and value.const is not None:
                numbers.append(abs(value.const))
        if not numbers:
            return
        largest = max(numbers)
        if name == "uniform_":
            limit, option, over = ctx.option(self.info, "uniform-bound"), "uniform-bound", largest > ctx.option(self.info, "uniform-bound")
        elif name in ("normal_", "trunc_normal_"):
            # std 1 is PyTorch's own default for embeddings and learned query tokens; for a weight
            # matrix it multiplies activations by ~sqrt(fan_in) per layer.
            limit = ctx.option(self.info, "normal-std")
            matrix = ctx.value(target).qual == "matrix"
            option, over = "normal-std", largest >= limit if matrix else largest > limit
        else:
            limit, option, over = ctx.option(self.info, "constant"), "constant", largest > ctx.option(self.info, "constant")
        if not over:
            return
        ctx.memo.setdefault(self.info.code, []).append((
            call.node,
            f"`{ctx.code(call.node)}` initialises parameters at magnitude {largest:g} ({option} limit "
            f"{limit:g}); each layer multiplies activations and gradients by it until they overflow. "
            "Use nn.init.kaiming_*/xavier_* or a small std",
        ))

    def on_end(self, ctx: FileContext) -> None:
        found = ctx.memo.get(self.info.code, ())
        if not found or never_differentiated(ctx):
            return  # a notebook that trains nothing only shows the initialised values
        for node, message in found:
            ctx.report(self.info, node, message)


def _is_bias(target) -> bool:
    """`layer.bias`, `layer.bias.data`."""
    while isinstance(target, cst.Attribute) and target.attr.value == "data":
        target = target.value
    return isinstance(target, cst.Attribute) and target.attr.value == "bias"


def _standalone(ctx: FileContext, target) -> bool:
    """`self.scale = nn.Parameter(...)`, through `.data`: a tensor of its own, not a layer's weight."""
    while isinstance(target, cst.Attribute) and target.attr.value == "data":
        target = target.value
    return ctx.value(target).qual == "standalone"
