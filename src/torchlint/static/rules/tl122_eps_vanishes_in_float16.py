"""TL122 eps-vanishes-in-float16: an additive eps guard below float16's smallest value, in float16 code."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts import ranges
from torchlint.static.facts.ops import LOG_OPS
from torchlint.static.facts.values import Value
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.mixed_precision import converts_whole_model, project_fp16_evidence
from torchlint.static.rules.base import Rule

_GUARDED_OPS = LOG_OPS | {"sqrt", "rsqrt", "reciprocal"}
# Ops an autocast runs in float32 (torch.amp's float32 list): their outputs keep a tiny eps.
_AUTOCAST_FLOAT32 = LOG_OPS | {"sum", "norm", "exp", "log1p", "softmax", "log_softmax", "loss", "kl_div", "pow",
                               "rsqrt", "prod", "cumsum", "count"}


def vanishing_eps(ctx: FileContext, node) -> tuple[cst.BinaryOperation, float, Value] | None:
    """`x + eps` (written here or bound to the name used) whose eps rounds to 0 in float16:
    the sum, the eps and the facts about x."""
    value = ctx.value(node)
    add = node if isinstance(node, cst.BinaryOperation) else value.node
    if not isinstance(add, cst.BinaryOperation) or not isinstance(add.operator, cst.Add):
        return None
    for eps_node, other in ((add.right, add.left), (add.left, add.right)):
        eps = ctx.value(eps_node)
        guarded = ctx.value(other)
        if eps.op == "const" and eps.const is not None and 0 < eps.const and \
                ranges.as_dtype(eps.const, True) == 0 and guarded.op != "const":
            return add, eps.const, guarded
    return None


def _test_file(path) -> bool:
    """A test module: converting a model to float16 there exercises a configuration, it is not how the
    project trains (`tests/test_gpu.py` making a model `.half()` says nothing of its adapters' dtype)."""
    name = path.name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or \
        any(part in ("tests", "test", "testing") for part in path.parts[:-1])


class EpsVanishesInFloat16(Rule):
    info = RuleInfo(
        "TL122", "eps-vanishes-in-float16", "warning",
        "an eps below 6e-8 added as a guard is 0 in float16: the log/sqrt/division it guards sees 0 again.",
        tags=("numerics", "nan", "mixed-precision"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(ctx, node.right, node, "divisor", ctx.scope_of(node).fp16)

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(ctx, node.value, node, "divisor", ctx.scope_of(node).fp16)

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op in _GUARDED_OPS and call.operand is not None:
            self._check(ctx, call.operand, call.node, f"argument of {call.op}", call.scope.fp16)
        elif call.op == "divide":
            divisor = call.param(1, "other")
            if divisor is not None:
                self._check(ctx, divisor, call.node, "divisor", call.scope.fp16)

    def _check(self, ctx: FileContext, guarded_node, use, role: str, autocast: bool) -> None:
        found = vanishing_eps(ctx, guarded_node)
        if found is None:
            return
        add, eps, guarded = found
        if ctx.is_claimed(add):
            return
        if autocast:
            if guarded.op in _AUTOCAST_FLOAT32 or guarded.f32:
                return  # an autocast computes it in float32, where the eps is representable
            why = ("this runs under a float16 autocast", ())
        elif guarded.half or ctx.value(add).half:
            why = ("the value it is added to is float16 here", ())
        else:
            # whether the file (or a module importing it) makes its model float16 is known at the end
            ctx.memo.setdefault(self.info.code, []).append((add, eps, use, role))
            return
        self._report(ctx, add, eps, use, role, why)

    def on_end(self, ctx: FileContext) -> None:
        pending = ctx.memo.get(self.info.code)
        if not pending:
            return
        why = self._model_float16(ctx)
        if why is None:
            return
        for add, eps, use, role in pending:
            # one finding: what TL101/TL106 said about the same log or division names a weaker reason
            ctx.pending = [p for p in ctx.pending if p.node is not use and p.node is not add]
            self._report(ctx, add, eps, use, role, why)

    def _report(self, ctx: FileContext, add, eps: float, use, role: str, why) -> None:
        message, related = why
        ctx.claim(add)
        ctx.claim(use)  # one finding: TL101/TL106 on the same log or division name a weaker reason
        ctx.report(
            self.info, add,
            f"`{ctx.code(add, 50)}` guards the {role} of `{ctx.code(use, 40)}` with {eps:g}, which rounds to 0 "
            f"in float16 (its smallest value is 6e-8), and {message}: where the guarded value is 0 the guard "
            "is gone (log(0) = -inf, x / 0 = inf or NaN). Use an eps float16 can hold (1e-4, or "
            "torch.finfo(x.dtype).tiny), clamp(min=...) in float32, or compute this part in float32",
            related=related,
        )

    def _model_float16(self, ctx: FileContext):
        """The file, or a project module importing it (not a test), converts its model to float16."""
        found = project_fp16_evidence(
            ctx, lambda node, path: converts_whole_model(node) and (path is None or not _test_file(path)))
        if found is None:
            return None
        node, importer = found
        if not importer:
            return "the file converts its model to float16", ((node, "the model is made float16 here"),)
        return (f"`{Path(importer).name}`, which imports this module, converts its model to float16",
                ((node, "the model is made float16 here", importer),))
