"""TL107 half-precision-softmax: softmax/exp computed on float16 values."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule


class HalfPrecisionSoftmax(Rule):
    info = RuleInfo(
        "TL107", "half-precision-softmax", "warning",
        "softmax/exp on float16 values overflows (exp > 65504 above x ~ 11); use bfloat16 or upcast.",
        tags=("numerics", "nan", "mixed-precision"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op not in ("softmax", "log_softmax", "exp") or call.operand is None:
            return
        value = ctx.value(call.operand)
        if not value.half or ctx.is_claimed(call.node):
            return
        if "dtype" in call.kwargs and ctx.qualify(call.kwargs["dtype"]) in ("torch.float32", "torch.float"):
            return
        if call.scope.fp16 and value.op not in ("matmul", "gram"):
            return  # autocast runs softmax/exp in float32: only a float16 product's inf reaches them
        source = f"{value.desc} in float16" if value.desc else "a float16 tensor"
        ctx.report(
            self.info, call.node,
            f"`{ctx.code(call.node)}`: `{ctx.code(call.operand, 40)}` is {source}; values above 65504 "
            "are already inf and exp overflows above ~11. Use bfloat16 autocast, or upcast "
            "(.float() / dtype=torch.float32) before the softmax",
        )
