"""TL306 eval-without-no-grad: an evaluation loop that builds autograd graphs."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOSS_OPS
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.model_modes import module_shape
from torchlint.static.interpret.parameterless import without_parameters
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.training import BACKWARD, GRAD, STEP, actions, loop_header
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import nodes_of

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
            frozen: set[str] = set()
            single = _single_batches(body.node)
            for entry in body.entries:
                if isinstance(entry, CallInfo) and entry.form == "method" and entry.name == "eval" \
                        and not entry.args and entry.receiver is not None:
                    evaluated.add(ctx.shape(entry.receiver))
                elif isinstance(entry, CallInfo) and _freezes(entry):
                    frozen.add(module_shape(ctx, entry.receiver, {}))
                elif isinstance(entry, Body) and entry.kind == "loop" and not _over(entry.node, single):
                    self._check_loop(ctx, entry, evaluated - frozen)

    def _check_loop(self, ctx: FileContext, loop: Body, evaluated: set[str]) -> None:
        if loop.scope.no_grad:
            return
        if isinstance(loop.node, cst.While) and not _fetches(loop.node.body):
            return  # a retry or polling loop, not one over batches
        if _runs_once(loop.node):
            return  # `for x in loader: out = model(x); break`: one batch to look at, not an evaluation
        if _volatile_inputs(loop.node) and _written_for_old_torch(ctx.source):
            return  # `Variable(x, volatile=True)` in code for PyTorch <= 0.3, where that builds no graph
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
            # (not the one warm-up forward of an evaluation routine with a batch loop of its own)
            by_helper = (here, callee) in helper_evaluated and _dotted(entry.node.func) and (
                iterates_eval_data or entry.scope.loop_depth > 0 or not _loops_in(ctx, here))
            model_call = callee in evaluated or by_helper or (
                iterates_eval_data and entry.callee.kind in ("instance", "module") and entry.op not in LOSS_OPS
                and not without_parameters(entry.callee))
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


def _runs_once(loop) -> bool:
    """The loop's body ends in a `break` that always runs: one pass, whatever it iterates."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Break) for s in last.body)


def _loops_in(ctx: FileContext, function: str | None) -> bool:
    return any(loop.scope.function == function for loop in ctx.loops)


def _volatile_inputs(loop: cst.CSTNode) -> bool:
    """The loop wraps its inputs as `Variable(x, volatile=True)`: PyTorch 0.3's no_grad."""
    for call in nodes_of(loop, (cst.Call,)):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "volatile" and \
                    isinstance(arg.value, cst.Name) and arg.value.value == "True":
                return True
    return False


_OLD_SCALAR = re.compile(r"\.data\[0\]")  # `loss.data[0]`: a 0-dim tensor indexed, an error since PyTorch 0.5
_NEW_API = re.compile(r"\bno_grad\b|\binference_mode\b|\.item\(\)")


def _written_for_old_torch(source: str) -> bool:
    """The file reads scalars as `loss.data[0]` and never uses the 0.4 API (`no_grad`, `.item()`): it
    runs on PyTorch <= 0.4, where `volatile=True` still turned the graph off (pytorch-fcn's evaluate.py,
    with a trainer on `no_grad`, is newer code that kept a dead `volatile`)."""
    return _OLD_SCALAR.search(source) is not None and _NEW_API.search(source) is None


def _single_batches(function) -> set[str]:
    """Names the function's own statements assign one batch to: `imgs = next(iter(val_loader))`."""
    names: set[str] = set()
    if not isinstance(function, cst.FunctionDef):
        return names
    for line in function.body.body:
        for small in getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
                    isinstance(small.value.func, cst.Name) and small.value.func.value == "next":
                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def _over(loop, single: set[str]) -> bool:
    """A `for` over the samples of one batch (`zip(imgs["A"], imgs["B"])`): one forward, not an evaluation
    over a data set."""
    if not single or not isinstance(loop, cst.For):
        return False
    return any(name.value in single for name in nodes_of(loop.iter, (cst.Name,)))


def _fetches(body: cst.CSTNode) -> bool:
    """The loop's own statements take a batch: `next(it)`, or iterate something (`for b in ...`)."""
    finder = _Fetch()
    body.visit(finder)
    return finder.found


class _Fetch(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "next" or \
                isinstance(node.func, cst.Attribute) and node.func.attr.value in ("next", "__next__", "get"):
            self.found = True

    def visit_For(self, node: cst.For) -> None:
        self.found = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False


def _freezes(call: CallInfo) -> bool:
    """`model.requires_grad_(False)` (also in a chain, `model.eval().requires_grad_(False)`): the model's
    forward records no graph for inputs without history, so its evaluation needs no no_grad."""
    if call.form != "method" or call.name != "requires_grad_" or call.receiver is None:
        return False
    flag = call.args[0] if call.args else call.kwargs.get("requires_grad")
    return isinstance(flag, cst.Name) and flag.value == "False"


def _dotted(node) -> bool:
    """`model`, `self.net`: a name, not a call's result (`ckpt.fuse().eval()`)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)

