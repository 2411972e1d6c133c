"""TL304 anomaly-detection-left-on: anomaly mode enabled for a whole run or loop."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.rules.base import Rule

ANOMALY_MANAGERS = frozenset({"torch.autograd.detect_anomaly", "torch.autograd.set_detect_anomaly",
                              "torch.autograd.anomaly_mode.detect_anomaly"})


def _true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class AnomalyDetectionLeftOn(Rule):
    info = RuleInfo(
        "TL304", "anomaly-detection-left-on", "warning",
        "Anomaly detection left on for a whole run or loop slows every step severalfold.",
        tags=("training-loop", "performance"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.form != "function" or call.scope.debug or any(on for _flag, on in call.scope.cond):
            return  # under a debug scope, or switched on by a setting (`if args.nan_detection:`): opted in
        if call.qual == "torch.autograd.set_detect_anomaly" and call.args and _true(call.args[0]):
            if ctx.statements.get(id(call.node)) is None:
                return  # used as a context manager: judged by on_with
            ctx.report(self.info, call.node,
                       f"`{ctx.code(call.node)}` turns anomaly detection on for everything that follows: each "
                       "op records a stack trace and every backward result is re-checked (1.3x-10x slower). "
                       "Enable it only while debugging one step (under `if args.debug:`)")
        elif call.name == "Trainer" and _true(call.kwargs.get("detect_anomaly")):
            ctx.report(self.info, call.node,
                       f"`{ctx.code(call.node)}`: detect_anomaly=True slows every training step severalfold; "
                       "enable it only for a debugging run")

    def on_with(self, ctx: FileContext, node: cst.With) -> None:
        for item in node.items:
            call = ctx.call(item.item)
            if call is None or call.qual not in ANOMALY_MANAGERS:
                continue
            if call.name == "set_detect_anomaly" and not (call.args and _true(call.args[0])):
                continue
            if _contains_loop(node.body):
                ctx.report(self.info, item.item,
                           f"`{ctx.code(item.item)}` wraps a whole loop: anomaly mode slows every step "
                           "severalfold. Wrap the one step being debugged, not the loop or epoch")


def _contains_loop(node) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.For, cst.While)):
            return True
        if isinstance(item, (cst.FunctionDef, cst.ClassDef)):
            continue
        body = getattr(item, "body", None)
        if isinstance(body, (list, tuple)):
            stack.extend(body)
        elif isinstance(body, cst.CSTNode):
            stack.append(body)
        for attribute in ("orelse", "finalbody", "handlers"):
            extra = getattr(item, attribute, None)
            if isinstance(extra, (list, tuple)):
                stack.extend(extra)
            elif isinstance(extra, cst.CSTNode):
                stack.append(extra)
    return False
