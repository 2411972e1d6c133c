"""Shapes across calls: a parameter passed tensors of one rank but different dims gets placeholders
(`forward.x#0`), which each call's result replaces with its own argument's dims."""

from __future__ import annotations

import re
from dataclasses import replace

import libcst as cst

from torchlint.static.facts import shapes
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.scopes import Body
from torchlint.static.interpret.shaping import size_dim
from torchlint.static.traverse import nodes_of, target_names


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


def specialised(ctx, shape: shapes.Shape | None, function: cst.FunctionDef, args: list[Value],
                kwargs: dict[str, Value], nodes: dict, keyword_nodes: dict, bound: bool) -> shapes.Shape | None:
    """A call's result shape in the caller's terms: the callee's placeholders and the sizes named by
    its parameters become the arguments' dims; sizes named by its local variables become unknown (the
    same name may mean another size in the caller)."""
    if shape is None or not any(isinstance(dim, str) for dim in shape):
        return shape
    names = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if bound:
        names = names[1:]
    passed = dict(zip(names, args, strict=False))
    passed.update(kwargs)
    written = {name: nodes.get(index) for index, name in enumerate(names)}  # the argument expressions
    written.update(keyword_nodes)
    params = {p.name.value for p in params_of(function.params)}
    local = _local_names(ctx, function) | params
    prefix = function.name.value + "."
    out = []
    for dim in shape:
        if not shapes.is_symbol(dim) or dim in (shapes.BATCH, shapes.UNBATCHED):
            out.append(dim)
        elif dim.startswith(prefix) and "#" in dim:
            name, _, index = dim[len(prefix):].rpartition("#")
            value = passed.get(name)
            known = value.shape if value is not None and not value.kind else None
            out.append(known[int(index)] if known is not None and int(index) < len(known) else None)
        elif "#" in dim:
            out.append(None)
        else:
            root = _ROOT.match(dim)
            root = root.group(0) if root else ""
            if root == "self" or root not in local:
                out.append(dim)  # an attribute of the instance, a module-level name: the same in the caller
            elif dim == root and written.get(root) is not None:
                out.append(size_dim(ctx, written[root]))  # the size the argument names (`args.dim`, 16)
            else:
                out.append(None)
    return tuple(out)


def specialised_value(ctx, result: Value, function: cst.FunctionDef, args: list[Value],
                      kwargs: dict[str, Value], nodes: dict, keyword_nodes: dict, bound: bool) -> Value:
    """`specialised` for a call's result, or each item of a tuple it returns."""
    if result.kind == "list":
        items = tuple(specialised_value(ctx, item, function, args, kwargs, nodes, keyword_nodes, bound)
                      if item.shape else item for item in result.items)
        return result if all(a is b for a, b in zip(items, result.items, strict=True)) else replace(result, items=items)
    if result.kind or result.shape is None:
        return result
    shape = specialised(ctx, result.shape, function, args, kwargs, nodes, keyword_nodes, bound)
    return result if shape == result.shape else replace(result, shape=shape)


_ROOT = re.compile(r"[A-Za-z_]\w*")


def _local_names(ctx, function: cst.FunctionDef) -> set[str]:
    """The names a function assigns (its locals), computed once per function."""
    memo = ctx.memo.setdefault("function locals", {})
    found = memo.get(id(function))
    if found is None:
        found = set()
        for node in nodes_of(function.body, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            found.update(name.value for target in targets for name in target_names(target))
        memo[id(function)] = (function, found)  # the node is kept: its id is never another's
    else:
        found = found[1]
    return found


def called_function(callee: Value) -> cst.FunctionDef | None:
    """The function a local call runs: the function itself, or a model instance's forward."""
    target = callee
    if callee.kind == "instance" and callee.cls is not None:
        target = callee.cls.methods.get("forward") or callee.cls.methods.get("__call__") or NOTHING
    body = target.body if target.kind == "function" else None
    return body.node if isinstance(body, Body) and isinstance(body.node, cst.FunctionDef) else None
