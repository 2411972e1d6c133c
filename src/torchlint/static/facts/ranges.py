"""Sound value ranges in float32 or float16: what an op can produce from its inputs' ranges.

Every bound is rounded to the value's dtype, so underflow to exactly 0 and overflow to inf are
visible: the sigmoid of an unbounded input reaches 0.0 and 1.0 in float32, the sigmoid of an
input clamped to [-10, 10] stays within [4.5e-05, 0.99995], and `x + 1e-9` in float16 is still 0
where x is 0. A range is a bound, never evidence by itself: (-inf, inf) is what nothing is known.
"""

from __future__ import annotations

import math
import struct

INF = math.inf
Range = tuple[float, float]
EVERYTHING: Range = (-INF, INF)


def as_dtype(x: float, half: bool = False) -> float:
    """x rounded to float16 or float32: overflow gives inf, underflow gives 0."""
    if math.isinf(x) or math.isnan(x):
        return x
    code = "e" if half else "f"
    try:
        return struct.unpack(code, struct.pack(code, x))[0]
    except (OverflowError, struct.error):
        return math.copysign(INF, x)


def smallest(half: bool = False) -> float:
    """The smallest positive number of the dtype (a subnormal)."""
    return 2.0 ** -24 if half else 2.0 ** -149


def below_one(half: bool = False) -> float:
    """The largest number of the dtype below 1 (1 - 5.96e-8 in float32, 1 - 4.9e-4 in float16)."""
    return 1.0 - (2.0 ** -11 if half else 2.0 ** -24)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def _sigmoid(x: float) -> float:
    if x == -INF:
        return 0.0
    if x == INF:
        return 1.0
    return 1.0 / (1.0 + _exp(-x))


def _pow(x: float, exponent: float) -> float:
    try:
        return x ** exponent if x != INF else INF
    except OverflowError:  # 1e300 ** 2
        return INF


def monotone(function, r: Range, half: bool) -> Range:
    """The range of an increasing function, rounded to the dtype."""
    return as_dtype(function(r[0]), half), as_dtype(function(r[1]), half)


def exp(r: Range, half: bool) -> Range:
    return monotone(_exp, r, half)


def sigmoid(r: Range, half: bool) -> Range:
    return monotone(_sigmoid, r, half)


def tanh(r: Range, half: bool) -> Range:
    return monotone(math.tanh, r, half)


def softplus(r: Range, half: bool) -> Range:
    def function(x: float) -> float:
        if x == INF or x > 20:
            return x  # torch returns x itself above its threshold
        return math.log1p(_exp(x))
    return monotone(function, r, half)


def log(r: Range, half: bool) -> Range:
    def function(x: float) -> float:
        return -INF if x <= 0 else (INF if x == INF else math.log(x))
    return monotone(function, r, half)


def sqrt(r: Range, half: bool) -> Range:
    return monotone(lambda x: math.sqrt(max(x, 0.0)) if x != INF else INF, r, half)


def relu(r: Range) -> Range:
    return max(r[0], 0.0), max(r[1], 0.0)


def absolute(r: Range) -> Range:
    lo, hi = r
    if lo >= 0:
        return r
    if hi <= 0:
        return -hi, -lo
    return 0.0, max(-lo, hi)


def square(r: Range, half: bool) -> Range:
    lo, hi = absolute(r)
    return as_dtype(lo * lo, half), as_dtype(hi * hi, half)


def clamp(r: Range, low: float | None, high: float | None, half: bool = False) -> Range:
    """The bounds are stored in the value's dtype: a clamp to 1 - 1e-8 is a clamp to 1.0 in float32."""
    lo, hi = r
    low = as_dtype(low, half) if low is not None else None
    high = as_dtype(high, half) if high is not None else None
    if low is not None:
        lo, hi = max(lo, low), max(hi, low)
    if high is not None:
        lo, hi = min(lo, high), min(hi, high)
    return lo, hi


def add(a: Range, b: Range, half: bool) -> Range:
    return as_dtype(_sum(a[0], b[0], -INF), half), as_dtype(_sum(a[1], b[1], INF), half)


def negate(r: Range) -> Range:
    return -r[1], -r[0]


def subtract(a: Range, b: Range, half: bool) -> Range:
    return add(a, negate(b), half)


def multiply(a: Range, b: Range, half: bool) -> Range:
    products = [_product(x, y) for x in a for y in b]
    return as_dtype(min(products), half), as_dtype(max(products), half)


def divide(a: Range, b: Range, half: bool) -> Range:
    lo, hi = b
    if lo <= 0 <= hi:
        # a divisor of one sign keeps the quotient's sign (0 / 0 aside): -x**2 / (2 * s**2) <= 0
        if lo >= 0 or hi <= 0:
            if a[0] >= 0:
                return (0.0, INF) if lo >= 0 else (-INF, 0.0)
            if a[1] <= 0:
                return (-INF, 0.0) if lo >= 0 else (0.0, INF)
        return EVERYTHING
    inverse = (1.0 / hi if hi != INF else 0.0, 1.0 / lo if lo != -INF else 0.0)
    return multiply(a, (min(inverse), max(inverse)), half)


def power(r: Range, exponent: float, half: bool) -> Range:
    if exponent == 2:
        return square(r, half)
    if exponent == 0.5:
        return sqrt(r, half)
    if r[0] >= 0 and exponent > 0:
        return monotone(lambda x: _pow(x, exponent), r, half)
    return EVERYTHING


def total(r: Range) -> Range:
    """A sum of one or more elements each within r."""
    lo, hi = r
    return (lo if lo >= 0 else -INF, hi if hi <= 0 else INF)


def contains_zero(r: Range) -> bool:
    return r[0] <= 0 <= r[1]


def _sum(x: float, y: float, nan_as: float) -> float:
    result = x + y
    return nan_as if math.isnan(result) else result


def _product(x: float, y: float) -> float:
    if x == 0 or y == 0:
        return 0.0
    return x * y


# A cosine computed in floating point: +-1 for parallel vectors, and a rounding step beyond it
COSINE_BOUND = 1.0 + 1e-6
