"""Values of a few calls the generic op table does not model: `float("inf")`, uniform draws with
literal bounds, and a `masked_fill_` through `.data` that only masks scores for a softmax."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts.ranges import INF
from torchlint.static.facts.values import Value, constant
from torchlint.static.interpret.context import CallInfo, FileContext

_INFINITIES = {"inf": INF, "+inf": INF, "infinity": INF, "-inf": -INF, "-infinity": -INF}


def infinity(node: cst.Call) -> float | None:
    """`float("inf")`, `float("-inf")`: the number, or None."""
    if not isinstance(node.func, cst.Name) or node.func.value != "float" or len(node.args) != 1 or \
            not isinstance(node.args[0].value, cst.SimpleString):
        return None
    return _INFINITIES.get(str(node.args[0].value.evaluated_value).strip().lower())


def uniform(ctx: FileContext, info: CallInfo, node) -> Value:
    """`np.random.uniform(0.1, 2.0)`: samples in [low, high); literal bounds give the range."""
    bounds = [ctx.value(info.param(i, name)) if info.param(i, name) is not None else constant(float(i))
              for i, name in ((0, "low"), (1, "high"))]
    if all(b.op == "const" and b.const is not None for b in bounds):
        low, high = sorted(b.const for b in bounds)
        return Value(op="uniform", lo=low, hi=high, tracked=False, node=node)
    return Value(op="uniform", tracked=False, node=node)


def probability_guard(clamped: Value | None) -> bool:
    """`dist.data.clamp_(0.01, 0.99)` on a probability before its log (categorical DQN): the clamp keeps
    the log finite and the gradient passes straight through it, which is what autograd not seeing the
    write gives; the values any op saved before are changed by at most the clamp's margin."""
    return clamped is not None and clamped.prob and 0 < clamped.lo and clamped.hi <= 1


def softmax_mask(info: CallInfo, values: list[Value]) -> bool:
    """`scores.data.masked_fill_(mask, self.score_mask_value)` (Tacotron's attention, -inf): a position
    filled with a huge negative score gets probability 0 from the softmax that follows, and so gradient 0:
    autograd missing the fill changes nothing. A fill with a known moderate number is still a write."""
    if info.name != "masked_fill_" or len(values) < 2:
        return False
    fill = values[1]
    return fill.hi <= -1e4 or fill.op != "const"
