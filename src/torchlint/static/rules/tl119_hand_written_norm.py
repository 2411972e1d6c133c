"""TL119 hand-written-norm: sqrt of a sum of squared differences, where gradients flow."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.values import DEGENERATE
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.read_out import only_read_out
from torchlint.static.interpret.scopes import Scope
from torchlint.static.rules.base import Rule, read_out_as_numbers, whole_mean


def hand_written_distance(value) -> bool:
    """A radicand that is a squared Euclidean distance (`((a - b) ** 2).sum(-1)`,
    `dx.square() + dy.square()`) with nothing added to keep it away from 0."""
    return value.squared_distance and value.reaches_zero(DEGENERATE)


def input_feature(ctx: FileContext, node) -> bool:
    """A distance between points of unknown origin that the file concatenates into a feature tensor
    or feeds to a layer is an encoding of the input's geometry (point clouds, graph edges): the
    coordinates need no gradient, and edges join distinct points. Known once the file is walked."""
    return id(node) in ctx.features


def only_compared(ctx: FileContext, nodes) -> set[int]:
    """Ids of the values of those nodes whose every other use in the file is an operand of a
    comparison (`(d < r) & (d > r0)`): a mask of the distance, which nothing differentiates. Read from
    the walker's values: a comparison's value names its node, and a name's use has its value."""
    wanted = {id(ctx.value(node)) for node in nodes}
    made = {id(node) for node in nodes}
    compared: set[int] = set()
    for value in ctx.values.values():
        node = value.node
        if isinstance(node, cst.Comparison):
            compared.add(id(node.left))
            compared.update(id(target.comparator) for target in node.comparisons)
    uses: dict[int, bool] = {}
    for node_id, value in ctx.values.items():
        if id(value) in wanted and node_id not in made:
            uses[id(value)] = uses.get(id(value), True) and node_id in compared
    return {key for key, all_compared in uses.items() if all_compared}


class HandWrittenNorm(Rule):
    info = RuleInfo(
        "TL119", "hand-written-norm", "warning",
        "sqrt of a sum of squared differences: NaN gradient where the two points coincide; "
        "use torch.linalg.vector_norm.",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if call.operand is None:
            return
        if call.op == "sqrt" or (call.op == "pow" and ctx.value(call.param(1, "exponent")).const == 0.5):
            # torch.sqrt / x.sqrt() name a tensor op; numpy and math have no autograd
            torch = call.form == "method" or (call.qual or "").startswith("torch.")
            self._check(ctx, call.node, call.operand, call.scope, torch)

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Power) and ctx.value(node.right).const == 0.5:
            self._check(ctx, node, node.left, ctx.scope_of(node), False)

    def on_end(self, ctx: FileContext) -> None:
        deferred = [node for node in ctx.memo.get(self.info.code, ())  # (a metric is never differentiated)
                    if not read_out_as_numbers(ctx, node) and not input_feature(ctx, node)]
        if deferred:
            compared = only_compared(ctx, deferred)
            for node in deferred:
                if id(ctx.value(node)) not in compared:
                    self._report(ctx, node)

    def _check(self, ctx: FileContext, node, operand, scope: Scope, torch: bool) -> None:
        value = ctx.value(operand)
        if not hand_written_distance(value) or ctx.is_claimed(node) or value.tracked is False:
            return
        if whole_mean(ctx, operand):
            return  # a root-mean-square error: 0 only where every prediction of the batch is exact
        if value.tracked:  # the points carry autograd history (unless the distance is a metric read out)
            if not only_read_out(ctx.module, node, ctx.memo):
                self._report(ctx, node)
        elif torch and not scope.no_grad:
            # Nothing says where the points come from: a torch op outside no_grad (`** 0.5` of unknown
            # values may be numpy or Python floats); decided at the end, by how the distance is used.
            ctx.memo.setdefault(self.info.code, []).append(node)

    def _report(self, ctx: FileContext, node) -> None:
        ctx.report(
            self.info, node,
            f"`{ctx.code(node)}` is a Euclidean distance written by hand: where the two points coincide "
            "the sum of squares is exactly 0 and sqrt's gradient there is inf, so backward gives NaN "
            "although the distance is 0. Use torch.linalg.vector_norm(a - b, dim=...) (or "
            "F.pairwise_distance / torch.cdist), whose gradient at 0 is finite, or add an eps inside the sqrt",
        )
