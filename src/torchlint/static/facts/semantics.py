"""What each canonical op returns, as an abstract value: its range, evidence of 0, dtype, history."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts import ops, ranges
from torchlint.static.facts.arith import cosine, root_desc, square
from torchlint.static.facts.values import (
    DEGENERATE,
    NONE,
    ROUTINE,
    SATURATION,
    UNDERFLOW,
    Value,
    join,
    numeric,
    tracked_of,
)

INF = ranges.INF
# A softmax of inputs whose spread stays below this keeps every probability > 0 in float32,
# for up to 1e8 classes (exp(-60) / 1e8 ~ 9e-35).
SOFTMAX_SAFE_SPREAD = 60.0


def apply_op(op: str, x: Value, node, rest: list[Value]) -> Value:
    """The value an op returns given its operand `x` (and the other arguments' values)."""
    x = numeric(x)
    half = x.half
    tracked = tracked_of(x, *rest) if rest else x.tracked
    if op == "identity":
        return x
    if op == "sigmoid":
        lo, hi = ranges.sigmoid(x.span, half)
        return Value(op=op, lo=lo, hi=hi, zero=SATURATION if half else UNDERFLOW, prob=True, desc="a sigmoid output", half=half,
                     f64=x.f64, tracked=tracked, of=x, node=node)
    if op == "softmax":
        lo = 0.0
        if x.hi - x.lo < SOFTMAX_SAFE_SPREAD:
            lo = ranges.as_dtype(ranges.exp((x.lo - x.hi, x.lo - x.hi), half)[0] / 1e8, half)
        return Value(op=op, lo=lo, hi=1.0, zero=SATURATION if half else UNDERFLOW, prob=True,
                     desc="a softmax output", half=half, f64=x.f64,
                     tracked=tracked, of=x, node=node)
    if op == "log_softmax":
        return Value(op=op, hi=0.0, half=half, tracked=tracked, of=x, node=node)
    if op == "exp":
        lo, hi = ranges.exp(x.span, half)
        return Value(op=op, lo=lo, hi=hi, zero=SATURATION if half else UNDERFLOW, of=x, half=half,
                     tracked=tracked, node=node)
    if op == "softplus":
        lo, hi = ranges.softplus(x.span, half)
        return Value(op=op, lo=lo, hi=hi, zero=SATURATION if half else UNDERFLOW, half=half, tracked=tracked,
                     node=node)
    if op == "relu":
        lo, hi = ranges.relu(x.span)
        return Value(op=op, lo=lo, hi=hi, zero=ROUTINE, desc="a ReLU output", half=half, tracked=tracked,
                     of=x, node=node)
    if op == "abs":
        lo, hi = ranges.absolute(x.span)
        return Value(op=op, lo=lo, hi=hi, zero=x.zero, desc="an absolute value", half=half, tracked=tracked,
                     node=node)
    if op == "square":
        return square(x, node, half)
    if op == "sqrt":
        lo, hi = ranges.sqrt(x.span, half)
        return Value(op=op, lo=lo, hi=hi, zero=x.zero, desc=root_desc(x), of=x, half=half, tracked=tracked,
                     node=node)
    if op == "rsqrt":
        return Value(op=op, lo=0.0, of=x, half=half, tracked=tracked, node=node)
    if op in ("sum", "nansum", "mean", "nanmean"):
        return _reduction(op, x, node, half, tracked)
    if op == "norm":
        lo = x.lo if x.lo > 0 else 0.0
        return Value(op=op, lo=lo, hi=INF, zero=min(x.zero, DEGENERATE), desc="a norm", of=x, half=half,
                     tracked=tracked, node=node)
    if op in ("std", "var"):
        desc = "a standard deviation" if op == "std" else "a variance"
        # 0 for a constant input. Evidence: activations normalised inside the graph (padded rows,
        # dead units) and inputs that are all zero in routine use (a ReLU, a mask). Data, returns,
        # advantages and random samples vary in practice: no evidence (measured on the corpus)
        constant = x.tracked or x.reaches_zero(ROUTINE)
        zero = DEGENERATE if constant and x.op not in ("randn", "piecewise") else NONE
        return Value(op=op, lo=0.0, hi=INF, zero=zero, desc=desc, of=x, half=half, tracked=tracked, node=node)
    if op == "randn":
        return Value(op=op, tracked=False, node=node)
    if op in ("count_nonzero", "bincount"):
        # a bincount has a bin for every value up to the largest one seen: a bin is 0 only where a
        # value in that range never occurs (node ids of a batch, labels 0..k all present); extra bins
        # asked for with minlength are 0 whenever the data does not reach them
        if op == "bincount" and _every_bin(x.node, node):
            return Value(op="count", lo=1.0, hi=INF, desc="a count of every label", tracked=False, node=node)
        padded = op == "count_nonzero" or _has_minlength(node)
        return Value(op="count", lo=0.0, hi=INF, zero=ROUTINE if padded else DEGENERATE, desc="a count",
                     tracked=False, node=node)
    if op in ("amax", "amin"):
        return Value(op=op[1:], lo=x.lo, hi=x.hi, zero=min(x.zero, DEGENERATE), of=x, half=half,
                     tracked=tracked, node=node)
    if op in ("zeros", "zeros_like"):
        return Value(op="const", lo=0.0, hi=0.0, zero=ROUTINE, const=0.0, desc="zeros", tracked=False,
                     node=node)
    if op in ("ones", "ones_like"):
        return Value(op="const", lo=1.0, hi=1.0, const=1.0, tracked=False, node=node)
    if op == "full" and rest:
        return rest[0].but(node=node)
    if op == "rand":
        return Value(op=op, lo=0.0, hi=1.0, zero=ROUTINE, desc="uniform samples in [0, 1)", tracked=False,
                     node=node)
    if op == "where" and len(rest) >= 2:
        return join(rest[0], rest[1])
    if op == "normalize":  # each element of a unit vector
        return Value(op=op, lo=-1.0, hi=1.0, half=half, of=x, tracked=tracked, node=node)
    if op == "cosine":
        return cosine(node, half, tracked)
    if op == "tanh":
        lo, hi = ranges.tanh(x.span, half)
        return Value(op=op, lo=lo, hi=hi, zero=x.zero, half=half, of=x, tracked=tracked, node=node)
    if op in ops.LOSS_OPS:
        return Value(op="loss", desc="a loss", half=half, tracked=tracked, node=node)
    if op in ops.LOG_OPS:
        lo, hi = ranges.log(x.span, half)
        return Value(op=op, lo=lo, hi=hi, half=half, tracked=tracked, of=x, node=node)
    if op in ops.INTEGRAL_OPS:
        return Value(op=op, half=half, tracked=False, node=node)
    return Value(op=op, half=half, tracked=tracked, node=node)


def _reduction(op: str, x: Value, node, half: bool, tracked) -> Value:
    if x.op == "unit_product" and op in ("sum", "nansum"):  # (F.normalize(a) * F.normalize(b)).sum(-1)
        return cosine(node, half, tracked)
    if x.op == "softmax":
        return Value(op=op.replace("nan", ""), lo=1.0, hi=1.0, desc="a sum of probabilities", of=x,
                     tracked=tracked, node=node)
    lo, hi = ranges.total(x.span) if op in ("sum", "nansum") else x.span
    if x.op == "mask" and op in ("sum", "nansum"):
        # a count of selected elements: 0 whenever nothing in the batch is selected. A length mask
        # (`arange(t) < lengths`) summed over the whole batch is 0 only if every sequence is empty
        # (a length or padding mask summed over the whole batch is 0 only if every position is padding)
        zero = DEGENERATE if x.desc in (LENGTH_MASK, PADDING_MASK, RANDOM_MASK) and _whole(node) else ROUTINE
        if x.zero == NONE:
            zero = NONE  # a mask the code alone fixes (see interpret.fixed_values): the same count every call
        return Value(op="count", lo=0.0, hi=INF, zero=zero, desc="a count", of=x, tracked=False, node=node)
    desc = "a sum of squares" if x.op == "square" else f"a {op.replace('nan', '')}"
    zero = DEGENERATE if x.zero >= DEGENERATE and x.lo >= 0 else NONE
    return Value(op=op.replace("nan", ""), lo=lo, hi=hi, zero=zero, desc=desc, of=x, half=half,
                 tracked=tracked, node=node, squared_distance=x.squared_distance)


def clamp(x: Value, low: Value | None, high: Value | None, node) -> Value:
    """clamp(x, low, high): a bound that is not a known number (`min=self.eps`) still counts as a
    positive guard, since code names a variable bound to keep values away from 0."""
    x = numeric(x)
    if x.kind:
        return x if low is None and high is None else Value(node=node)
    half = x.half
    written = _bound(low)
    # the bounds as the dtype stores them: 1e-8 is 0 in float16, 1 - 1e-8 is 1.0 in float32
    low_bound = ranges.as_dtype(written, half) if written is not None else None
    written_high = _bound(high)
    high_bound = ranges.as_dtype(written_high, half) if written_high is not None else None
    if low is not None and low_bound is None:
        low_bound = ranges.smallest(half)  # an unknown lower bound: a guard, whatever its size
    if high is not None and high_bound is None and x.prob:
        high_bound = ranges.below_one(half)  # `1 - self.eps` keeps a probability below 1
    if x.op == "cosine":  # a bound that is not a known number (`1 - self.eps`) keeps it inside (-1, 1)
        if low is not None and written is None:
            low_bound = -ranges.below_one(half)
        if high is not None and written_high is None:
            high_bound = ranges.below_one(half)
        lo, hi = ranges.clamp(x.span, low_bound, high_bound, half)
        return x.but(lo=lo, hi=hi, node=node)
    lo, hi = ranges.clamp(x.span, low_bound, high_bound, half)
    # an extent enclosing two intervals is never negative: a clamp at 0 there is defensive, not a sign
    # that the code meets 0 (as it is for a difference the author clamps)
    zero = x.zero if low_bound is None or low_bound < 0 or x.op == "extent" else \
        (ROUTINE if low_bound == 0 else NONE)
    desc = x.desc
    dtype = "float16" if half else "float32"
    if low_bound == 0:
        desc = "clamped at 0" if written == 0 else f"clamped at {written:g} (0 in {dtype})"
    elif written_high is not None and written_high < 1 == high_bound:
        desc = f"clamped to at most {written_high:.10g} (1.0 in {dtype})"
    # clamped into [0, 1]: the code treats it as a probability, one that can reach the upper bound
    prob = x.prob or (low_bound is not None and low_bound >= 0 and high_bound is not None and high_bound <= 1)
    return Value(op="clamp", lo=lo, hi=hi, zero=zero, prob=prob, desc=desc, half=half, tracked=x.tracked,
                 of=x, node=node)


def extremum(op: str, a: Value, b: Value, node) -> Value:
    """Elementwise max/min of two values (`torch.maximum(x, eps)` is a guard)."""
    a, b = numeric(a), numeric(b)
    if a.kind or b.kind:
        return Value(node=node)
    if op in ("max", "maximum"):
        lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
    else:
        lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
    return Value(op=op, lo=lo, hi=hi, zero=min(a.zero, b.zero), half=a.half or b.half,
                 tracked=tracked_of(a, b), node=node)


def literal_array(items: tuple[Value, ...], node) -> Value:
    """`torch.tensor([...])` / `np.array([...])` of literals: a 0 among them is divided by every time."""
    numbers = [item.const for item in items if item.op == "const" and item.const is not None]
    if not numbers or len(numbers) != len(items):
        return Value(op="tensor", zero=ROUTINE if 0 in numbers else NONE, tracked=False, node=node,
                     desc="an array containing 0" if 0 in numbers else "")
    return Value(op="tensor", lo=min(numbers), hi=max(numbers), zero=ROUTINE if 0 in numbers else NONE,
                 desc="an array containing 0" if 0 in numbers else "", tracked=False, node=node)


def _bound(value: Value | None) -> float | None:
    if value is None or value.op != "const" or value.const is None:
        return None
    return value.const


def to_half(value: Value) -> Value:
    """The same value cast to float16: bounds round, and an eps guard can round away."""
    if value.kind or value.half:
        return value.but(half=True)
    lo = ranges.as_dtype(value.lo, True)
    hi = ranges.as_dtype(value.hi, True)
    zero = value.zero
    if value.eps is not None and ranges.as_dtype(value.eps, True) == 0:
        lo, zero = 0.0, ROUTINE
    return value.but(lo=lo, hi=hi, zero=zero, half=True)


__all__ = ["apply_op", "to_half", "NONE"]


_REPEATS = frozenset({"repeat_interleave", "repeat", "tile", "expand"})


def _every_bin(labels, node) -> bool:
    """`bincount(torch.arange(n).repeat_interleave(k), minlength=n)`: labels made of every value below n
    (a few-shot episode's support labels), so every bin is counted; minlength, when given, is that n."""
    while isinstance(labels, cst.Call) and isinstance(labels.func, cst.Attribute) and \
            labels.func.attr.value in _REPEATS:
        labels = labels.func.value
    if not (isinstance(labels, cst.Call) and isinstance(labels.func, (cst.Attribute, cst.Name))):
        return False
    name = labels.func.attr.value if isinstance(labels.func, cst.Attribute) else labels.func.value
    if name != "arange" or len(labels.args) != 1 or labels.args[0].keyword is not None:
        return False
    size = _code(labels.args[0].value)
    extra = [a for a in getattr(node, "args", ())[1:] if a.keyword is None or a.keyword.value == "minlength"]
    return all(_code(a.value) == size for a in extra if a.keyword is not None) and \
        not any(a.keyword is None for a in extra)


def _code(node) -> str:
    return cst.Module([]).code_for_node(node)


def _has_minlength(node) -> bool:
    """`bincount(x, minlength=n)` or `bincount(x, None, n)`; an unknown call counts as padded."""
    args = getattr(node, "args", None)
    if args is None:
        return True
    return any(a.keyword is not None and a.keyword.value == "minlength" for a in args) or \
        sum(a.keyword is None for a in args) >= 3


LENGTH_MASK = "a length mask"  # the desc of `arange(t) < lengths` (interpret/expressions.py)
PADDING_MASK = "a padding mask"  # `ids != PAD`, `labels != -100`: the positions not marked empty
MARKER_MASK = "a mask of marked positions"  # `labels == ignore_index`: its `== 0` is a padding mask
RANDOM_MASK = "a random mask"  # `torch.rand(b, t) < ratio`: over a whole batch, empty only by a rare draw


def _whole(node) -> bool:
    """A reduction call without a dimension: `mask.sum()`, `torch.sum(mask)`."""
    if not isinstance(node, cst.Call):
        return False
    method = isinstance(node.func, cst.Attribute) and len(node.args) == 0
    function = len(node.args) == 1 and node.args[0].keyword is None
    return (method or function) and not any(a.keyword is not None and a.keyword.value in ("dim", "axis")
                                             for a in node.args)
