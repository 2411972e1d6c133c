"""What arithmetic does to the facts about its operands: ranges, evidence of 0, probability, dtype."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts import ranges
from torchlint.static.facts.values import (
    DEGENERATE,
    NONE,
    NOTHING,
    ROUTINE,
    SATURATION,
    Value,
    constant,
    literal_number,
    numeric,
    tracked_of,
)

DIFFERENCE = "a difference"  # the description of `a - b` for two values that are equal somewhere
MIXTURE_PARTS = frozenset({"weighted", "mixture", "softmax"})  # what `_add` sums into a mixture


def square(base: Value, node, half: bool) -> Value:
    """x**2 is 0 exactly where x is; (a - b)**2 is a squared distance, 0 where a and b coincide, and so
    is its square ((a - b)**4, Zero-DCE's colour-constancy term)."""
    distance = (base.op == "sub" and base.desc == DIFFERENCE and base.zero >= DEGENERATE) or \
        (base.squared_distance and base.op == "square")
    return Value(op="square", lo=0.0, hi=ranges.square(base.span, half)[1], zero=base.zero, desc="a square",
                 half=half, tracked=base.tracked, of=base, node=node, squared_distance=distance)


def arith(op: str, left: Value, right: Value, left_node, right_node, node, fp16: bool) -> Value:
    """The value of `left <op> right` (op is the LibCST operator class name). A float32 tensor with
    one of unknown dtype gives a float32 one; a float16 autocast computes `**` in float32. A float16
    tensor stays float16 next to a float32 one: that one may have no dims (`x / scale.sqrt()`), and a
    0-dim tensor does not promote."""
    result = _arith(op, left, right, left_node, right_node, node, fp16)
    wide = ((left.f32 or right.f32) and not (left.half or right.half)) or (op == "Power" and fp16)
    if wide and not result.kind and result.op != "const":
        return result.but(half=False, f32=True, shape=result.shape, dim=result.dim)
    return result


def _arith(op: str, left: Value, right: Value, left_node, right_node, node, fp16: bool) -> Value:
    node = node if node is not None else left_node
    if op == "Add" and left.kind == "list" == right.kind:
        return Value(kind="list", items=left.items + right.items, node=node)  # `losses + [sum(losses)]`
    left, right = numeric(left), numeric(right)
    if left.kind or right.kind:
        return NOTHING
    half = left.half or right.half
    if left.op == "const" and right.op == "const" and left.const is not None and right.const is not None:
        folded = _fold(op, left.const, right.const)
        if folded is not None:
            return constant(folded, node)
    if op == "Add":
        patched = _zero_patch(left, right, left_node, right_node, node, half)
        return patched if patched is not None else _add(left, right, node, half)
    if op == "Subtract":
        return _subtract(left, right, node, half)
    if op == "Multiply":
        return _multiply(left, right, left_node, right_node, node, half)
    if op == "Divide":
        return _divide(left, right, node, half)
    if op == "Power":
        return _power(left, right, node, half)
    if op in ("BitAnd", "BitOr") and (left.op == "mask" or right.op == "mask"):
        fixed = left.op == right.op == "mask" and left.zero == right.zero == NONE
        return Value(op="mask", lo=0.0, hi=1.0, zero=NONE if fixed else ROUTINE, desc="a boolean mask",
                     tracked=False, node=node,
                     checks=left.checks + right.checks)
    if op == "MatrixMultiply" and left.op == "normalize" and right.op == "normalize":
        # unit rows times unit columns: cosine similarities
        return cosine(node, half or fp16, tracked_of(left, right), of=left if same_tensor(left, right) else None)
    if op == "MatrixMultiply" and same_tensor(left, right) and left is not NOTHING:
        return gram(left, node, half or fp16)
    if op == "MatrixMultiply":
        return Value(op="matmul", unbounded=True, half=half or fp16, desc="a matmul output",
                     tracked=tracked_of(left, right), node=node)
    return NOTHING


def _fold(op: str, left: float, right: float) -> float | None:
    try:
        if op == "Add":
            return left + right
        if op == "Subtract":
            return left - right
        if op == "Multiply":
            return left * right
        if op == "Divide":
            return left / right
        if op == "Power" and abs(right) < 64:
            return float(left**right)
    except (ZeroDivisionError, OverflowError, TypeError, ValueError):
        return None
    return None


def _top_of(left: Value, right: Value):
    """What `x.max() + y` is the max of, when y is an eps-like term (not negative, or a setting of
    unknown value such as `self.eps`): the sum is at least every element of x."""
    for top, other in ((left, right), (right, left)):
        if top.op in ("max", "amax") and top.of is not None and (
                other.lo >= 0 or (other.op is None and other.kind is None and other.span == (-ranges.INF, ranges.INF))):
            return top.of
    return None


def same_tensor(a: Value, b: Value) -> bool:
    """`x @ x.t()`: the same value (a transpose is the same value), or values made by one expression."""
    return a is b or (a.node is not None and a.node is b.node)


def cosine(node, half: bool, tracked, of: Value | None = None) -> Value:
    """The cosine of the angle between two vectors: exactly +-1 where they are parallel, and a
    rounding step past it when computed in floating point (`of`: x, for the cosines of x's rows with
    each other)."""
    return Value(op="cosine", lo=-ranges.COSINE_BOUND, hi=ranges.COSINE_BOUND, desc="a cosine similarity",
                 half=half, tracked=tracked, node=node, of=of)


def gram_diag(matrix: Value, node) -> Value | None:
    """The diagonal of x @ x.T (or of x's cosines with itself): each row's squared norm; None for
    another matrix."""
    if matrix.op not in ("gram", "cosine") or matrix.of is None:
        return None
    return Value(op="gram_diag", lo=0.0, half=matrix.half, tracked=matrix.tracked, node=node, of=matrix.of)


def gram(x: Value, node, half: bool) -> Value:
    """x @ x.T: the inner products of x's rows with each other (`of`: x)."""
    return Value(op="gram", unbounded=True, half=half, desc="a matmul output", tracked=x.tracked, node=node, of=x)


def _gram_parts(left: Value, right: Value, node, half: bool, subtract: bool) -> Value | None:
    """The squared distances of a Gram matrix G = X X^T written out: diag(G) - 2 G + diag(G)^T, in
    either order. `gram_diag` is the squared norms, `gram_partial` two of the three terms."""
    tracked = tracked_of(left, right)
    scaled = right.op in ("gram", "cosine") and right.of is not None
    if subtract and scaled and left.op in ("gram_diag", "gram_diag2") and left.of is right.of:
        if left.op == "gram_diag":
            return Value(op="gram_partial", half=half, tracked=tracked, node=node, of=left.of)
        return _squared_distances(tracked, node, half)
    if not subtract:
        for one, other in ((left, right), (right, left)):
            if one.op == "gram_partial" and other.op == "gram_diag" and one.of is other.of:
                return _squared_distances(tracked, node, half)
        if left.op == "gram_diag" and right.op == "gram_diag" and left.of is right.of:
            return Value(op="gram_diag2", lo=0.0, half=half, tracked=tracked, node=node, of=left.of)
    return None


def _squared_distances(tracked, node, half: bool) -> Value:
    """|a|^2 - 2 a.b + |b|^2: exactly 0 for a point with itself (the diagonal), and a rounding step
    below 0 elsewhere when two points are close."""
    return Value(op="sum", lo=-ranges.INF, hi=ranges.INF, zero=DEGENERATE, desc="a sum of squares", half=half,
                 tracked=tracked, node=node, squared_distance=True)


def _zero_patch(left: Value, right: Value, left_node, right_node, node, half: bool) -> Value | None:
    """`d2 + (d2 == 0).float() * eps`: where `d2` is exactly 0 the mask adds eps, so the sum never is
    (the batch-hard triplet loss's guard before sqrt). The mask must test that very name for 0
    (`==`, `<`, `<=`: see the `<=0` entries of a comparison's checks)."""
    for value, value_node, patch in ((left, left_node, right), (right, right_node, left)):
        if patch.op == "mask" and patch.hi > 0 and value.lo >= 0 and isinstance(value_node, cst.Name) and \
                f"{value_node.value}<=0" in patch.checks:
            return Value(op="add", lo=value.lo, hi=ranges.add(value.span, patch.span, half)[1], zero=NONE,
                         eps=patch.hi, desc=value.desc, half=half, tracked=tracked_of(left, right), node=node,
                         of=value.of)
    return None


def _add(left: Value, right: Value, node, half: bool) -> Value:
    lo, hi = ranges.add(left.span, right.span, half)
    tracked = tracked_of(left, right)
    parts = _gram_parts(left, right, node, half, subtract=False)
    if parts is not None:
        return parts
    for guard, guarded in ((left, right), (right, left)):
        if guard.op == "const" and guard.const is not None and guard.const > 0 and guarded.lo >= 0:
            # `x + eps`: the eps is the value itself wherever x is exactly 0 (it may round away in float16).
            eps = guard.const if guarded.zero == ROUTINE else None
            return Value(op="add", lo=lo, hi=hi, zero=guarded.zero, eps=eps if lo > 0 else None,
                         desc=guarded.desc, half=half, tracked=tracked, node=node, of=_top_of(left, right))
    zero = min(left.zero, right.zero) if left.lo >= 0 and right.lo >= 0 else NONE
    if left.op in MIXTURE_PARTS and right.op in MIXTURE_PARTS and "weighted" in (left.op, right.op):
        # p * softmax(a) + (1 - p) * softmax(b): a mixture, 0 wherever every component underflows
        return Value(op="mixture", lo=lo, hi=hi, zero=zero, prob=True, desc="a mixture of softmax outputs",
                     half=half, tracked=tracked, node=node)
    return Value(op="add", lo=lo, hi=hi, zero=zero, desc=left.desc or right.desc, half=half,
                 unbounded=left.unbounded or right.unbounded, tracked=tracked, node=node, of=_top_of(left, right),
                 squared_distance=left.squared_distance and right.squared_distance)


_DRAWS = frozenset({"randn", "rand", "uniform"})  # samples of a continuous distribution (scaled or shifted by constants)


def _scale_of(scaled, name) -> float | None:
    """c for `c * x` (or `x * c`) when `name` is the name `x` and c a positive number literal."""
    if not (isinstance(name, cst.Name) and isinstance(scaled, cst.BinaryOperation) and
            isinstance(scaled.operator, cst.Multiply)):
        return None
    for number, other in ((scaled.left, scaled.right), (scaled.right, scaled.left)):
        if isinstance(number, (cst.Integer, cst.Float)) and isinstance(other, cst.Name) and other.value == name.value:
            value = literal_number(number.value)
            return float(value) if value is not None and value > 0 else None
    return None


_LARGER = frozenset({"max", "maximum"})
_SMALLER = frozenset({"min", "minimum"})


def _subtract(left: Value, right: Value, node, half: bool) -> Value:
    lo, hi = ranges.subtract(left.span, right.span, half)
    tracked = tracked_of(left, right)
    parts = _gram_parts(left, right, node, half, subtract=True)
    if parts is not None:
        return parts
    if left.op == "const" and left.const == 1 and right.prob:
        # 1 - p is 0 where p rounds to 1: a sigmoid does above x ~ 16.6 in float32 (8.3 in float16).
        rounded = right.op == "clamp" and right.desc.startswith("clamped to at most")
        return Value(op="complement", lo=lo, hi=hi, zero=SATURATION if right.hi >= 1 else NONE,
                     prob=True, half=half, tracked=tracked, node=node,
                     desc=f"one minus a value {right.desc}" if rounded else "one minus a probability")
    if right.op == "min" and _same(right.of, left):
        return Value(op="shift", lo=0.0, hi=ranges.INF, zero=ROUTINE, half=half, tracked=tracked, node=node,
                     desc="a shift by its own minimum")
    if right.op == "max" and _same(right.of, left):
        return Value(op="shift", lo=-ranges.INF, hi=0.0, shifted=True, half=half, tracked=tracked, node=node)
    if left.checked or right.checked:  # `if abs(hi - lo) < eps: return` came first
        return Value(op="sub", lo=lo, hi=hi, half=half, tracked=tracked, node=node)
    if left.op in _LARGER and right.op in _SMALLER and left.of is None and right.of is None:
        # torch.max(a2, b2) - torch.min(a1, b1): the extent enclosing two intervals (GIoU's enclosing box),
        # at least each interval's own extent: 0 only where both are empty at the same point
        return Value(op="extent", lo=0.0, hi=ranges.INF, desc="an enclosing extent", half=half, tracked=tracked,
                     node=node)
    if left.op in _SMALLER and right.op in _LARGER and left.of is None and right.of is None:
        # torch.min(a2, b2) - torch.max(a1, b1): the overlap of two intervals, negative where they are apart
        return Value(op="sub", lo=lo, hi=hi, zero=DEGENERATE, desc="an overlap extent", half=half,
                     tracked=tracked, node=node)
    if left.op in ("max", "min") and right.op in ("max", "min"):
        return Value(op="range", lo=0.0, hi=ranges.INF, zero=DEGENERATE, desc="a max - min range",
                     half=half, tracked=tracked, node=node)
    if right.op == "const" and right.const is not None and right.const <= 0:
        return _add(left, constant(-right.const), node, half)
    if left.op == "const" or right.op == "const":
        return Value(op="sub", lo=lo, hi=hi, half=half, unbounded=left.unbounded, tracked=tracked, node=node)
    if left.op in _DRAWS or right.op in _DRAWS:
        # a fresh sample from a continuous distribution equals anything independent of it with
        # probability 0 (`target - origin` with `target = 0.3 * torch.randn(n, 3)`)
        return Value(op="sub", lo=lo, hi=hi, half=half, unbounded=left.unbounded or right.unbounded,
                     tracked=tracked, node=node)
    # x - x.mean(): 0 only where x is constant along the axis (a spread, not a distance between points)
    centred = right.op == "mean" and _same(right.of, left)
    # Two values: exactly 0 where they are equal (a distance between identical points).
    return Value(op="sub", lo=lo, hi=hi, zero=DEGENERATE, desc="a deviation from the mean" if centred else DIFFERENCE,
                 half=half, unbounded=left.unbounded or right.unbounded, tracked=tracked, node=node)


def root_desc(radicand: Value) -> str:
    return "a Euclidean distance" if radicand.squared_distance else "a square root"


def _norms(value: Value) -> bool:
    """|a| |b|, possibly guarded (`+ eps`, `.clamp(min=eps)`)."""
    return value.op == "norm_product" or (value.of is not None and value.of.op == "norm_product")


def _same(reduced: Value | None, value: Value) -> bool:
    """`x.min()` / `x.max()` reduced this very value (or a detached view of it)."""
    if reduced is None or value is NOTHING:
        return False
    return reduced is value or (value.node is not None and reduced.node is value.node) or (
        reduced.of is value and value.node is None)


def _multiply(left: Value, right: Value, left_node, right_node, node, half: bool) -> Value:
    if left is right and left is not NOTHING or (
        isinstance(left_node, cst.Name) and isinstance(right_node, cst.Name) and left_node.value == right_node.value
    ):
        return square(left, node, half)
    for scaled, name, value in ((left_node, right_node, right), (right_node, left_node, left)):
        factor = _scale_of(scaled, name)
        if factor is not None:  # `2 * std * std`: a square times a positive number
            squared = square(value, node, half)
            lo, hi = ranges.multiply(squared.span, (factor, factor), half)
            return squared.but(lo=lo, hi=hi)
    for scale, other in ((left, right), (right, left)):
        if scale.op == "const" and scale.const is not None and scale.const > 0 and other is not NOTHING:
            lo, hi = ranges.multiply(other.span, scale.span, half)
            return other.but(lo=lo, hi=hi, node=node, const=None, prob=False, eps=None)
    lo, hi = ranges.multiply(left.span, right.span, half)
    if left.op == "norm" and right.op == "norm":  # |a| |b|: the denominator of a cosine written out
        return Value(op="norm_product", lo=0.0, hi=ranges.INF, zero=min(left.zero, right.zero), desc="a norm",
                     half=half, tracked=tracked_of(left, right), node=node)
    if left.op == "normalize" and right.op == "normalize":  # elementwise products of two unit vectors
        return Value(op="unit_product", lo=-ranges.COSINE_BOUND, hi=ranges.COSINE_BOUND, half=half,
                     tracked=tracked_of(left, right), node=node)
    for mask, exp in ((left, right), (right, left)):
        if mask.op == "mask" and exp.op == "exp":
            # exp(x) * mask: a masked exp, still exp of x where the mask is 1 (a hand-written masked softmax)
            return exp.but(lo=min(0.0, exp.lo), zero=ROUTINE, node=node, tracked=tracked_of(left, right),
                           half=half, desc="a masked exp")
    for weight, component in ((left, right), (right, left)):
        if weight.prob and component.op == "softmax":
            # p * softmax(a): one weighted component of a mixture of distributions (see _add)
            return Value(op="weighted", lo=lo, hi=hi, zero=max(left.zero, right.zero), prob=True,
                         desc="a weighted softmax output", half=half, tracked=tracked_of(left, right),
                         of=component, node=node)
    masked = (left.op == "mask") != (right.op == "mask")
    desc = "a value times a boolean mask (0 wherever the mask is false)" if masked else left.desc or right.desc
    return Value(op="mul", lo=lo, hi=hi, zero=max(left.zero, right.zero), desc=desc,
                 half=half, unbounded=left.unbounded or right.unbounded, tracked=tracked_of(left, right),
                 node=node)


def _divide(left: Value, right: Value, node, half: bool) -> Value:
    if left.op in ("sum", "matmul") and _norms(right):
        # a . b / (|a| |b|) (+ eps, or clamped): the cosine of the angle between a and b
        return cosine(node, half, tracked_of(left, right))
    if left.lo >= 0 and right.op in ("max", "amax", "add") and right.of is not None and _same(right.of, left):
        # x / x.max() (+ eps) of a nonnegative x: at most 1 (0 / 0 where x is all zero is the divisor's matter)
        return Value(op="div", lo=0.0, hi=1.0, zero=left.zero, desc=left.desc if left.zero else "", half=half,
                     tracked=tracked_of(left, right), node=node)
    if right.op == "const" and right.const and right.const > 0:
        lo, hi = ranges.divide(left.span, right.span, half)
        return left.but(lo=lo, hi=hi, node=node, const=None, eps=None, prob=False) if left is not NOTHING \
            else NOTHING
    lo, hi = ranges.divide(left.span, right.span, half)
    return Value(op="div", lo=lo, hi=hi, zero=left.zero, desc=left.desc if left.zero else "", half=half,
                 unbounded=left.unbounded, tracked=tracked_of(left, right), node=node)


def _power(base: Value, exponent: Value, node, half: bool) -> Value:
    power = exponent.const if exponent.op == "const" else None
    if power is None:
        return Value(half=half, tracked=tracked_of(base, exponent), node=node)
    if power > 0 and power == int(power) and int(power) % 2 == 0:
        return square(base, node, half)
    lo, hi = ranges.power(base.span, power, half)
    if power == 0.5:
        return Value(op="sqrt", lo=lo, hi=hi, zero=base.zero, desc=root_desc(base), half=half,
                     tracked=base.tracked, of=base, node=node)
    return Value(op="pow", lo=lo, hi=hi, zero=base.zero if power > 0 else NONE, half=half,
                 tracked=base.tracked, node=node)


def negate(inner: Value, node) -> Value:
    if inner.kind:
        return NOTHING
    if inner.op == "const" and inner.const is not None:
        return constant(-inner.const, node)
    lo, hi = ranges.negate(inner.span)
    return Value(op="neg", lo=lo, hi=hi, zero=inner.zero, unbounded=inner.unbounded, half=inner.half,
                 tracked=inner.tracked, node=node)
