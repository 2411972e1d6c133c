"""`view`/`reshape` calls that move a named dim instead of splitting or merging neighbours.

After `B, T, C = x.shape`, a reshape of `x` keeps its elements in memory order: it can only split a
dim into several or merge neighbouring dims. `x.view(B, C, T)` (dims in another order) or
`x.reshape(B, n_heads, T, d)` (a new dim between two dims that are neighbours in `x`) regroups the
elements instead of moving the dim: the values of different time steps, channels or heads are
mixed with no error, since the element count matches. The fix is `transpose`/`permute`, or a
reshape that keeps the order followed by one.

Found only where the code says which dim is which: the names unpacked from the reshaped tensor's own
`.shape` / `.size()` in the same function (or from the tensor a `Linear` layer, a dropout or an
activation, or a `chunk`/`split` along the last dim, was applied to: those keep the leading dims),
with no assignment to the tensor or the names in between.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.traverse import inner_statements, nodes_of, simple_statements, statements_of

_RESHAPES = ("view", "reshape")
# modules and methods whose output keeps the leading dims of their input (the last may change)
_KEEPS_LEADING = frozenset({"torch.nn.Linear", "torch.nn.Dropout", "torch.nn.GELU", "torch.nn.ReLU", "torch.nn.SiLU",
                            "torch.nn.Tanh", "torch.nn.LayerNorm", "torch.nn.Identity"})
_LAST_DIM_SPLITS = ("chunk", "split")


@dataclass
class MovedDim:
    call: cst.Call  # the view/reshape
    moved: str  # the dim name that lands elsewhere (`T`)
    between: str  # what the reshape puts next to it (`self.n_heads`), or "" for a swapped order
    unpacked: cst.CSTNode  # the statement that names the dims
    tensor: str  # the tensor the names were unpacked from


# `B, T, C = x.shape` / `b, _, h, w = feats.size()` somewhere in the text
_UNPACKS = re.compile(r"^[ \t]*\w+[ \t]*,[\w \t,]*=[ \t]*[\w.]+\.(?:shape|size\(\))[ \t]*(?:#.*)?$", re.M)


def moved_dims(ctx: FileContext) -> list[MovedDim]:
    source = ctx.source
    if not ((".view(" in source or ".reshape(" in source) and _UNPACKS.search(source)):
        return []
    # the functions that reshape with names among the sizes (`x.view(B, h, T, d)`)
    reshaping = {info.scope.function for info in ctx.calls.values()
                 if info.form == "method" and info.name in _RESHAPES and len(info.args) >= 2
                 and any(isinstance(a, cst.Name) for a in info.args)}
    found: list[MovedDim] = []
    for function in statements_of(ctx.module, (cst.FunctionDef,)):
        if function.name.value in reshaping:
            found.extend(_in_function(ctx, function))
    return found


def _in_function(ctx: FileContext, function: cst.FunctionDef) -> list[MovedDim]:
    shapes: dict[str, tuple[tuple[str | None, ...], cst.CSTNode, str]] = {}  # tensor -> (dim names, where, from)
    found: list[MovedDim] = []
    for statement in simple_statements(inner_statements(function)):
        for call in nodes_of(statement, (cst.Call,)):
            moved = _check(call, shapes)
            if moved is not None:
                found.append(moved)
        _learn(ctx, statement, shapes)
    return found


def _learn(ctx: FileContext, statement, shapes) -> None:
    """Record `B, T, C = x.shape`, derived tensors; forget what an assignment replaces."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        for name in _assigned_names(statement):
            _forget(shapes, name)
        return
    target = statement.targets[0].target
    value = statement.value
    for name in _assigned_names(statement):
        _forget(shapes, name)
    unpacked = _unpacked_from(value)
    if unpacked is not None and isinstance(target, cst.Tuple):
        names = tuple(e.value.value if isinstance(e.value, cst.Name) and e.value.value != "_" else None
                      for e in target.elements)
        if all(isinstance(e, cst.Element) for e in target.elements) and sum(n is not None for n in names) >= 2:
            shapes[unpacked] = (names, statement, unpacked)
        return
    leading = _keeps_leading(ctx, value, shapes)
    if leading is None:
        return
    names, where, origin = leading
    if isinstance(target, cst.Name):
        shapes[target.value] = (names, where, origin)
    elif isinstance(target, cst.Tuple) and _splits_last(value):
        for element in target.elements:
            if isinstance(element.value, cst.Name):
                shapes[element.value.value] = (names, where, origin)


