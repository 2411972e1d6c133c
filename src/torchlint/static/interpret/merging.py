"""Where two paths meet (after an `if`, around a loop): what each name holds, one value per name.

Mostly the join of both values (what both agree on). Two patterns keep the fuller side instead, since
the other one is only a start value: a zero buffer and that buffer filled with exps or masks, and a
number 0 and a sum that has history (a loss accumulated in a loop).
"""

from __future__ import annotations

from torchlint.static.facts.values import Value, join


def merge(before: dict[str, Value], first: dict[str, Value], second: dict[str, Value]) -> dict[str, Value]:
    """The names after two paths that started from ``before`` and ended with ``first`` and ``second``."""
    merged = dict(second)
    for name, value in first.items():
        other = second.get(name)
        if other is None:
            merged[name] = value
        elif other is not value:
            merged[name] = _filled(value, other) or _accumulated(value, other) or join(value, other)
    for name, value in second.items():
        if name in before and name not in first and before[name] is not value:
            merged[name] = _filled(before[name], value) or _accumulated(before[name], value) or \
                join(before[name], value)
    return merged


def _filled(a: Value, b: Value) -> Value | None:
    """A zero buffer on one path, that buffer filled with exps or masks on the other (`out[i] = exp(s)`
    in a loop or a branch): the exps are what a later normalisation divides, the mask what it counts."""
    for empty, full in ((a, b), (b, a)):
        if empty.op == "const" and empty.const == 0 and not empty.kind and full.op in ("exp", "mask") and \
                full.node is None:
            return full
    return None


def _accumulated(a: Value, b: Value) -> Value | None:
    """A number 0 on one path, a sum with history on the other (`total = 0.0`, then `total = total +
    loss` in a loop): the accumulated tensor, since the 0 stays only where nothing was added."""
    for empty, full in ((a, b), (b, a)):
        if empty.op == "const" and empty.const == 0 and not empty.kind and full.op == "add" and \
                full.tracked is True and not full.kind:
            return full
    return None
