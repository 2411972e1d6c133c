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
            position = FILLS.get(call.name) if call.form == "method" else None
            if position is None or call.receiver is None or len(call.args) <= position:
                continue
            number = _number(ctx, call.args[position])
            if number is None or not math.isfinite(number) or abs(number) <= HALF_MAX:
                continue
            target = ctx.value(call.receiver)
            if target.half or (target.unbounded and target.op in ("matmul", "div", "mul")):
                found.append((call, number, target))
        if not found:
            return
        evidence = None
        if not all(target.half for _, _, target in found):
            evidence = project_fp16_evidence(ctx)
        for call, number, target in found:
            if target.half:
                why = f"`{ctx.code(call.receiver, 30)}` is {target.desc or 'a tensor'} in float16"
                related = ()
            elif evidence is not None:
                node, where = evidence
                why = (f"`{ctx.code(call.receiver, 30)}` is {target.desc or 'an activation'}, float16 where "
                       f"the project autocasts to float16")
                related = ((node, "models run in float16 here", where),) if where else ((node, "models run in float16 here"),)
            else:
                continue
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node, 60)}`: {why}, and {ctx.code(call.args[FILLS[call.name]])} is beyond float16's range (±65504): "
                "the fill raises \"value cannot be converted to type at::Half without overflow\" (or gives "
                "inf, and NaN after the softmax). Use torch.finfo(x.dtype).min, or -1e4",
                related=related,
            )
