"""Abstract values: what the static checker knows about an expression's result.

The sign lattice is deliberately small. A hazard is only reported on evidence
(``NONNEG``: a value that is >= 0 and can be exactly 0, such as a sigmoid, a
ReLU or a sum of squares; ``ANY``: a value that can be 0 or negative, such as
a difference). ``UNKNOWN`` never triggers a numerical finding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

UNKNOWN = 0  # nothing known: never reported
ANY = 1  # can be zero or negative (a difference)
NONNEG = 2  # >= 0 and can be exactly zero
POS = 3  # shown strictly positive (exp, softplus, clamp(min>0), + eps)


@dataclass(frozen=True, slots=True)
class Value:
    op: str | None = None  # canonical op that produced the value ("sigmoid", "sum", ...)
    sign: int = UNKNOWN
    desc: str = ""  # "a sigmoid output": used in messages
    prob: bool = False  # in [0, 1]
    half: bool = False  # float16
    unbounded: bool = False  # a linear/matmul output: no upper bound
    shifted: bool = False  # max-subtracted before exp
    zero: bool = False  # known to contain an exact 0 (literal arrays, x - x.min())
    const: float | None = None
    eps: float | None = None  # size of the additive / clamp guard that made it positive
    of: Value | None = None  # the input of a reduction (sum of what?)
    node: Any = None  # the expression that produced the value
    kind: str | None = None  # "module" | "instance" | "class" | "function" | "param" | "list"
    qual: str | None = None  # qualified class name for modules
    returns: Value | None = None  # what calling it yields
    cls: Any = None  # ClassInfo for user classes/instances
    items: tuple[Value, ...] = ()
    body: Any = None  # scopes.Body of a function: what calling it does
    workers: int | None = None  # DataLoader num_workers (0 when not given)

    def but(self, **changes: Any) -> Value:
        return replace(self, **changes)

    @property
    def hazard(self) -> bool:
        """Evidence that the value can be 0 (or negative)."""
        return self.sign in (ANY, NONNEG)


NOTHING = Value()


def constant(number: float, node: Any = None) -> Value:
    if number > 0:
        sign = POS
    elif number == 0:
        sign = NONNEG
    else:
        sign = ANY
    return Value(op="const", sign=sign, const=number, zero=number == 0, node=node)


def join(a: Value, b: Value) -> Value:
    """Merge two reaching definitions, keeping only what both agree on (precision first)."""
    if a is b or a == b:
        return a
    if a.kind or b.kind:
        return a if a.kind == b.kind and a.cls is b.cls and a.qual == b.qual else NOTHING
    if a.sign == b.sign:
        sign = a.sign
    elif a.hazard and b.hazard:
        sign = ANY
    else:
        sign = UNKNOWN
    return Value(
        op=a.op if a.op == b.op else None,
        sign=sign,
        desc=a.desc if a.desc == b.desc else "",
        prob=a.prob and b.prob,
        half=a.half and b.half,
        unbounded=a.unbounded and b.unbounded,
        shifted=a.shifted and b.shifted,
        zero=a.zero and b.zero,
        eps=min(a.eps, b.eps) if a.eps is not None and b.eps is not None else None,
    )
