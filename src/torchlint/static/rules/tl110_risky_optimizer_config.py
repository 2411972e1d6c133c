"""TL110 risky-optimizer-config: eps=0 / fp16-underflowing eps, learning rates far too high."""

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
        "Adaptive optimizers with eps=0 (or below float16's range) divide by zero; huge learning rates diverge.",
        tags=("numerics", "optimizer"),
        options={"max-lr-adaptive": 0.01, "max-lr-sgd": 1.0},
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        qual = call.qual or ""
        if call.form != "function" or not qual.startswith("torch.optim."):
            return
        name = qual.rsplit(".", 1)[-1]
        if name not in ADAPTIVE and name != "SGD":
            return
        problems = []
        lr = ctx.value(call.param(1, "lr"))
        limit = ctx.option(self.info, "max-lr-sgd" if name == "SGD" else "max-lr-adaptive")
        if lr.op == "const" and lr.const is not None and lr.const > limit:
            problems.append(
                f"lr={lr.const:g} is far above {name}'s usual range (limit {limit:g}): updates "
                "overshoot and diverge to NaN; lower it or add warm-up"
            )
        if name in ADAPTIVE:
            problems.extend(_eps_problems(ctx, call, name))
        if problems:
            ctx.report(self.info, call.node, f"`{name}(...)`: " + "; ".join(problems))


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
