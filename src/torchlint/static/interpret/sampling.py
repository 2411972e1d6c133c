"""Policies: distributions the program samples from, and probabilities picked at an index.

A policy-gradient loss takes `log(pi.gather(1, a))`, the probability the policy gives the action
it took. When the file draws its actions from that same softmax (`Categorical(pi).sample()`,
`torch.multinomial(pi, 1)`, `np.random.choice(n, p=pi)`), each picked probability belongs to an
action that was drawn with it, so it is not the underflowed 0 a class label can meet.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import CallInfo

_DISTRIBUTIONS = frozenset({"Categorical", "OneHotCategorical", "RelaxedOneHotCategorical"})
_THROUGH = frozenset({"squeeze", "unsqueeze", "view", "reshape", "float", "double", "flatten", "clamp",
                      "clamp_min"})


def sampled_distribution(call: CallInfo) -> cst.BaseExpression | None:
    """The probabilities a call draws from: `Categorical(p)` / `Categorical(probs=p)`,
    `torch.multinomial(p, n)`, `p.multinomial(n)`, `np.random.choice(n, p=p)`."""
    qual = call.qual or ""
    if call.form == "method":
        return call.receiver if call.name == "multinomial" else None
    last = qual.rsplit(".", 1)[-1]
    if qual.startswith("torch.distributions") and last in _DISTRIBUTIONS:
        return call.kwargs.get("probs") or (call.args[0] if call.args and "logits" not in call.kwargs else None)
    if qual == "torch.multinomial":
        return call.args[0] if call.args else call.kwargs.get("input")
    if qual == "numpy.random.choice":
        return call.kwargs.get("p")
    return None


def picked_from(node: cst.BaseExpression, assigned: dict[str, list],
                depth: int = 0) -> cst.BaseExpression | None:
    """The distribution `pi` of `pi.gather(1, a)`, `pi[range(n), a]`, or of a name assigned one once
    (``assigned``: `traverse.local_assignments` of the function or module the expression is in):
    entries taken at indices (None: not a pick)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "gather":
            return node.func.value
        return picked_from(node.func.value, assigned, depth) if node.func.attr.value in _THROUGH else None
    if isinstance(node, cst.Subscript):  # an index that is a name or expression, not `[:, 0]`
        if any(isinstance(element.slice, cst.Index) and not isinstance(
                element.slice.value, (cst.Integer, cst.UnaryOperation, cst.Ellipsis)) for element in node.slice):
            return node.value
        return None
    if isinstance(node, cst.Name) and depth < 2:
        values = assigned.get(node.value, [])
        return picked_from(values[0], assigned, depth + 1) if len(values) == 1 and values[0] is not None else None
    return None
