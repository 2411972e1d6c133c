"""Writes of tensors with autograd history into state an object keeps from one step to the next.

A method that sets ``self.bank = torch.cat([self.bank, feats])``, ``self.h = self.rnn(x, self.h)[1]``
or ``self.running = m * self.running + (1 - m) * mean``, or writes ``self.queue[:, i:j] = keys``,
``self.ema.mul_(m).add_(x)``, makes the attribute carry this step's graph into the next step. What is
found here is such a write whose value is known to carry history (a module's output, a parameter,
anything computed from one outside ``no_grad``), outside ``no_grad`` (a decorator, a ``with`` block),
in a class whose attribute the file never detaches or resets elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.definitions import GRAD_OFF
from torchlint.static.traverse import children, inner_statements, nodes_of, statements_of

_RESETS = frozenset({"detach", "detach_", "zero_", "fill_", "zeros", "zeros_like", "new_zeros", "empty", "randn",
                     "init_hidden"})


@dataclass
class StateWrite:
    node: cst.CSTNode  # the statement or call that writes
    attr: str
    value: cst.BaseExpression  # what carries the history
    form: str  # "recurrence" (self.a = f(self.a, ...)) | "into" (self.a[...] = v, self.a.copy_(v))


def state_writes(module: cst.Module, ctx) -> list[StateWrite]:
    found: list[StateWrite] = []
    for cls in statements_of(module, (cst.ClassDef,)):
        if not isinstance(cls.body, cst.IndentedBlock):
            continue
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__" or \
                    not method.params.params or _grad_off(method.decorators, ctx):
                continue
            owner = method.params.params[0].name.value
            _Scan(owner, ctx, found).block(method)
    if not found:
        return found
    kept = _reset_elsewhere(module, {id(w.node) for w in found}, ctx)
    return [w for w in found if w.attr not in kept]


class _Scan:
    def __init__(self, owner: str, ctx, found: list[StateWrite]) -> None:
        self.owner = owner
        self.ctx = ctx
        self.found = found

    def block(self, scope) -> None:
        """The statements of a function (or of a compound statement), in source order."""
        for statement in inner_statements(scope):
            self.statement(statement)

    def statement(self, statement) -> None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                self.small(small)
            return
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(statement, cst.With) and any(_is_grad_off(item.item, self.ctx) for item in statement.items):
            return
        self.block(statement)

    def small(self, node) -> None:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self.assignment(target.target, node.value, node)
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            self.in_place(node.value)

    def assignment(self, target, value, node) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):  # `out, self.h = self.rnn(x, self.h)`
            for element in target.elements:
                attr = self._attr(element.value)
                if attr is not None and _mentions(value, self.owner, attr) and self._tracked(value):
                    self.found.append(StateWrite(node, attr, value, "recurrence"))
            return
        attr = self._attr(target)
        if attr is not None:  # self.a = f(self.a, tracked)
            if _mentions(value, self.owner, attr) and self._tracked(value):
                self.found.append(StateWrite(node, attr, value, "recurrence"))
            return
        if isinstance(target, cst.Subscript):
            attr = self._attr(target.value)
            if attr is not None and self._tracked(value):
                self.found.append(StateWrite(node, attr, value, "into"))

    def in_place(self, call: cst.Call) -> None:
        """`self.ema.mul_(m).add_(x)`, `self.queue.copy_(x)`, `self.bank.index_copy_(0, i, x)`: a chain of
        in-place methods whose receiver is the attribute, given a tensor with history."""
        tracked: list = []
        node = call
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value.endswith("_") and not node.func.attr.value.startswith("_"):
            tracked.extend(a.value for a in node.args if self._tracked(a.value))
            node = node.func.value
        attr = self._attr(node) if node is not call else None
        if attr is not None and tracked:
            self.found.append(StateWrite(call, attr, tracked[0], "into"))

    def _attr(self, node) -> str | None:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self.owner:
            return node.attr.value
        return None

    def _tracked(self, value) -> bool:
        """Carries a graph: autograd history, a tensor (not a module), not a new leaf (`nn.Parameter(...)`)."""
        known = self.ctx.value(value)
        if known.tracked is not True or known.kind not in (None, "list"):
            return False
        if isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)):
            qual = self.ctx.qualify(value.func) or ""
            name = value.func.attr.value if isinstance(value.func, cst.Attribute) else value.func.value
            if qual.endswith("Parameter") or name == "Parameter":
                return False
        return True


def _mentions(value, owner: str, attr: str) -> bool:
    return any(isinstance(n.value, cst.Name) and n.value.value == owner and n.attr.value == attr
               for n in nodes_of(value, (cst.Attribute,)))


def _grad_off(decorators, ctx) -> bool:
    return any(_is_grad_off(d.decorator, ctx) for d in decorators)


def _is_grad_off(expression, ctx) -> bool:
    func = expression.func if isinstance(expression, cst.Call) else expression
    return isinstance(func, (cst.Name, cst.Attribute)) and ctx.qualify(func) in GRAD_OFF


def _reset_elsewhere(module: cst.Module, writes: set[int], ctx) -> set[str]:
    """Attributes the file detaches or remakes outside the writes (`model.h = model.h.detach()`,
    `self.hidden = self.init_hidden(b)`, `net.h.detach_()`, `self.bank = torch.zeros(...)`): the
    program cuts the history itself."""
    kept: set[str] = set()
    for node in _outside_init(module):
        if id(node) in writes:
            continue
        if isinstance(node, cst.Assign):
            names = [t.target.attr.value for t in node.targets if isinstance(t.target, cst.Attribute)]
            if names and (_cuts(node.value) or isinstance(node.value, cst.Name) and node.value.value == "None"):
                kept.update(names)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("detach_", "zero_", "fill_") and \
                isinstance(node.func.value, cst.Attribute):
            kept.add(node.func.value.attr.value)
    return kept


def _outside_init(module: cst.Module):
    """The assignments and calls of the module, less those of `__init__` methods (initial values)."""
    stack: list = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef) and node.name.value == "__init__":
            continue
        if isinstance(node, (cst.Assign, cst.Call)):
            yield node
        stack.extend(children(node))


def _cuts(value) -> bool:
    """A value without the old history: `.detach()`, a fresh tensor, `init_hidden(...)`, a tuple of them."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return bool(value.elements) and all(_cuts(e.value) for e in value.elements)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in _RESETS or (isinstance(func, cst.Attribute) and func.attr.value in _RESETS)
