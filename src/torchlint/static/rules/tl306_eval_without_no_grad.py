"""TL306 eval-without-no-grad: an evaluation loop that builds autograd graphs."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOSS_OPS
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import BACKWARD, GRAD, STEP, actions, loop_header
from torchlint.static.interpret.scopes import Body

EVAL_LOADER = re.compile(r"(val|valid|validation|test|eval|dev)(_|loader|data|set|\b)", re.I)


class EvalWithoutNoGrad(Rule):
    info = RuleInfo(
        "TL306", "eval-without-no-grad", "warning",
        "An evaluation loop that runs the model outside torch.no_grad()/inference_mode() builds graphs for nothing.",
        tags=("training-loop", "memory", "performance"),
    )

    def on_end(self, ctx: FileContext) -> None:
        for body in [ctx.module_body, *ctx.functions]:
            if body is None:
                continue
            evaluated: set[str] = set()
            for entry in body.entries:
                if isinstance(entry, CallInfo) and entry.form == "method" and entry.name == "eval" \
                        and not entry.args and entry.receiver is not None:
                    evaluated.add(ctx.shape(entry.receiver))
                elif isinstance(entry, Body) and entry.kind == "loop":
                    self._check_loop(ctx, entry, evaluated)

    def _check_loop(self, ctx: FileContext, loop: Body, evaluated: set[str]) -> None:
        if loop.scope.no_grad:
            return
        kinds = {a.kind for a in actions(ctx, loop)}
        if BACKWARD in kinds or STEP in kinds or GRAD in kinds:
            return  # the loop uses its graphs: training, or gradients of the input (an adversarial attack)
        iterates_eval_data = isinstance(loop.node, cst.For) and EVAL_LOADER.search(ctx.shape(loop.node.iter))
        helper_evaluated: set[tuple[int, str]] = set()  # (function, name) put in eval mode by a called helper
        for entry in loop.walk():
            if not isinstance(entry, CallInfo) or entry.scope.no_grad:
                continue
            callee = ctx.shape(entry.node.func)
            here = entry.scope.function
            if entry.form == "method" and entry.name == "eval" and not entry.args and _dotted(entry.receiver) \
                    and here != loop.scope.function:
                # `validation_step(model, x)` doing `model.eval(); return model(x)`: the helper evaluates
                helper_evaluated.add((here, ctx.shape(entry.receiver)))
                continue
            model_call = callee in evaluated or ((here, callee) in helper_evaluated and _dotted(entry.node.func)) or (
                iterates_eval_data and entry.callee.kind in ("instance", "module") and entry.op not in LOSS_OPS)
            if model_call:
                reason = f"`{callee}` is in eval mode" if callee in evaluated else \
                    f"`{callee}` is put in eval mode by `{here}()`" if (here, callee) in helper_evaluated else \
                    "it iterates evaluation data"
                ctx.report(
                    self.info, loop_header(loop),
                    f"evaluation loop ({reason}) calls `{callee}(...)` outside torch.no_grad(): every batch "
                    "builds an autograd graph that is never used, costing memory and time. Wrap the loop in "
                    "`with torch.inference_mode():`",
                )
                return


def _dotted(node) -> bool:
    """`model`, `self.net`: a name, not a call's result (`ckpt.fuse().eval()`)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)
