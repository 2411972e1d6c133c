"""Functions that write into a tensor they were given: the caller's tensor changes under it.

``out = x; out[:, :, :h] = y`` or ``x.mul_(w)`` in a module's ``forward`` modifies the tensor the
caller passed, not a copy. When the caller used that tensor before (a layer saved it for
backward, a residual branch reads it), the write corrupts it. The scan is syntactic and in
statement order: a parameter stops counting once its name is rebound (``x = x.clone()``);
``name = param`` makes an alias. Only writes a tensor takes count: a subscript with a slice,
an ellipsis or several indices (``x[i] = v`` may be a list), an in-place method, ``x += y``.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.frames import positional_names

# in-place tensor methods that overwrite their receiver (a trailing underscore, as torch spells them)
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "record_stream_", "pin_memory_"})
WRITING_OPERATORS = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)
_MAX_STATEMENTS = 400
_BLOCKS = (cst.BaseSuite, cst.BaseStatement, cst.BaseSmallStatement, cst.Else, cst.ExceptHandler, cst.Finally)


def input_writes(function: cst.FunctionDef, bound: bool = True) -> dict[int, list[cst.CSTNode]]:
    """Per positional parameter (0: the first after `self` when `bound`), the statements that write
    into the tensor the caller passed."""
    names = positional_names(function.params)[1 if bound else 0:]
    aliases = {name: index for index, name in enumerate(names)}
    writes: dict[int, list[cst.CSTNode]] = {}
    for statement in _statements(function.body):
        _scan(statement, aliases, writes)
        if not aliases:
            break
    return writes


def assigned_names(function: cst.FunctionDef) -> set[str]:
    """Every name the function binds (assignment, loop or `with` target, augmented assignment)."""
    found: set[str] = set()
    for statement in _statements(function.body):
        found.update(bound_names(statement))
    return found


def bound_names(statement) -> list[str]:
    """The names one statement binds (an assignment's, an augmented or annotated assignment's, a
    loop's or a `with` statement's targets); nothing for other statements."""
    targets = []
    if isinstance(statement, cst.Assign):
        targets = [t.target for t in statement.targets]
    elif isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        targets = [statement.target]
    elif isinstance(statement, cst.For):
        targets = [statement.target]
    elif isinstance(statement, cst.With):
        targets = [item.asname.name for item in statement.items if item.asname is not None]
    return [name for target in targets for name in _names_in(target)]


def _scan(statement, aliases: dict[str, int], writes: dict[int, list[cst.CSTNode]]) -> None:
    if isinstance(statement, cst.Assign):
        for target in statement.targets:
            written = _written_name(target.target)
            if written in aliases:
                writes.setdefault(aliases[written], []).append(statement)
        _method_write(statement.value, statement, aliases, writes)
        source = statement.value.value if isinstance(statement.value, cst.Name) else None
        for target in statement.targets:
            for name in _names_in(target.target):
                if source in aliases and isinstance(target.target, cst.Name):
                    aliases[name] = aliases[source]
                else:
                    aliases.pop(name, None)
    elif isinstance(statement, cst.AugAssign):
        target = statement.target
        name = target.value if isinstance(target, cst.Name) else _written_name(target)
        if name in aliases and (isinstance(statement.operator, WRITING_OPERATORS) or not isinstance(target, cst.Name)):
            writes.setdefault(aliases[name], []).append(statement)
    elif isinstance(statement, cst.Expr):
        _method_write(statement.value, statement, aliases, writes)
    elif isinstance(statement, cst.For):
        for name in _names_in(statement.target):
            aliases.pop(name, None)
    elif isinstance(statement, cst.With):
        for item in statement.items:
            if item.asname is not None:
                for name in _names_in(item.asname.name):
                    aliases.pop(name, None)


def _method_write(value, statement, aliases: dict[str, int], writes: dict[int, list[cst.CSTNode]]) -> None:
    """`x.mul_(w)` as a statement or as an assigned value."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            isinstance(value.func.value, cst.Name) and value.func.value.value in aliases:
        method = value.func.attr.value
        if method.endswith("_") and not method.startswith("_") and method not in _NOT_WRITES:
            writes.setdefault(aliases[value.func.value.value], []).append(statement)


def _written_name(target) -> str | None:
    """`x[:, :h] = v` -> "x": a subscript store a tensor takes (not `x[i] = v`, which a list takes too)."""
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)):
        return None
    elements = target.slice
    tensor_like = len(elements) > 1 or any(
        isinstance(e.slice, cst.Slice) or (isinstance(e.slice, cst.Index) and isinstance(
            e.slice.value, (cst.Ellipsis, cst.Tuple))) for e in elements)
    return target.value.value if tensor_like else None


def _names_in(target) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names_in(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


def _statements(block):
    """Small and compound statements in source order, not entering nested functions or classes."""
    count = 0
    stack = [block]
    ordered = []
    while stack and count < _MAX_STATEMENTS:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not block:
            continue
        if isinstance(node, cst.BaseSmallStatement):
            ordered.append(node)
            count += 1
            continue
        if isinstance(node, (cst.For, cst.While, cst.With, cst.If, cst.Try)) and node is not block:
            ordered.append(node)
            count += 1
        children = [c for c in node.children if isinstance(c, _BLOCKS)]
        stack.extend(reversed(children))
    return ordered
