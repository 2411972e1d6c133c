"""Integer settings a comparison tests for: `labels != ignore_index` with `ignore_index=-100`.

A parameter with an integer default, or the attribute `__init__` stores one in (`self.lb_ignore =
ignore_index`, `self.pad = 0`), names one marker value (an ignore label, a padding id). Positions that
do not hold it are the valid ones: a count of them over a whole batch is 0 only when the whole batch
is ignored, the case where PyTorch's own mean-reduced losses return NaN too.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.frames import params_of


def is_integer_setting(ctx, node) -> bool:
    """`ignore_index` or `self.ignore_index` in a function of the file, set from an integer."""
    if isinstance(node, cst.Name):
        return bool(ctx.enclosing) and node.value in _integer_params(ctx.enclosing[-1])
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
            and ctx.classes:
        init = ctx.classes[-1].methods.get("__init__")  # the class being walked
        body = getattr(getattr(init, "body", None), "node", None)
        return isinstance(body, cst.FunctionDef) and node.attr.value in _integer_attributes(ctx, body)
    return False


def _integer(node) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _integer_params(function: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in params_of(function.params) if p.default is not None and _integer(p.default)}


def _integer_attributes(ctx, init: cst.FunctionDef) -> set[str]:
    """Attributes `__init__` sets to an integer literal or to a parameter with an integer default."""
    key = ("integer attributes", id(init))
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = set()
        params = _integer_params(init)
        for line in init.body.body:
            for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                            target.value.value == "self" and (_integer(small.value) or (
                                isinstance(small.value, cst.Name) and small.value.value in params)):
                        found.add(target.attr.value)
    return found
