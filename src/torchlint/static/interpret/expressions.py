"""Expressions: what each kind of expression evaluates to, as an abstract value."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.static.facts import ops
from torchlint.static.facts.arith import negate
from torchlint.static.facts.semantics import LENGTH_MASK, MARKER_MASK, PADDING_MASK, RANDOM_MASK
from torchlint.static.facts.values import (
    NONE,
    NOTHING,
    ROUTINE,
    UPDATED_CONSTANT,
    Value,
    constant,
    held_rng,
    join,
)
from torchlint.static.interpret import fixed_values, guards, shaping
from torchlint.static.interpret.frames import Frame, checked_key, params_of, stored_key
from torchlint.static.interpret.marker_settings import is_integer_setting

HALF_DTYPE = Value(kind="dtype", qual="torch.float16", half=True, tracked=False, desc="torch.float16")
# Plain Python objects the interpreter tracks for what they hold, never tensors.
OBJECT_KINDS = frozenset({"dict", "namespace", "argparser", "file"})
STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
TO_TEXT = frozenset({"str", "hex", "oct", "repr", "format"})  # builtins that write a value as text
# reductions that return (values, indices) when given a dim
_VALUES_AND_INDICES = frozenset({"max", "min"})


class Expressions:
    """The expression half of the interpreter (mixed into Walker)."""

    def expr(self, node: cst.BaseExpression) -> Value:
        handler = self._expr.get(type(node))
        value = handler(node) if handler is not None else NOTHING
        if value is None:
            value = NOTHING
        elif value.tracked and self.scope.no_grad:
            value = value.but(tracked=False)  # computed with gradients off
        if value.zero and self.ctx.checked_expressions and isinstance(node, (cst.Call, cst.BinaryOperation)) and \
                checked_key(self.ctx.code(node, 10_000)) in self.frame.env:  # (this function's own names)
            value = value.but(zero=0, eps=None, checked=True)  # the same expression as a checked name's
        self.ctx.values[id(node)] = value
        return value

    def _name(self, node: cst.Name) -> Value:
        return self.frame.lookup(node.value)

    def _float(self, node: cst.Float) -> Value:
        try:
            return constant(float(node.value.replace("_", "")), node)
        except ValueError:
            return NOTHING

    def _attribute(self, node: cst.Attribute) -> Value:
        qual = self.ctx.qualify(node)
        if qual is not None:
            return HALF_DTYPE.but(node=node) if qual in ops.FLOAT16_NAMES else NOTHING
        owner = self.expr(node.value)
        if owner.kind in OBJECT_KINDS:
            return NOTHING  # `args.data` is an option's value, `state.T` no tensor
        attr = node.attr.value
        if owner.cls is not None and owner.kind == "instance":
            stored = self.frame.env.get(stored_key(node.value.value, attr)) if isinstance(node.value, cst.Name) \
                else None
            if stored is not None:
                return stored  # a tensor this function stored on the object before (see walker.bind)
            found = owner.cls.find("attrs", attr)  # set by the class or a base class's __init__
            if found is not None and (found.kind is not None or found.half):
                return found  # numeric state (self.count = 0; self.count += 1) is not tracked; a dtype is
            if found is not None and found.op not in (None, "const") and "__getitem__" in owner.cls.methods:
                return found  # a dataset's arrays, fixed where it is built: what its samples are cut from
            if found is not None and found.shape is not None:
                return Value(shape=found.shape, node=node)  # a tensor it keeps: only its shape is known
        if attr == "shape" and owner.shape is not None and not owner.kind:
            return shaping.dims_list(owner.shape, node)
        frozen = owner.kind is not None and owner.tracked is False  # `.requires_grad_(False)`
        if attr == "weight" and owner.kind == "module" and ops.MODULE_OPS.get(owner.qual or "") == "linear":
            return Value(kind="param", qual="matrix", tracked=not frozen)  # its scale compounds per layer
        if attr in ("weight", "bias"):
            return Value(kind="param", tracked=not frozen)
        if attr == "data":
            return owner.but(tracked=False, shape=owner.shape) if owner is not NOTHING else owner
        if attr == "grad" and owner.kind == "param":
            return Value(kind="grad", tracked=False)
        if attr in ("T", "mT"):
            flipped = owner.shape[::-1] if owner.shape is not None and len(owner.shape) <= 2 and attr == "T" else None
            return owner if flipped == owner.shape else replace(owner, shape=flipped)
        if attr == "real":
            return owner
        if attr == "values" and owner.op in _VALUES_AND_INDICES:
            return owner  # `x.max(dim=1).values`: the reduction's values
        return NOTHING

    def _subscript(self, node: cst.Subscript) -> Value:
        result = self._subscript_value(node)
        base = self.ctx.value(node.value)
        if base.kind == "list" and result is NOTHING:
            if base.items and base.qual != "shape" and all(item is base.items[0] for item in base.items) and \
                    len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                return base.items[0]  # a list of one value (grown by one `append` in a loop): any item is it
            return shaping.list_item(node, base)  # `x.shape[0]`, `batch[1]`: what is known of its shape
        if result.kind or base.kind == "dict":
            return result
        shape = shaping.subscript_shape(self.ctx, node, self.ctx.value(node.value))
        if shape == result.shape:
            return result
        if result is NOTHING:
            return result if shape is None else Value(shape=shape, node=node)
        return replace(result, shape=shape)

    def _subscript_value(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        selected = False
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                index = self.expr(element.slice.value)
                selected = selected or (isinstance(node.value, cst.Name) and node.value.value in index.checks)
        if base.kind == "param":
            return base.but(qual="view", node=node)  # `w[:, j]`: a view of the parameter, still its leaf's
        if base.kind == "dict" and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return stored_item(base, string_key(node.slice[0].slice.value))
        if base.kind == "instance" and base.cls is not None:  # `dataset[0]`: what its __getitem__ returns
            method = base.cls.find("methods", "__getitem__")
            return method.returns if method is not None and method.returns is not None else NOTHING
        if base.kind or base.op in ("const", UPDATED_CONSTANT):
            return NOTHING
        if base is NOTHING:
            return NOTHING
        if selected:  # counts[counts > 0]: only the elements the mask kept
            return base.but(node=node, zero=0, eps=None)
        if base.op == "count" and _counted_by(base.node, node.slice):
            # np.bincount(users)[users]: the bins of values that occur, each counted at least once
            return base.but(node=node, zero=0, eps=None, lo=max(base.lo, 1.0))
        return base.but(node=node)

    def _sequence(self, node) -> Value:
        items = tuple(self.expr(element.value) for element in node.elements)
        return Value(kind="list", items=items, zero=any(item.zero for item in items), node=node,
                     rng=held_rng(items))

    def _dict(self, node: cst.Dict) -> Value:
        keys, items = [], []
        for element in node.elements:
            key = None
            if isinstance(element, cst.DictElement):
                self.expr(element.key)
                key = string_key(element.key)
            keys.append(key)  # a `**other` splat: its keys are unknown
            items.append(self.expr(element.value))
        return Value(kind="dict", items=tuple(items), keys=tuple(keys), node=node)

    def _comparison(self, node: cst.Comparison) -> Value:
        operands = [self.expr(node.left)]
        for target in node.comparisons:
            operands.append(self.expr(target.comparator))
        # `arange(t)[None] < lengths[:, None]`: positions against lengths, a padding mask
        desc = LENGTH_MASK if any(v.op == "arange" for v in operands) or _up_to_first(node, operands) \
            else PADDING_MASK if _not_marker(self.ctx, node, operands) else \
            MARKER_MASK if _marker(self.ctx, node, operands) else \
            RANDOM_MASK if any(v.op == "rand" for v in operands) else "a boolean mask"
        names = tuple(guards.checked_names(node))
        if all(isinstance(t.operator, (cst.Equal, cst.LessThan, cst.LessThanEqual)) for t in node.comparisons):
            names += tuple(f"{name}<=0" for name in names)  # true where the name is 0: `(d2 == 0)`, `d2 < eps`
        shape = None
        if len(operands) == 2 and not isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
            shape = shaping.elementwise(self.ctx, node, operands[0], operands[1])  # `pred == y`: an accuracy
        zero = NONE if self.ctx.enclosing and fixed_values.is_fixed(self.ctx, node) else ROUTINE
        return Value(op="mask", lo=0.0, hi=1.0, zero=zero, desc=desc, tracked=False, node=node,
                     checks=names, shape=shape)

    def _boolop(self, node: cst.BooleanOperation) -> Value:
        self.expr(node.left)
        self.expr(node.right)
        return NOTHING

    def _ifexp(self, node: cst.IfExp) -> Value:
        self.expr(node.test)
        names = guards.checked_names(node.test)
        if not names:
            return _either(self.expr(node.body), self.expr(node.orelse))
        # `nan if var == 0 else x / var`: both branches see the checked value as handled
        saved = {name: self.frame.env.get(name) for name in names}
        self.checked(names)
        try:
            return _either(self.expr(node.body), self.expr(node.orelse))
        finally:
            for name, value in saved.items():
                if value is None:
                    self.frame.env.pop(name, None)
                else:
                    self.frame.env[name] = value

    def _lambda(self, node: cst.Lambda) -> Value:
        outer = self.frame
        self.frame = Frame(outer)
        for param in params_of(node.params):
            self.frame.env[param.name.value] = NOTHING
        try:
            returns = self.expr(node.body)
        finally:
            self.frame = outer
        return Value(kind="function", returns=returns)

    def _comprehension(self, node) -> Value:
        outer = self.frame
        self.frame = Frame(outer)
        try:
            clause = node.for_in
            while clause is not None:
                iterable = self.expr(clause.iter)
                self.bind(clause.target, Value(kind="param") if iterable.kind == "params" else NOTHING)
                for condition in clause.ifs:
                    self.expr(condition.test)
                clause = clause.inner_for_in
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)
        finally:
            self.frame = outer
        return NOTHING

    def _namedexpr(self, node: cst.NamedExpr) -> Value:
        value = self.expr(node.value)
        self.bind(node.target, value)
        return value

    def _yield(self, node: cst.Yield) -> Value:
        if isinstance(node.value, cst.From):
            self.expr(node.value.item)
        elif node.value is not None:
            self.expr(node.value)
        return NOTHING

    def _fstring(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.expr(part.expression)
                self.as_text(part.expression)
        return NOTHING

    def as_text(self, node: cst.BaseExpression) -> None:
        """``node`` is written straight into a string (an f-string, `'%x' % v`, `str(v)`): a name or a
        label. (A value bound to a name first may be used as a number too: not marked.)"""
        self.ctx.as_text.add(id(node))

    def _unary(self, node: cst.UnaryOperation) -> Value:
        inner = self.expr(node.expression)
        if isinstance(node.operator, cst.Minus):
            negated = negate(inner, node)
            return negated if negated.shape == inner.shape or negated.kind else replace(negated, shape=inner.shape)
        if isinstance(node.operator, cst.BitInvert) and inner.op == "mask":
            return inner.but(node=node, checks=(), desc="a boolean mask", shape=inner.shape)  # `~pad`: the other positions
        return NOTHING

    def _binop(self, node: cst.BinaryOperation) -> Value:
        self.events.append((1, node))
        if self.scope.fp16 or ((self.scope.no_grad or self.scope.gates) and isinstance(node.operator, cst.Divide)):
            self.ctx.scopes[id(node)] = self.scope  # what TL122 and TL106 ask; other binops' scopes are unused
        left = self.expr(node.left)
        right = self.expr(node.right)
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, STRINGS):
            for part in node.right.elements if isinstance(node.right, cst.Tuple) else ():
                self.as_text(part.value)
            self.as_text(node.right)
        result = self._arith_value(type(node.operator).__name__, left, right, node.left, node.right, node)
        if result.kind:
            return result
        shape = shaping.binop_shape(self.ctx, node, left, right)
        return result if shape == result.shape else replace(result, shape=shape)


def _not_marker(ctx, node: cst.Comparison, operands: list[Value]) -> bool:
    """`ids != PAD`, `labels != -100`, `labels != self.ignore_index` (an integer setting): the positions
    that do not hold a padding or ignore marker; `ignored == 0` of a mask of the positions that do."""
    if len(node.comparisons) != 1:
        return False
    operator = node.comparisons[0].operator
    if isinstance(operator, cst.Equal):
        return operands[0].desc == MARKER_MASK and operands[1].op == "const" and operands[1].const == 0
    return isinstance(operator, cst.NotEqual) and _marker_value(ctx, node.comparisons[0].comparator, operands[1])


def _marker(ctx, node: cst.Comparison, operands: list[Value]) -> bool:
    """`labels == self.ignore_index`: the positions that hold the marker."""
    return len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, cst.Equal) and \
        _marker_value(ctx, node.comparisons[0].comparator, operands[1])


def _marker_value(ctx, node, value: Value) -> bool:
    return (value.op == "const" and value.const is not None) or is_integer_setting(ctx, node)


def _up_to_first(node: cst.Comparison, operands: list[Value]) -> bool:
    """`cumsum(is_eos, dim) <= 1`: the positions up to the first marked one, so the first position
    of every row is in the mask, as in a length mask."""
    if len(node.comparisons) != 1 or not isinstance(node.left, cst.Call):
        return False
    func = node.left.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    operator = node.comparisons[0].operator
    bound = operands[1].const if operands[1].op == "const" else None
    return name == "cumsum" and bound is not None and (
        (isinstance(operator, cst.LessThanEqual) and bound >= 1) or (isinstance(operator, cst.LessThan) and bound > 1))


def _either(body: Value, orelse: Value) -> Value:
    """`a if c else b`: the join, except that a dtype that is float16 on one path stays float16
    (what the float16 rules ask is whether that path exists)."""
    if HALF_DTYPE.kind in (body.kind, orelse.kind):
        return body if body.kind == HALF_DTYPE.kind else orelse
    return join(body, orelse)


def stored_item(mapping: Value, key: str | None) -> Value:
    """`d["k"]`: the value last stored under the literal key, unless a store under a key not known
    (`d[name] = v`) came after it."""
    if key is None:
        return NOTHING
    for index in range(len(mapping.keys) - 1, -1, -1):
        if mapping.keys[index] == key:
            return mapping.items[index] if index < len(mapping.items) else NOTHING
        if mapping.keys[index] is None:
            return NOTHING
    return NOTHING


def string_key(node) -> str | None:
    """The text of a plain string literal (`"args"`), else None."""
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        return text if isinstance(text, str) else None
    return None


def _counted_by(call, index) -> bool:
    """`bincount(x, ...)` indexed by `x` itself."""
    if not isinstance(call, cst.Call) or not call.args or len(index) != 1 or \
            not isinstance(index[0].slice, cst.Index):
        return False
    func = call.func
    if (func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")) != "bincount":
        return False
    counted, picked = call.args[0].value, index[0].slice.value
    return isinstance(counted, cst.Name) and isinstance(picked, cst.Name) and counted.value == picked.value
