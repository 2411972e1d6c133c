"""TL314 dropout-ignores-eval: dropout in a module's methods that `model.eval()` does not turn off."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.grad_mode import training_branch
from torchlint.static.rules.base import Rule

FUNCTIONS = frozenset({"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"})
LAYERS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})


class DropoutIgnoresEval(Rule):
    info = RuleInfo(
        "TL314", "dropout-ignores-eval", "warning",
        "F.dropout without training=self.training, or an nn.Dropout built inside forward, stays on after model.eval().",
        tags=("training-loop", "evaluation"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if not ctx.enclosing or not ctx.classes or not ctx.classes[-1].is_module or \
                ctx.enclosing[-1].name.value == "__init__":
            return  # only a module's own methods: model.eval() is what should turn dropout off there
        qual = call.qual or ""
        if call.form == "function" and qual.startswith("torch.nn.functional.") and call.name in FUNCTIONS:
            if "training" in call.kwargs or len(call.args) >= 3 or _off(ctx, call) or training_branch(call.scope):
                return
            reported = ctx.memo.setdefault(self.info.code, set())
            if id(ctx.enclosing[-1]) in reported:
                return  # one finding per method: the same omission repeated is one fix
            reported.add(id(ctx.enclosing[-1]))
            ctx.report(
                self.info, call.node,
                f"`{ctx.code(call.node, 50)}` has no `training=`: F.{call.name} defaults to training=True, so it "
                "drops activations after `model.eval()` too, and every evaluation and prediction is noisy. Pass "
                "`training=self.training` (or use an nn.Dropout built in __init__)",
            )
        elif isinstance(call.node.func, cst.Call):
            layer = ctx.qualify(call.node.func.func) or ""
            if layer.startswith("torch.nn.") and layer.rsplit(".", 1)[-1] in LAYERS and \
                    not training_branch(call.scope):
                ctx.report(
                    self.info, call.node,
                    f"`{ctx.code(call.node, 50)}` builds a new {layer.rsplit('.', 1)[-1]} at every call: it is no "
                    "child of the model, so `model.eval()` never reaches it and it keeps dropping activations in "
                    f"evaluation. Build it once in __init__ (`self.drop = nn.{layer.rsplit('.', 1)[-1]}(...)`) "
                    "and call that",
                )


def _off(ctx: FileContext, call: CallInfo) -> bool:
    """`p=0` written as a constant, or a parameter of the method whose default is 0 (`noise_dropout=0.`,
    an option a caller turns on for sampling): by default the call drops nothing."""
    p = call.param(1, "p")
    if p is None:
        return False
    if ctx.value(p).const == 0:
        return True
    if isinstance(p, cst.Name):
        for param in params_of(ctx.enclosing[-1].params):
            if param.name.value == p.value and param.default is not None:
                return ctx.value(param.default).const == 0 or \
                    (isinstance(param.default, (cst.Float, cst.Integer)) and float(param.default.value) == 0)
    return False
