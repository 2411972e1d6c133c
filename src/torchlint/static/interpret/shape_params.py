"""Shapes across calls: a parameter passed tensors of one rank but different dims gets placeholders
(`forward.x#0`), which each call's result replaces with its own argument's dims."""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts import shapes
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.interpret.scopes import Body


def generic_shape(param: str, passed: list) -> shapes.Shape | None:
    """A parameter's shape over the calls that pass it tensors of one rank: the dims they agree on,
    and a placeholder (`forward.x#0`) for each other one, which a call's result replaces with the
    argument's own dim (see `specialised`)."""
    if not passed or any(shape is None for shape in passed) or len({len(shape) for shape in passed}) != 1:
        return None
    first = passed[0]
    if all(shape == first for shape in passed):
        return None  # the joined value keeps it
    return tuple(dim if all(shape[index] == dim for shape in passed) else f"{param}#{index}"
                 for index, dim in enumerate(first))


def specialised(shape: shapes.Shape | None, function, args: list[Value], kwargs: dict[str, Value],
                bound: bool) -> shapes.Shape | None:
    """A call's result shape with the callee's placeholders replaced by the arguments' dims; a
    placeholder not resolved becomes an unknown dim."""
    if shape is None or not any(isinstance(dim, str) and "#" in dim for dim in shape):
        return shape
    names = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if bound:
        names = names[1:]
    passed = dict(zip(names, args, strict=False))
    passed.update(kwargs)
    prefix = function.name.value + "."
    out = []
    for dim in shape:
        if isinstance(dim, str) and dim.startswith(prefix) and "#" in dim:
            name, _, index = dim[len(prefix):].rpartition("#")
            value = passed.get(name)
            known = value.shape if value is not None and not value.kind else None
            out.append(known[int(index)] if known is not None and int(index) < len(known) else None)
        elif isinstance(dim, str) and "#" in dim:
            out.append(None)
        else:
            out.append(dim)
    return tuple(out)


def called_function(callee: Value) -> cst.FunctionDef | None:
    """The function a local call runs: the function itself, or a model instance's forward."""
    target = callee
    if callee.kind == "instance" and callee.cls is not None:
        target = callee.cls.methods.get("forward") or callee.cls.methods.get("__call__") or NOTHING
    body = target.body if target.kind == "function" else None
    return body.node if isinstance(body, Body) and isinstance(body.node, cst.FunctionDef) else None