def _assigned_names(statement) -> list[str]:
    names = []
    for node in nodes_of(statement, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
        target = node.target
        for name in nodes_of(target, (cst.Name,)) if not isinstance(target, cst.Name) else (target,):
            names.append(name.value)
    return names


def _forget(shapes, name: str) -> None:
    for tensor in [t for t, (names, _, _) in shapes.items() if t == name or name in names]:
        del shapes[tensor]


def _unpacked_from(value) -> str | None:
    """`x.shape` / `x.size()` of a plain name or attribute: that tensor's code."""
    if isinstance(value, cst.Attribute) and value.attr.value == "shape":
        base = value.value
    elif (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size"
          and not value.args):
        base = value.func.value
    else:
        return None
    return _code(base)


def _code(node) -> str | None:
    """`x` or `self.x` (a name, or one attribute of a name); None for anything else."""
    code = dotted_code(node)
    return code if code is not None and code.count(".") <= 1 else None


def _keeps_leading(ctx: FileContext, value, shapes):
    """The dim names (last one unknown) of a layer's output whose input has named dims."""
    node = value
    if _splits_last(node):
        node = node.func.value
    if not isinstance(node, cst.Call) or len(node.args) != 1:
        return None
    info = ctx.call(node)
    if info is None or info.callee.kind != "module" or info.callee.qual not in _KEEPS_LEADING:
        return None
    source = _code(node.args[0].value)
    if source not in shapes:
        return None
    names, where, origin = shapes[source]
    return (*names[:-1], None), where, origin


def _splits_last(value) -> bool:
    """`t.chunk(3, dim=-1)` / `t.split(C, dim=-1)` (or along dim 2 of a 3-dim tensor: not known, so only -1)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in _LAST_DIM_SPLITS):
        return False
    dims = [a.value for a in value.args if a.keyword is not None and a.keyword.value == "dim"]
    dims += [a.value for a in value.args[1:2] if a.keyword is None]
    return len(dims) == 1 and isinstance(dims[0], cst.UnaryOperation) and isinstance(dims[0].expression, cst.Integer) \
        and dims[0].expression.value == "1" and isinstance(dims[0].operator, cst.Minus)


def _check(call: cst.Call, shapes) -> MovedDim | None:
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in _RESHAPES):
        return None
    tensor = _code(call.func.value)
    if tensor not in shapes:
        return None
    names, where, origin = shapes[tensor]
    args = [a.value for a in call.args if a.keyword is None and a.star == ""]
    if len(args) != len(call.args):
        return None
    if len(args) == 1 and isinstance(args[0], cst.Tuple):
        args = [e.value for e in args[0].elements]
    positions = {name: index for index, name in enumerate(names) if name is not None}
    placed = [(i, positions[a.value]) for i, a in enumerate(args) if isinstance(a, cst.Name) and a.value in positions]
    for (i1, p1), (i2, p2) in zip(placed, placed[1:], strict=False):
        if p2 < p1:
            return MovedDim(call, names[p2], "", where, origin)
        if p2 == p1 + 1 and i2 > i1 + 1:
            inserted = [a for a in args[i1 + 1:i2] if not (isinstance(a, cst.Integer) and a.value == "1")]
            if inserted:
                return MovedDim(call, names[p2], _text(inserted[0]), where, origin)
    return None


def _text(node) -> str:
    return cst.Module([]).code_for_node(node)
