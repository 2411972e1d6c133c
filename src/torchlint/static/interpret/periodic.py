"""Which conditions in a loop pass only every k-th iteration.

`if (i + 1) % k == 0:` and `if step % k:` test the iteration count modulo something;
`need_update = last or (i + 1) % k == 0` makes `if need_update:` the same test; `if n < k: continue`
is periodic when `n` counts iterations (`n += 1`) or samples (`n += x.shape[0]`) and is set back
to a constant in the loop (`n = 0` after the step), and so is `if ni - last >= k:` when `last = ni` is set in the loop. A
warm-up test (`if step > warmup:`) or a flag (`if loss is not None:`) is not: past the warm-up or
with the flag set, it passes every iteration.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.scopes import Body

_BLOCKS = (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar)


def is_periodic(ctx: FileContext, loop: Body, test: cst.BaseExpression) -> bool:
    """Whether an if-test inside `loop` passes only on some iterations, by the iteration count."""
    if _has_modulo(test):
        return True
    names = periodic_names(ctx, loop)
    if not names:
        return False
    if any(name in names for name in _dotted_names(test)):
        return True
    return any(f"{_dotted(n.left)}-{_dotted(n.right)}" in names for n in _walk(test)
               if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Subtract))


def periodic_names(ctx: FileContext, loop: Body) -> frozenset[str]:
    """Names assigned in the loop body from a periodic expression, and iteration counters the body resets."""
    cache = ctx.memo.setdefault("periodic_names", {})
    found = cache.get(id(loop))
    if found is None:
        assigned: list[tuple[str, cst.BaseExpression]] = []
        counted: set[str] = set()
        reset: set[str] = set()
        _scan(loop.node.body, assigned, counted, reset)
        names = _closure(counted & reset, assigned, _has_modulo)
        # `if ni - last_opt_step >= accumulate:` with `last_opt_step = ni` under it: iterations since the
        # last step, where `ni` counts iterations (the loop index, a `+= 1` name, or computed from them).
        counters = _closure(counted | _loop_index(loop.node), [(n, v) for n, v in assigned if not _dotted(v)],
                            lambda _value: False)
        marks = {name for name, value in assigned if _dotted(value) in counters and name not in counters}
        names |= {f"{counter}-{mark}" for counter in counters for mark in marks}
        found = cache[id(loop)] = frozenset(names)
    return found


def _closure(names: set[str], assigned, seed) -> set[str]:
    """`names` with every name assigned from an expression that reads one (or that `seed` accepts)."""
    names = set(names)
    reads = [(name, seed(value), _dotted_names(value)) for name, value in assigned]
    changed = True
    while changed:
        changed = False
        for name, seeded, read in reads:
            if name not in names and (seeded or not read.isdisjoint(names)):
                names.add(name)
                changed = True
    return names


def _loop_index(node) -> set[str]:
    """`i` of `for i, x in enumerate(...)` / `for i in range(...)` (also wrapped: `tqdm(enumerate(...))`)."""
    if not isinstance(node, cst.For):
        return set()
    calls = {_dotted(n.func).rsplit(".", 1)[-1] for n in _walk(node.iter) if isinstance(n, cst.Call)}
    target = node.target
    if "enumerate" in calls and isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        target = target.elements[0].value
    elif "range" not in calls:
        return set()
    name = _dotted(target)
    return {name} if name else set()


def _walk(node):
    """The sub-expressions of an expression, through the forms conditions are written with (not
    libcst's `children`, which rebuilds every node it visits)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, (cst.BinaryOperation, cst.BooleanOperation)):
            stack += (current.left, current.right)
        elif isinstance(current, cst.Comparison):
            stack.append(current.left)
            stack += (target.comparator for target in current.comparisons)
        elif isinstance(current, cst.UnaryOperation):
            stack.append(current.expression)
        elif isinstance(current, cst.Call):
            stack.append(current.func)
            stack += (arg.value for arg in current.args)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        elif isinstance(current, cst.Subscript):
            stack.append(current.value)
            stack += (e.slice.value for e in current.slice if isinstance(e.slice, cst.Index))
        elif isinstance(current, (cst.Tuple, cst.List)):
            stack += (element.value for element in current.elements)
        elif isinstance(current, cst.IfExp):
            stack += (current.test, current.body, current.orelse)
        elif isinstance(current, cst.NamedExpr):
            stack.append(current.value)


def _has_modulo(node) -> bool:
    return any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
               and not isinstance(n.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
               for n in _walk(node))


def _dotted_names(node) -> set[str]:
    """Every name and attribute chain an expression reads: `self.step` (and `self`), `i`."""
    found = set()
    for current in _walk(node):
        if isinstance(current, (cst.Name, cst.Attribute)):
            name = _dotted(current)
            if name:
                found.add(name)
    return found


def _scan(block, assigned, counted, reset) -> None:
    """Assignments in a loop body and the blocks nested in it (not in functions defined there)."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for statement in statements:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                _small(small, assigned, counted, reset)
        elif isinstance(statement, _BLOCKS):
            for child in _blocks_of(statement):
                _scan(child, assigned, counted, reset)


def _blocks_of(statement) -> list:
    blocks = [statement.body]
    if isinstance(statement, (cst.Try, cst.TryStar)):
        blocks.extend(handler.body for handler in statement.handlers)
        if statement.finalbody is not None:
            blocks.append(statement.finalbody.body)
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.If):
        blocks.extend(_blocks_of(orelse))
    elif orelse is not None:
        blocks.append(orelse.body)
    return blocks


def _small(small, assigned, counted, reset) -> None:
    if isinstance(small, cst.Assign):
        for target in small.targets:
            name = _dotted(target.target)
            if name:
                assigned.append((name, small.value))
                if isinstance(small.value, cst.Integer):
                    reset.add(name)
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        name = _dotted(small.target)
        if name:
            assigned.append((name, small.value))
    elif isinstance(small, cst.AugAssign) and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)) \
            and (isinstance(small.value, (cst.Integer, cst.Name, cst.Attribute)) or _size(small.value)):
        name = _dotted(small.target)
        if name:
            counted.add(name)


def _size(node) -> bool:
    """A count of samples: `x.shape[0]`, `x.size(0)`, `len(batch)`, `y.numel()` (a counter of samples
    set back after each step passes its threshold only on some iterations)."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
        return node.value.attr.value == "shape"
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return name in ("len", "size", "numel")
    return False


def _dotted(node) -> str:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return ""
    parts.append(node.value)
    return ".".join(reversed(parts))
