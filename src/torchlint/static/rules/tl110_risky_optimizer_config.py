"""TL110 risky-optimizer-config: an adaptive optimizer whose eps is 0 or rounds to 0 in float16."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule

ADAPTIVE = frozenset({"Adam", "AdamW", "RMSprop", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta", "SparseAdam"})
_DEFAULT_EPS = {"Adagrad": 1e-10, "Adadelta": 1e-6}
FLOAT16_TINY = 5.96e-8  # smallest positive float16 (subnormal)


class RiskyOptimizerConfig(Rule):
    info = RuleInfo(
        "TL110", "risky-optimizer-config", "warning",
        "An adaptive optimizer with eps=0, or an eps float16 parameters cannot hold, divides by zero.",
        tags=("numerics", "optimizer"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        name = optimizer_name(call)
        if name not in ADAPTIVE:
            return
        problems = _eps_problems(ctx, call, name)
        if problems:
            ctx.report(self.info, call.node, f"`{name}(...)`: " + "; ".join(problems))


def optimizer_name(call: CallInfo) -> str | None:
    """`Adam` for `torch.optim.Adam(...)` / `optim.Adam(...)`; None for anything else."""
    qual = call.qual or ""
    if call.form != "function" or not qual.startswith("torch.optim."):
        return None
    return qual.rsplit(".", 1)[-1]


def _eps_problems(ctx: FileContext, call: CallInfo, name: str) -> list[str]:
    eps_node = call.kwargs.get("eps")
    eps = ctx.value(eps_node)
    if eps.op == "const" and eps.const == 0:
        return ["eps=0: the update divides by sqrt(v) + eps, so a parameter with zero gradient "
                "history gives 0/0 = NaN; keep eps > 0"]
    if not _half_params(ctx, call.param(0, "params")):
        return []
    value = eps.const if eps.op == "const" else (None if eps_node is not None else _DEFAULT_EPS.get(name, 1e-8))
    if value is None or value >= FLOAT16_TINY:
        return []
    return [f"eps={value:g} on float16 parameters is below float16's smallest value ({FLOAT16_TINY:g}): "
            "it rounds to 0 and the update divides by zero; use eps >= 1e-4 or keep fp32 master "
            "weights (autocast + GradScaler)"]


def _half_params(ctx: FileContext, params) -> bool:
    if isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute):
        return ctx.value(params.func.value).half
    return False
