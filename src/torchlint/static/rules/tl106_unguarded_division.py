"""TL106 unguarded-division: dividing by a reduction or array that can be 0."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.grad_mode import eval_branch, never_differentiated
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import called_name, nodes_of
from torchlint.static.rules.tl119_hand_written_norm import input_feature
from torchlint.static.facts.values import DEGENERATE, SATURATION

# Spreads that are 0 for a constant input, and norms of values shown to reach 0 (a difference of two
# embeddings): normalising by them is the textbook NaN.
SPREADS = frozenset({"std", "var", "range", "norm"})


def zero_divisor(value) -> bool:
    """Evidence that a divisor is exactly 0 somewhere: routinely or by saturation, or a spread of a
    value with autograd history (a loss term: one constant input and its NaN reaches every weight).
    A spread of data (an image min-max normalised, dataset statistics, a prediction scaled for saving)
    is 0 only for a constant input, and its NaN stays in that one sample (so is one computed with
    gradients off: `_check` leaves those out)."""
    if value.reaches_zero(SATURATION):
        return True
    return value.op in SPREADS and value.reaches_zero(DEGENERATE) and value.tracked is not False


def distance_divisor(value) -> bool:
    """A Euclidean distance written as the sqrt of squared differences: 0 where the points coincide."""
    return value.op == "sqrt" and value.of is not None and value.of.squared_distance and \
        value.reaches_zero(DEGENERATE)


# Functions that expect NaN in their input: a quotient given to one of them is known to be NaN at times.
NAN_AWARE = frozenset({"nanmean", "nansum", "nanmedian", "nanquantile", "nan_to_num", "isnan", "isfinite",
                       "nan_to_num_", "isinf", "isposinf", "isneginf"})
_INFINITIES = frozenset({"inf", "infinity"})


def _handles_non_finite(call: CallInfo, known: dict[int, bool]) -> bool:
    """A function of the project whose body expects inf/NaN in what it is given: it calls a NaN-aware
    function or compares with infinity (`val[val == float('inf')] = 0`). ``known``: by function node."""
    body = getattr(call.callee, "body", None)
    node = getattr(body, "node", None)
    if call.form != "local" or not isinstance(node, cst.FunctionDef):
        return False
    if id(node) not in known:
        known[id(node)] = _expects_non_finite(node)
    return known[id(node)]


def _expects_non_finite(node: cst.FunctionDef) -> bool:
    for inner in nodes_of(node.body, (cst.Call, cst.Comparison)):
        if isinstance(inner, cst.Call):
            if called_name(inner) in NAN_AWARE:
                return True
        elif any(_infinity(target.comparator) for target in inner.comparisons):
            return True
    return False


def _infinity(node) -> bool:
    """`float('inf')`, `math.inf`, `np.inf`, `torch.inf`."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in _INFINITIES
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
        text = node.args[0].value
        return isinstance(text, cst.SimpleString) and text.evaluated_value.strip("+").lower() in _INFINITIES
    return False


# Elementwise calls that keep a NaN where their input has one: `isnan` of `(a / b).clamp_(0, 1e4)`
# sees the quotient's NaN.
KEEPS_NAN = frozenset({"clamp", "clamp_", "clip", "clip_", "abs", "float", "double", "to", "view", "reshape",
                       "squeeze", "unsqueeze", "flatten", "contiguous", "clone"})


def nan_handled(ctx: FileContext, values) -> set[int]:
    """Ids of those values the file passes to a NaN-aware function (`torch.nanmean(iou)`, `x.nan_to_num()`),
    directly or through elementwise calls that keep its NaN (`isnan(q.clamp(0, 1))`)."""
    wanted = {id(value) for value in values}
    found: set[int] = set()
    known: dict[int, bool] = {}
    for call in ctx.calls.values():
        if call.name not in NAN_AWARE and not _handles_non_finite(call, known):
            continue
        for argument in (call.operand, *call.args):
            value = ctx.values.get(id(argument)) if argument is not None else None
            for _ in range(4):
                if value is None:
                    break
                if id(value) in wanted:
                    found.add(id(value))
                    break
                inner = ctx.call(value.node) if isinstance(value.node, cst.Call) else None
                value = ctx.values.get(id(inner.operand)) if inner is not None and inner.name in KEEPS_NAN \
                    and inner.operand is not None else None
    return found


def _gradients_off(scope) -> bool:
    """Under no_grad, or on a module's evaluation path (`if not self.training:`)."""
    return scope.no_grad or eval_branch(scope)


class UnguardedDivision(Rule):
    info = RuleInfo(
        "TL106", "unguarded-division", "warning",
        "Division by a sum/norm/std/count or an array that can be 0 gives inf/NaN; add an eps.",
        tags=("numerics", "nan"),
    )

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Divide):
            self._check(ctx, node, node.right, _gradients_off(ctx.scope_of(node)))

    def on_augassign(self, ctx: FileContext, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.DivideAssign):
            self._check(ctx, node, node.value, _gradients_off(ctx.scope_of(node)))

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.op == "divide":
            divisor = call.param(1, "other")
            if divisor is not None:
                self._check(ctx, call.node, divisor, _gradients_off(call.scope))

    def on_end(self, ctx: FileContext) -> None:
        found = ctx.memo.get(self.info.code, ())
        if not found:
            return
        handled = nan_handled(ctx, [ctx.value(node) for node, *_ in found])
        for node, divisor, value, distance in found:
            if id(ctx.value(node)) in handled:
                continue  # `iou = inter / union` then `torch.nanmean(iou)`: the NaN is expected
            if not value.reaches_zero(SATURATION) and never_differentiated(ctx):
                continue  # a degenerate spread's NaN stays in its one sample when nothing backpropagates
            if not distance or value.tracked or not input_feature(ctx, value.node):
                self._report(ctx, node, divisor, value)

    def _check(self, ctx: FileContext, node, divisor, no_grad: bool) -> None:
        value = ctx.value(divisor)
        if ctx.is_claimed(node):
            return
        if zero_divisor(value) and not (no_grad and not value.reaches_zero(SATURATION)):
            ctx.memo.setdefault(self.info.code, []).append((node, divisor, value, False))
        elif distance_divisor(value):  # unless it turns out to be a feature of the input's geometry
            ctx.memo.setdefault(self.info.code, []).append((node, divisor, value, True))

    def _report(self, ctx: FileContext, node, divisor, value) -> None:
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}`: the divisor `{ctx.code(divisor, 40)}` is {value.desc or 'a reduction'} "
            "and can be 0; add an eps or clamp it (x / d.clamp_min(eps))",
        )
