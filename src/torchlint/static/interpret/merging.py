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
            if _stored(name) and name not in before:
                continue  # `self.x` stored on one path only: on the other it holds whatever it held
            merged[name] = value
        elif other is not value:
            merged[name] = _fuller(value, other) or join(value, other)
    for name, value in second.items():
        if name in before and name not in first and before[name] is not value:
            merged[name] = _fuller(before[name], value) or join(before[name], value)
        elif _stored(name) and name not in before and name not in first:
            del merged[name]
    return merged


def _stored(name: str) -> bool:
    """A tensor stored on an object (`self.x`, see frames.stored_key), not a local name."""
    return "." in name


def _fuller(a: Value, b: Value) -> Value | None:
    """The other side where one side is the number 0 it started from: a zero buffer filled with exps or
    masks (`out[i] = exp(s)` in a loop or a branch: what a later normalisation divides, or counts), or a
    sum with history (`total = 0.0`, then `total = total + loss`: the 0 stays only where nothing was added)."""
    for empty, full in ((a, b), (b, a)):
        if empty.op != "const" or empty.const != 0 or empty.kind or full.kind:
            continue
        if (full.op in ("exp", "mask") and full.node is None) or (full.op == "add" and full.tracked is True):
            return full
    return None
