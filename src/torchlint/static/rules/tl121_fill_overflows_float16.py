"""TL121 fill-overflows-float16: a constant beyond float16's range written into a float16 activation."""

from __future__ import annotations

import math

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.mixed_precision import project_fp16_evidence
from torchlint.static.rules.base import Rule

HALF_MAX = 65504.0
FILLS = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0}  # method -> position of the value


def _number(ctx: FileContext, node) -> float | None:
    """`-1e10`, `float("-1e20")`: the constant written, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "float" and \
            len(node.args) == 1 and isinstance(node.args[0].value, cst.SimpleString):
        try:
            return float(node.args[0].value.evaluated_value)
        except (TypeError, ValueError):
            return None
    value = ctx.value(node)
    return value.const if value.op == "const" else None


def _written(call: CallInfo):
    """(the float16 candidate, the constant written into it) of `x.masked_fill(m, c)`, `x.fill_(c)` and
    `torch.where(m, x, c)` / `torch.where(m, c, x)` (a Python number takes the tensor's dtype); else None."""
    if call.form == "method":
        position = FILLS.get(call.name)
        if position is None or call.receiver is None or len(call.args) <= position:
            return None
        return call.receiver, call.args[position]
    if call.qual == "torch.where" and len(call.args) == 3:
        tensor, constant = call.args[1], call.args[2]
        if isinstance(tensor, (cst.Float, cst.Integer, cst.UnaryOperation)):
            tensor, constant = constant, tensor
        return tensor, constant
    return None


class FillOverflowsFloat16(Rule):
    info = RuleInfo(
        "TL121", "fill-overflows-float16", "error",
        "masked_fill/fill_ with a constant beyond float16's range (±65504) on a float16 activation: "
        "a RuntimeError, or inf and NaN after the softmax.",
        tags=("numerics", "mixed-precision", "nan"),
    )

    def on_end(self, ctx: FileContext) -> None:
        found = []
        for call in ctx.calls.values():
            written = _written(call)
            if written is None:
                continue
            receiver, constant = written
            number = _number(ctx, constant)
            if number is None or not math.isfinite(number) or abs(number) <= HALF_MAX:
                continue
            target = ctx.value(receiver)
            if target.half or (target.unbounded and target.op in ("matmul", "div", "mul")):
                found.append((call, receiver, constant, target))
        if not found:
            return
        evidence = None
        if not all(target.half for *_, target in found):
            evidence = project_fp16_evidence(ctx)
        for call, receiver, constant, target in found:
            if target.half:
                why = f"`{ctx.code(receiver, 30)}` is {target.desc or 'a tensor'} in float16"
                related = ()
            elif evidence is not None:
                node, where = evidence
                why = (f"`{ctx.code(receiver, 30)}` is {target.desc or 'an activation'}, float16 where "
                       f"the project autocasts to float16")
                related = ((node, "models run in float16 here", where),) if where else ((node, "models run in float16 here"),)
            else:
                continue
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node, 60)}`: {why}, and {ctx.code(constant)} is beyond float16's range (±65504): "
                "the fill raises \"value cannot be converted to type at::Half without overflow\" (or gives "
                "inf, and NaN after the softmax). Use torch.finfo(x.dtype).min, or -1e4",
                related=related,
            )
