"""TL110 risky-optimizer-config: an adaptive optimizer whose eps is 0 or rounds to 0 in float16.

Besides `torch.optim.Adam(model.parameters())` on a `.half()` model, two frameworks build the
optimizer for the user: the Hugging Face `Trainer` makes AdamW with `TrainingArguments.adam_epsilon`
(1e-8 unless given), and Lightning's `precision="16-true"` keeps the parameters in float16 for the
optimizer that the module's `configure_optimizers` returns.
"""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.expressions import string_key
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.facts.values import literal_number
from torchlint.static.rules.base import Rule
from torchlint.static.torch_support import of_file

ADAPTIVE = frozenset({"Adam", "AdamW", "RMSprop", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta", "SparseAdam"})
_DEFAULT_EPS = {"Adagrad": 1e-10, "Adadelta": 1e-6}
FLOAT16_TINY = 5.96e-8  # smallest positive float16 (subnormal)


# transformers' Trainer defaults to optim="adamw_torch_fused" on this PyTorch and later
FUSED_DEFAULT = (2, 8)


class RiskyOptimizerConfig(Rule):
    info = RuleInfo(
        "TL110", "risky-optimizer-config", "warning",
        "An adaptive optimizer with eps=0, or an eps float16 parameters cannot hold, divides by zero.",
        tags=("numerics", "optimizer"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.name == "TrainingArguments":
            ctx.memo.setdefault("tl110_arguments", []).append(call)
        elif call.name == "Trainer" and (call.qual or "").startswith(("lightning.", "pytorch_lightning.")) \
                and string_key(call.kwargs.get("precision")) == "16-true":
            ctx.memo.setdefault("tl110_lightning", []).append(call)
        elif _is_hf_trainer(ctx, call):
            self._hf_trainer(ctx, call)
        elif call.name == "fit":
            self._lightning_fit(ctx, call)
        name = optimizer_name(call)
        if name not in ADAPTIVE:
            return
        problems = _eps_problems(ctx, call, name)
        if problems:
            ctx.report(self.info, call.node, f"`{name}(...)`: " + "; ".join(problems))


    def _hf_trainer(self, ctx: FileContext, call: CallInfo) -> None:
        """`Trainer(model=<float16 model>, args=TrainingArguments(...))` with the default adam_epsilon."""
        model = call.param(0, "model")
        loaded = ctx.value(model) if model is not None else None
        if loaded is None or not loaded.half or loaded.kind:
            return
        arguments = _training_arguments(ctx, call, call.param(1, "args"))
        if arguments is None or "optim" in arguments.kwargs:
            return  # another optimizer than the default AdamW: its own eps rules
        support = of_file(ctx)
        if support is not None and not support.before(*FUSED_DEFAULT):
            return  # the default is the fused AdamW, whose float32 math keeps eps (measured: no NaN)
        eps = arguments.kwargs.get("adam_epsilon")
        value = 1e-8 if eps is None else ctx.value(eps).const
        if value is None or value >= FLOAT16_TINY:
            return
        made = loaded.node
        ctx.report(
            self.info, arguments.node,
            f"the Trainer builds AdamW with adam_epsilon={value:g} for `{ctx.code(model, 30)}`, whose parameters "
            f"are float16: the eps rounds to 0 (float16's smallest value is {FLOAT16_TINY:g}) and the update "
            "divides by zero, so parameters turn NaN; pass adam_epsilon=1e-4 (or load the model in float32/"
            "bfloat16, or train adapters in float32)",
            related=((made, "the model is loaded in float16 here"),) if made is not None else (),
        )

    def _lightning_fit(self, ctx: FileContext, call: CallInfo) -> None:
        """`Trainer(precision="16-true").fit(model)` where the module's optimizer has eps < float16's tiny."""
        precision = _lightning_true_half(ctx, call)
        argument = call.args[0] if call.args else call.kwargs.get("model")
        module = ctx.value(argument) if argument is not None else None
        if precision is None or module is None or module.kind != "instance" or module.cls is None:
            return
        method = module.cls.methods.get("configure_optimizers")
        body = getattr(method, "body", None)
        if body is None:
            return
        for entry in body.walk():
            if not isinstance(entry, CallInfo) or optimizer_name(entry) not in ADAPTIVE:
                continue
            name = optimizer_name(entry)
            eps = entry.kwargs.get("eps")
            value = _DEFAULT_EPS.get(name, 1e-8) if eps is None else _literal(eps)
            if value is None or value >= FLOAT16_TINY or value == 0:
                continue
            ctx.report(
                self.info, precision,
                f"precision=\"16-true\" keeps the parameters of `{module.cls.name}` in float16, and its "
                f"`configure_optimizers` builds `{name}` with eps={value:g}, which rounds to 0 in float16: the "
                "first update divides by zero and every parameter turns NaN; use precision=\"16-mixed\" "
                "(float32 master weights) or eps=1e-4",
                related=((entry.node, f"`{name}` is built here", body.origin),),
            )
            return


def _is_hf_trainer(ctx: FileContext, call: CallInfo) -> bool:
    """`transformers.Trainer(...)`, `trl.SFTTrainer(...)`, or `super().__init__(...)` in a subclass."""
    qual = call.qual or ""
    if qual.startswith(("transformers.", "trl.")) and qual.endswith("Trainer"):
        return True
    if call.name != "__init__" or not isinstance(call.receiver, cst.Call) or not ctx.classes:
        return False
    return any(base.startswith(("transformers.", "trl.")) and base.endswith("Trainer")
               for base in ctx.classes[-1].bases)


def _training_arguments(ctx: FileContext, trainer: CallInfo, args) -> CallInfo | None:
    """The TrainingArguments call the trainer gets: the argument itself, or the one made in the same function."""
    if args is None:
        return None
    if isinstance(args, cst.Call):
        inline = ctx.call(args)
        return inline if inline is not None and inline.name == "TrainingArguments" else None
    made = [a for a in ctx.memo.get("tl110_arguments", []) if a.scope.function == trainer.scope.function]
    direct = [a for a in made if a.node is args]
    if direct:
        return direct[0]
    return made[-1] if isinstance(args, (cst.Name, cst.Attribute)) and made else None


def _lightning_true_half(ctx: FileContext, fit: CallInfo):
    """The `precision="16-true"` argument of the Lightning Trainer this `fit` runs on (same function)."""
    for trainer in ctx.memo.get("tl110_lightning", []):
        if trainer.scope.function == fit.scope.function:
            return trainer.kwargs.get("precision")
    return None


def _literal(node) -> float | None:
    if isinstance(node, (cst.Integer, cst.Float)):
        return literal_number(node.value)
    return None


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
    """`model.parameters()` of a float16 model, also filtered: `[p for p in m.parameters() if ...]`,
    `filter(f, m.parameters())`, `list(...)`."""
    if isinstance(params, (cst.ListComp, cst.GeneratorExp)):
        # `[p for p in m.parameters() if p.requires_grad]`; not `[p.float() for p in ...]` (master copies)
        same = isinstance(params.elt, cst.Name) and isinstance(params.for_in.target, cst.Name) and \
            params.elt.value == params.for_in.target.value
        return same and _half_params(ctx, params.for_in.iter)
    if isinstance(params, cst.Call) and isinstance(params.func, cst.Name) and params.args \
            and params.func.value in ("filter", "list"):
        return _half_params(ctx, params.args[-1].value)
    if isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute):
        model = ctx.value(params.func.value)
        return model.half or model.half_params
    return False
