"""What each canonical op returns, as an abstract value."""

from __future__ import annotations

from torchlint.static.facts import ops
from torchlint.static.facts.arith import square
from torchlint.static.facts.values import NONNEG, POS, UNKNOWN, Value, join


def apply_op(op: str, x: Value, node, rest: list[Value]) -> Value:
    """The value an op returns given its operand `x` (and the other arguments' values)."""
    half = x.half
    if op == "identity":
        return x
    if op == "sigmoid":
        return Value(op=op, sign=NONNEG, prob=True, desc="a sigmoid output", half=half, of=x, node=node)
    if op == "softmax":
        return Value(op=op, sign=NONNEG, prob=True, desc="a softmax output", half=half, of=x, node=node)
    if op == "log_softmax":
        return Value(op=op, half=half, node=node)
    if op == "exp":
        return Value(op=op, sign=POS, of=x, half=half, node=node)
    if op == "softplus":
        return Value(op=op, sign=POS, half=half, node=node)
    if op == "relu":
        return Value(op=op, sign=NONNEG, zero=True, desc="a ReLU output", half=half, of=x, node=node)
    if op == "abs":
        return Value(op=op, sign=NONNEG if x.hazard else UNKNOWN, desc="an absolute value", half=half, node=node)
    if op == "square":
        return square(x, node, half)
    if op == "sqrt":
        return Value(op=op, sign=POS if x.sign == POS else NONNEG, desc="a square root", of=x, half=half,
                     node=node)
    if op == "rsqrt":
        return Value(op=op, sign=POS, of=x, half=half, node=node)
    if op in ("sum", "nansum", "mean", "nanmean"):
        sign = x.sign if x.sign in (POS, NONNEG) else UNKNOWN
        if x.op == "softmax":
            sign = POS  # a softmax sums to 1
        desc = "a sum of squares" if x.op == "square" else ("a count" if x.op == "mask" else f"a {op}")
        kind = "count" if x.op == "mask" and op in ("sum", "nansum") else op.replace("nan", "")
        return Value(op=kind, sign=sign, desc=desc, of=x, half=half, node=node)
    if op == "norm":
        return Value(op=op, sign=POS if x.sign == POS else NONNEG, desc="a norm", of=x, half=half, node=node)
    if op in ("std", "var"):
        desc = "a standard deviation" if op == "std" else "a variance"
        return Value(op=op, sign=NONNEG, desc=desc, of=x, half=half, node=node)
    if op in ("count_nonzero", "bincount"):
        return Value(op="count", sign=NONNEG, desc="a count", node=node)
    if op in ("amax", "amin"):
        return Value(op=op[1:], of=x, sign=x.sign if x.sign == POS else UNKNOWN, node=node)
    if op in ("zeros", "zeros_like"):
        return Value(op="const", sign=NONNEG, const=0.0, zero=True, desc="zeros", node=node)
    if op in ("ones", "ones_like"):
        return Value(op="const", sign=POS, const=1.0, node=node)
    if op == "full" and rest:
        return rest[0].but(node=node)
    if op == "rand":
        return Value(op=op, sign=NONNEG, desc="uniform samples in [0, 1)", node=node)
    if op == "where" and len(rest) >= 2:
        return join(rest[0], rest[1])
    if op == "tanh":
        return Value(op=op, half=half, of=x, node=node)
    if op in ops.LOSS_OPS:
        return Value(op="loss", desc="a loss", half=half, node=node)
    if op in ops.LOG_OPS:
        return Value(op=op, half=half, node=node)
    return Value(op=op, half=half, node=node)
