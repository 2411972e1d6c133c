"""One traversal per file: an abstract interpreter over statements in source order.

It tracks, per scope, what each name holds (``p = torch.sigmoid(z)`` makes ``p``
a probability that can be 0), resolves every call to a canonical op, and hands
calls and binary operations to the enabled rules in pre-order, so a rule that
owns a whole expression (hand-written BCE) can claim the sub-expressions before
the narrower rules see them. Branches are merged keeping only what every path
agrees on; loops are walked once. Dispatch is by node type through dicts: no
LibCST visitor and no metadata, which would cost as much as the parse itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import libcst as cst

from torchlint.static import ops
from torchlint.static.arith import arith, square
from torchlint.static.context import CallInfo, FileContext
from torchlint.static.scopes import MODULE_SCOPE, Body, Mark, Scope
from torchlint.static.semantics import apply_op
from torchlint.static.values import ANY, NONNEG, NOTHING, POS, UNKNOWN, Value, constant, join


@dataclass
class ClassInfo:
    name: str
    bases: list[str]
    attrs: dict[str, Value] = field(default_factory=dict)
    methods: dict[str, Value] = field(default_factory=dict)

    @property
    def grad_disabled(self) -> bool:
        """A custom torch.autograd.Function runs its forward and backward with grad mode off."""
        return any(base in ("torch.autograd.Function", "torch.autograd.function.Function") for base in self.bases)

    def call_result(self) -> Value:
        method = self.methods.get("forward") or self.methods.get("__call__")
        return method.returns if method is not None and method.returns is not None else NOTHING


class Frame:
    __slots__ = ("env", "parent", "returns", "self_value")

    def __init__(self, parent: Frame | None, self_value: Value | None = None) -> None:
        self.env: dict[str, Value] = {}
        self.parent = parent
        self.returns: list[Value] = []
        self.self_value = self_value

    def lookup(self, name: str) -> Value:
        frame: Frame | None = self
        while frame is not None:
            value = frame.env.get(name)
            if value is not None:
                return value
            frame = frame.parent
        return NOTHING


Handler = Callable[[FileContext, object], None]


class Walker:
    def __init__(self, ctx: FileContext, handlers: tuple[list[Handler], ...]) -> None:
        """handlers: per hook (call, binop, augassign, attribute, with, end), the rules' methods."""
        self.ctx = ctx
        self.handlers = handlers
        self.events: list[tuple[int, object]] = []
        self.fp16 = 0  # depth of float16 autocast regions
        self.frame = Frame(None)
        self.scope = MODULE_SCOPE
        self.logs: list[Body] = []
        self.block_size = 0
        self._stmt: dict[type, Callable[[cst.CSTNode], None]] = {
            cst.SimpleStatementLine: self._simple_line,
            cst.FunctionDef: self._function,
            cst.ClassDef: self._class,
            cst.If: self._if,
            cst.For: self._for,
            cst.While: self._while,
            cst.With: self._with,
            cst.Try: self._try,
            cst.TryStar: self._try,
        }
        self._small: dict[type, Callable[[cst.CSTNode], None]] = {
            cst.Assign: self._assign,
            cst.AnnAssign: self._annassign,
            cst.AugAssign: self._augassign,
            cst.Expr: lambda s: self.expr(s.value),
            cst.Return: self._return,
            cst.Import: self._import,
            cst.ImportFrom: self._import_from,
            cst.Raise: lambda s: s.exc is not None and self.expr(s.exc),
            cst.Assert: lambda s: self.expr(s.test),
        }
        self._expr: dict[type, Callable[[cst.CSTNode], Value]] = {
            cst.Name: self._name,
            cst.Integer: lambda n: constant(int(n.value.replace("_", ""), 0), n),
            cst.Float: self._float,
            cst.Attribute: self._attribute,
            cst.Call: self._call,
            cst.BinaryOperation: self._binop,
            cst.UnaryOperation: self._unary,
            cst.Subscript: self._subscript,
            cst.Tuple: self._sequence,
            cst.List: self._sequence,
            cst.Set: self._sequence,
            cst.Comparison: self._comparison,
            cst.BooleanOperation: self._boolop,
            cst.IfExp: self._ifexp,
            cst.Lambda: self._lambda,
            cst.ListComp: self._comprehension,
            cst.SetComp: self._comprehension,
            cst.GeneratorExp: self._comprehension,
            cst.DictComp: self._comprehension,
            cst.Dict: self._dict,
            cst.NamedExpr: self._namedexpr,
            cst.Await: lambda n: self.expr(n.expression),
            cst.Yield: self._yield,
            cst.StarredElement: lambda n: self.expr(n.value),
            cst.FormattedString: self._fstring,
        }

    # -- driver ----------------------------------------------------------------
    def run(self, module: cst.Module) -> None:
        body = Body("module", module, MODULE_SCOPE)
        self.ctx.module_body = body
        self.logs.append(body)
        self._preregister(module.body, self.frame.env)
        self.block(module.body)
        for handler in self.handlers[5]:
            handler(self.ctx)

    def _preregister(self, statements, table: dict[str, Value]) -> None:
        """Functions get their (still empty) body log up front, so a call to one defined later
        in the file still expands to what it does."""
        for statement in statements:
            if isinstance(statement, cst.FunctionDef):
                table[statement.name.value] = Value(kind="function", body=Body("function", statement, MODULE_SCOPE))

    def block(self, body) -> None:
        stmt = self._stmt
        self.block_size = len(body)
        for node in body:
            handler = stmt.get(type(node))
            if handler is not None:
                handler(node)

    def flush(self) -> None:
        if not self.events:
            return
        events, self.events = self.events, []
        ctx = self.ctx
        table = self.handlers
        for kind, item in events:
            for handler in table[kind]:
                handler(ctx, item)

    def body(self, node) -> None:
        """An indented block or a one-line suite."""
        inner = node.body
        if isinstance(inner, cst.IndentedBlock):
            self.block(inner.body)
        else:
            for small in inner.body:
                self._small_stmt(small)
            self.flush()

    # -- statements --------------------------------------------------------------
    def _simple_line(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            self.ctx.statements[id(node.body[0].value)] = (node, self.block_size == 1)
        for small in node.body:
            self._small_stmt(small)
        self.flush()

    def _small_stmt(self, small) -> None:
        handler = self._small.get(type(small))
        if handler is not None:
            handler(small)

    def _assign(self, node: cst.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self._mark_assignment(target.target, node.value)
            self.bind(target.target, value)

    def _mark_assignment(self, target, value_node) -> None:
        if isinstance(target, cst.Attribute):
            if target.attr.value == "grad" and isinstance(value_node, cst.Name) and value_node.value == "None":
                self._log(Mark("grad_none", target, scope=self.scope))
            else:
                qual = self.ctx.qualify(target)
                if qual is not None and qual.startswith("torch."):
                    self._log(Mark("setattr", target, qual, value_node, self.scope))
        elif isinstance(target, cst.Subscript) and self.ctx.qualify(target.value) == "os.environ":
            key = target.slice[0].slice if target.slice else None
            if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
                self._log(Mark("env", target, str(key.value.evaluated_value), value_node, self.scope))

    def _log(self, entry) -> None:
        self.logs[-1].entries.append(entry)
        self.ctx.timeline.append(entry)

    def _annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value))

    def _augassign(self, node: cst.AugAssign) -> None:
        left = self.expr(node.target)
        right = self.expr(node.value)
        self.events.append((2, node))
        self.ctx.scopes[id(node)] = self.scope
        self._log(Mark("accumulate", node, value=node.value, scope=self.scope))
        if isinstance(node.target, cst.Name):
            op = type(node.operator).__name__.replace("Assign", "")
            self.frame.env[node.target.value] = self._arith_value(op, left, right, node.target, node.value)

    def _return(self, node: cst.Return) -> None:
        self.frame.returns.append(self.expr(node.value) if node.value is not None else NOTHING)

    def _import(self, node: cst.Import) -> None:
        aliases = self.ctx.aliases
        for alias in node.names:
            dotted = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                aliases[alias.asname.name.value] = dotted
            else:
                root = dotted.split(".", 1)[0]
                aliases[root] = root

    def _import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = _dotted(node.module)
        for alias in node.names:
            name = _dotted(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.ctx.aliases[local] = f"{base}.{name}"

    def _decorators(self, node) -> tuple[int, bool]:
        fp16, no_grad = 0, False
        for decorator in node.decorators:
            expression = decorator.decorator
            self.expr(expression)
            if isinstance(expression, cst.Call) and self._is_fp16_autocast(expression):
                fp16 = 1
            no_grad = no_grad or self._disables_grad(expression)
        self.flush()
        return fp16, no_grad

    def _disables_grad(self, expression) -> bool:
        """torch.no_grad() / torch.inference_mode() / torch.set_grad_enabled(False), called or not."""
        func = expression.func if isinstance(expression, cst.Call) else expression
        qual = self.ctx.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if qual in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"):
            return True
        if qual == "torch.set_grad_enabled" and isinstance(expression, cst.Call) and expression.args:
            argument = expression.args[0].value
            return isinstance(argument, cst.Name) and argument.value == "False"
        return False

    def _function(self, node: cst.FunctionDef, self_value: Value | None = None) -> Value:
        fp16, no_grad = self._decorators(node)
        registered = self.frame.env.get(node.name.value) if self_value is None else (
            self_value.cls.methods.get(node.name.value) if self_value.cls is not None else None)
        body = registered.body if registered is not None and isinstance(registered.body, Body) \
            and registered.body.node is node else Body("function", node, MODULE_SCOPE)
        name = node.name.value
        if self_value is not None and self_value.cls is not None and self_value.cls.grad_disabled:
            no_grad = True
        body.scope = Scope(no_grad=no_grad or self.scope.no_grad, function=name,
                           debug=self.scope.debug or "debug" in name.lower())
        for param in _params(node.params):
            if param.default is not None:
                self.expr(param.default)
        self.flush()
        outer = self.frame
        frame = Frame(outer if outer.self_value is None else _module_frame(outer))
        params = _params(node.params)
        for index, param in enumerate(params):
            if index == 0 and self_value is not None:
                frame.env[param.name.value] = self_value
            else:
                frame.env[param.name.value] = Value()
        self.frame = frame
        self.fp16 += fp16
        outer_scope = self.scope
        self.scope = body.scope
        self.logs.append(body)
        self.ctx.functions.append(body)
        try:
            self._preregister(node.body.body if isinstance(node.body, cst.IndentedBlock) else [], frame.env)
            self.body(node)
        finally:
            self.logs.pop()
            self.scope = outer_scope
            self.fp16 -= fp16
            self.frame = outer
        returns = NOTHING
        if frame.returns:
            returns = frame.returns[0]
            for value in frame.returns[1:]:
                returns = join(returns, value)
        value = Value(kind="function", returns=returns, body=body)
        if self_value is None:
            outer.env[node.name.value] = value
        return value

    def _class(self, node: cst.ClassDef) -> None:
        self._decorators(node)
        bases = []
        for arg in node.bases:
            self.expr(arg.value)
            bases.append(self.ctx.qualify(arg.value) or "")
        self.flush()
        info = ClassInfo(node.name.value, bases)
        instance = Value(kind="instance", cls=info, qual=info.name)
        outer = self.frame
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
        functions = [s for s in body if isinstance(s, cst.FunctionDef)]
        functions.sort(key=lambda f: f.name.value != "__init__")  # __init__ first: it sets self.*
        for function in functions:
            info.methods[function.name.value] = Value(
                kind="function", body=Body("function", function, MODULE_SCOPE))
        class_frame = Frame(outer, self_value=instance)
        self.frame = class_frame
        try:
            self.block([s for s in body if not isinstance(s, cst.FunctionDef)])
            for function in functions:
                info.methods[function.name.value] = self._function(function, instance)
        finally:
            self.frame = outer
        outer.env[node.name.value] = Value(kind="class", cls=info, qual=info.name)

    def _if(self, node: cst.If) -> None:
        self.expr(node.test)
        self.flush()
        for name in _compared_names(node.test):
            self.frame.env[name] = Value()
        before = dict(self.frame.env)
        outer_scope = self.scope
        if not outer_scope.debug and _mentions(node.test, "debug"):
            self.scope = replace(outer_scope, debug=True)
        try:
            self.body(node)
        finally:
            self.scope = outer_scope
        after_then = self.frame.env
        self.frame.env = dict(before)
        if node.orelse is not None:
            if isinstance(node.orelse, cst.If):
                self._if(node.orelse)
            else:
                self.body(node.orelse)
        self.frame.env = _merge(before, after_then, self.frame.env)

    def _loop(self, node, header: Callable[[], Value | None]) -> None:
        iterable = header()
        self.flush()
        before = dict(self.frame.env)
        outer_scope = self.scope
        self.scope = replace(outer_scope, loop_depth=outer_scope.loop_depth + 1)
        loop = Body("loop", node, self.scope, iterable=iterable)
        self._log(loop)
        self.ctx.loops.append(loop)
        self.logs.append(loop)
        try:
            self.body(node)
        finally:
            self.logs.pop()
            self.scope = outer_scope
        if node.orelse is not None:
            self.body(node.orelse)
        self.frame.env = _merge(before, before, self.frame.env)

    def _for(self, node: cst.For) -> None:
        def header() -> Value:
            iterable = self.expr(node.iter)
            item = Value(kind="param", qual="matrix") if iterable.kind == "params" else NOTHING
            if iterable.kind == "params" and isinstance(node.target, cst.Tuple):
                elements = node.target.elements
                for element in elements[:-1]:
                    self.bind(element.value, NOTHING)
                self.bind(elements[-1].value, item)
            else:
                self.bind(node.target, item)
            return _loader_of(self.ctx, node.iter, iterable)

        self._loop(node, header)

    def _while(self, node: cst.While) -> None:
        self._loop(node, lambda: self.expr(node.test))

    def _with(self, node: cst.With) -> None:
        fp16, no_grad = 0, False
        for item in node.items:
            value = self.expr(item.item)
            if isinstance(item.item, cst.Call) and self._is_fp16_autocast(item.item):
                fp16 = 1
            no_grad = no_grad or self._disables_grad(item.item)
            if item.asname is not None:
                self.bind(item.asname.name, value)
        self.events.append((4, node))
        self.ctx.scopes[id(node)] = self.scope
        self.flush()
        self.fp16 += fp16
        outer_scope = self.scope
        if no_grad and not outer_scope.no_grad:
            self.scope = replace(outer_scope, no_grad=True)
        try:
            self.body(node)
        finally:
            self.scope = outer_scope
            self.fp16 -= fp16

    def _try(self, node) -> None:
        self.body(node)
        for handler in node.handlers:
            if handler.type is not None:
                self.expr(handler.type)
                self.flush()
            self.body(handler)
        if node.orelse is not None:
            self.body(node.orelse)
        if node.finalbody is not None:
            self.body(node.finalbody)

    def bind(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name):
            # An unknown value still has an identity: `x - x.min()` must see the same `x` twice.
            self.frame.env[target.value] = Value() if value is NOTHING else value
        elif isinstance(target, (cst.Tuple, cst.List)):
            items = value.items
            for index, element in enumerate(target.elements):
                item = items[index] if index < len(items) else NOTHING
                self.bind(element.value, item)
        elif isinstance(target, cst.Attribute):
            owner = self.expr(target.value)
            if target.attr.value == "data":
                self.events.append((3, target))
                self.ctx.scopes[id(target)] = self.scope
            if owner.kind == "instance" and owner.cls is not None:
                owner.cls.attrs[target.attr.value] = value
        elif isinstance(target, cst.Subscript):
            self.expr(target)

    # -- expressions -----------------------------------------------------------------
    def expr(self, node: cst.BaseExpression) -> Value:
        handler = self._expr.get(type(node))
        value = handler(node) if handler is not None else NOTHING
        if value is None:
            value = NOTHING
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
        if self.ctx.qualify(node) is not None:
            return NOTHING
        owner = self.expr(node.value)
        attr = node.attr.value
        if owner.cls is not None and owner.kind == "instance":
            found = owner.cls.attrs.get(attr)
            if found is not None and found.kind is not None:
                return found  # numeric state (self.count = 0; self.count += 1) is not tracked
        if attr == "weight" and owner.kind == "module" and ops.MODULE_OPS.get(owner.qual or "") == "linear":
            return Value(kind="param", qual="matrix")  # multiplies activations: its scale compounds per layer
        if attr in ("weight", "bias"):
            return Value(kind="param")
        if attr == "data":
            self.events.append((3, node))
            self.ctx.scopes[id(node)] = self.scope
            return owner
        if attr == "grad" and owner.kind == "param":
            return Value(kind="grad")
        if attr in ("T", "mT", "real"):
            return owner
        return NOTHING

    def _subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self.expr(element.slice.value)
        if base.kind or base.op == "const":
            return NOTHING
        return base.but(node=node) if base is not NOTHING else NOTHING

    def _sequence(self, node) -> Value:
        items = tuple(self.expr(element.value) for element in node.elements)
        return Value(kind="list", items=items, zero=any(item.zero for item in items), node=node)

    def _dict(self, node: cst.Dict) -> Value:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.expr(element.key)
            self.expr(element.value)
        return NOTHING

    def _comparison(self, node: cst.Comparison) -> Value:
        self.expr(node.left)
        for target in node.comparisons:
            self.expr(target.comparator)
        return Value(op="mask", sign=NONNEG, zero=True, desc="a boolean mask", node=node)

    def _boolop(self, node: cst.BooleanOperation) -> Value:
        self.expr(node.left)
        self.expr(node.right)
        return NOTHING

    def _ifexp(self, node: cst.IfExp) -> Value:
        self.expr(node.test)
        return join(self.expr(node.body), self.expr(node.orelse))

    def _lambda(self, node: cst.Lambda) -> Value:
        outer = self.frame
        self.frame = Frame(outer)
        for param in _params(node.params):
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
        return NOTHING

    def _unary(self, node: cst.UnaryOperation) -> Value:
        inner = self.expr(node.expression)
        if isinstance(node.operator, cst.Minus):
            if inner.op == "const" and inner.const is not None:
                return constant(-inner.const, node)
            return Value(op="neg", sign=ANY if inner.sign == POS else UNKNOWN,
                         unbounded=inner.unbounded, half=inner.half, node=node)
        return NOTHING

    def _binop(self, node: cst.BinaryOperation) -> Value:
        self.events.append((1, node))
        left = self.expr(node.left)
        right = self.expr(node.right)
        return self._arith_value(type(node.operator).__name__, left, right, node.left, node.right, node)

    # -- calls -------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> Value:
        info = CallInfo(node)
        info.scope = self.scope
        self.ctx.calls[id(node)] = info
        self.events.append((0, info))
        self.logs[-1].entries.append(info)
        self.ctx.timeline.append(info)
        func = node.func
        ctx = self.ctx
        qual = ctx.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        receiver_value = NOTHING
        if qual is not None:
            info.form = "function"
            info.qual = qual
            info.op = ops.FUNCTION_OPS.get(qual)
        elif isinstance(func, cst.Attribute):
            receiver_value = self.expr(func.value)
            attr = func.attr.value
            owner_attr = None
            if receiver_value.kind == "instance" and receiver_value.cls is not None:
                owner_attr = receiver_value.cls.attrs.get(attr) or receiver_value.cls.methods.get(attr)
            if owner_attr is not None:
                info.form = "local"
                info.callee = owner_attr
            elif receiver_value.kind in ("instance", "module") and attr in ("forward", "__call__"):
                info.form = "local"
                info.callee = receiver_value
            else:
                info.form = "method"
                info.receiver = func.value
                info.op = ops.METHOD_OPS.get(attr)
                info.qual = attr
        else:
            info.callee = self.expr(func)
            info.form = "local"

        values = []
        for arg in node.args:
            value = self.expr(arg.value)
            if arg.keyword is not None:
                info.kwargs[arg.keyword.value] = arg.value
            elif not arg.star:
                info.args.append(arg.value)
                values.append(value)

        if info.op == "where":
            _claim_where_guarded(ctx, node)
        if info.form == "method" and info.op in ops.NULLARY_METHODS and info.args:
            info.op = None  # `logger.log("loss", v)` is not a tensor log
        if info.form == "local" and info.callee.kind == "module":
            info.op = ops.MODULE_OPS.get(info.callee.qual or "")
            if info.op is not None:
                info.form = "module"
        return self._call_result(info, receiver_value, values)

    def _call_result(self, info: CallInfo, receiver: Value, values: list[Value]) -> Value:
        node = info.node
        form = info.form
        if form == "local" or form == "module":
            callee = info.callee
            argument = values[0] if values else NOTHING
            if callee.kind == "class":
                return Value(kind="instance", cls=callee.cls, qual=callee.qual, node=node)
            if callee.kind == "function":
                return callee.returns or NOTHING
            if callee.kind == "instance" and callee.cls is not None:
                result = callee.cls.call_result()
                return result.but(half=True) if callee.half and not result.kind else result
            if callee.kind == "module":
                return self._module_result(callee, argument, node)
            if callee.half:  # an unknown model made float16 with .half()
                return Value(half=True, node=node)
            return NOTHING
        if form == "method":
            name = info.qual or ""
            if receiver.kind == "param" and name in ("detach", "clone", "detach_"):
                return Value()  # no longer a leaf that requires grad
            if name in ops.COPY_METHODS and receiver.op is not None and not receiver.kind:
                return receiver.but(node=info.node)  # same values, a different tensor
            if name in ops.TRANSPARENT_METHODS:
                return receiver
            if name in ops.HALF_METHODS:
                return receiver.but(half=True)
            if name in ops.UPCAST_METHODS:
                return receiver.but(half=False)
            if name in ("to", "type"):
                return self._cast(info, receiver)
            if name in ("parameters", "named_parameters"):
                return Value(kind="params")
            if info.op is None:
                return NOTHING
            return self._op_result(info, receiver, values)
        # function form
        qual = info.qual or ""
        grad = info.kwargs.get("requires_grad")
        if isinstance(grad, cst.Name) and grad.value == "True" and qual.startswith("torch."):
            return Value(kind="param", qual="leaf", node=node)
        if info.op is not None:
            operand = values[0] if values else NOTHING
            return self._op_result(info, operand, values[1:])
        if qual == "torch.nn.Parameter":
            return Value(kind="param")
        if qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1][:1].isupper() and not qual.startswith("torch.nn.init"):
            return Value(kind="module", qual=_module_qual(qual), items=tuple(values), node=node)
        last = qual.rsplit(".", 1)[-1]
        if qual.startswith("torch.optim.lr_scheduler."):
            return Value(kind="scheduler", qual=qual, node=node)
        if qual.startswith("torch.optim.") and last[:1].isupper():
            return Value(kind="optimizer", qual=qual, node=node)
        if last == "GradScaler" and qual.startswith("torch."):
            return Value(kind="scaler", qual=qual, node=node)
        if qual in ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"):
            workers = self.ctx.value(info.kwargs.get("num_workers"))
            count = int(workers.const) if workers.op == "const" and workers.const is not None else (
                0 if "num_workers" not in info.kwargs else None)
            return Value(kind="dataloader", qual=qual, node=node, workers=count)
        return NOTHING

    def _module_result(self, module: Value, argument: Value, node) -> Value:
        op = ops.MODULE_OPS.get(module.qual or "")
        if op == "sequential":
            result = argument
            for layer in module.items:
                if layer.kind == "module":
                    result = self._module_result(layer, result, node)
                elif layer.kind == "instance" and layer.cls is not None:
                    result = layer.cls.call_result()
                else:
                    result = NOTHING
            return result
        if op == "identity":
            return argument
        if op == "linear":
            return Value(op="matmul", unbounded=True, half=module.half or argument.half or self.fp16 > 0,
                         desc="a linear-layer output", node=node)
        if op in ("sigmoid", "softmax", "log_softmax", "relu", "softplus", "tanh"):
            return apply_op(op, argument, node, [])
        if op in ops.LOSS_OPS or (module.qual or "").endswith("Loss"):
            return Value(op="loss", desc="a loss", node=node)
        return NOTHING

    def _cast(self, info: CallInfo, receiver: Value) -> Value:
        for arg in list(info.args) + list(info.kwargs.values()):
            qual = self.ctx.qualify(arg)
            if qual in ops.FLOAT16_NAMES:
                return receiver.but(half=True)
            if qual in ops.UPCAST_DTYPES:
                return receiver.but(half=False)
        return receiver

    def _op_result(self, info: CallInfo, operand: Value, rest: list[Value]) -> Value:
        op = info.op
        node = info.node
        if op in ("clamp", "clamp_min"):
            low = info.param(1, "min")
            if low is None and op == "clamp":
                return operand.but(node=node) if not operand.kind else NOTHING
            bound = self.ctx.value(low)
            if bound.op == "const" and bound.const is not None:
                if bound.const > 0:
                    # clamp(p, eps, 1 - eps) also keeps 1 - p away from 0: no longer a bare probability
                    prob = operand.prob and info.param(2, "max") is None
                    return Value(op="clamp", sign=POS, prob=prob, half=operand.half, node=node)
                if bound.const == 0:
                    return Value(op="clamp", sign=NONNEG, zero=True, desc="clamped at 0", half=operand.half,
                                 node=node)
                return Value(op="clamp", half=operand.half, node=node)
            return Value(op="clamp", sign=POS, prob=operand.prob, half=operand.half, node=node)
        if op in ("max", "min", "maximum", "minimum"):
            second = info.param(1, "other")
            second_value = self.ctx.value(second)
            if op in ("maximum", "minimum") or (second is not None and second_value.op != "const"
                                                  and "dim" not in info.kwargs):
                signs = (operand.sign, second_value.sign)
                if op in ("max", "maximum"):
                    return Value(op=op, sign=POS if POS in signs else UNKNOWN, node=node)
                return Value(op=op, sign=POS if signs == (POS, POS) else UNKNOWN, node=node)
            return Value(op=op, sign=operand.sign if operand.sign == POS else UNKNOWN, of=operand,
                         half=operand.half, node=node)
        if op == "pow":
            exponent = self.ctx.value(info.param(1, "exponent"))
            if exponent.op == "const" and exponent.const is not None:
                if exponent.const > 0 and exponent.const == int(exponent.const) and int(exponent.const) % 2 == 0:
                    return square(operand, node, operand.half)
                if exponent.const == 0.5:
                    return Value(op="sqrt", sign=POS if operand.sign == POS else NONNEG, node=node)
            return NOTHING
        if op in ("matmul", "einsum"):
            half = operand.half or any(v.half for v in rest) or self.fp16 > 0
            return Value(op="matmul", unbounded=True, half=half, desc="a matmul output", node=node)
        if op == "tensor":
            dtype = self.ctx.qualify(info.kwargs["dtype"]) if "dtype" in info.kwargs else None
            result = operand.but(kind=None, items=(), node=node, op=operand.op if operand.op != "const" else "tensor")
            if operand.kind == "list":
                result = Value(op="tensor", sign=NONNEG if operand.zero else UNKNOWN, zero=operand.zero,
                               desc="an array containing 0" if operand.zero else "", node=node)
            if dtype in ops.FLOAT16_NAMES:
                result = result.but(half=True)
            return result
        if op in ("softmax", "log_softmax") and "dtype" in info.kwargs:
            dtype = self.ctx.qualify(info.kwargs["dtype"])
            if dtype in ops.UPCAST_DTYPES:
                operand = operand.but(half=False)
        if op == "rand" and info.name == "rand" and all(isinstance(a, (cst.Integer, cst.Tuple)) for a in info.args):
            return Value(op="rand", node=node)  # a few literal-shaped samples: an exact 0 is ~1e-7 likely
        if op == "divide":
            divisor = rest[0] if rest else NOTHING
            return self._arith_value("Divide", operand, divisor, info.operand, info.param(1, "other"), node)
        return apply_op(op, operand, node, rest)

    def _arith_value(self, op, left: Value, right: Value, left_node, right_node, node=None) -> Value:
        return arith(op, left, right, left_node, right_node, node, self.ctx, self.fp16 > 0)

    def _is_fp16_autocast(self, call: cst.Call) -> bool:
        qual = self.ctx.qualify(call.func) or ""
        if not qual.endswith("autocast") or not qual.startswith("torch."):
            return False
        dtype = None
        device = None
        enabled = True
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword is not None else ("device_type" if index == 0 else "")
            if name == "dtype":
                dtype = self.ctx.qualify(arg.value)
            elif name == "device_type" and isinstance(arg.value, cst.SimpleString):
                device = arg.value.evaluated_value
            elif name == "enabled" and isinstance(arg.value, cst.Name) and arg.value.value == "False":
                enabled = False
        if not enabled:
            return False
        if dtype is not None:
            return dtype in ops.FLOAT16_NAMES
        return qual == "torch.cuda.amp.autocast" or device == "cuda"


def _merge(before: dict[str, Value], first: dict[str, Value], second: dict[str, Value]) -> dict[str, Value]:
    merged = dict(second)
    for name, value in first.items():
        other = second.get(name)
        if other is None:
            merged[name] = value
        elif other is not value:
            merged[name] = join(value, other)
    for name, value in second.items():
        if name in before and name not in first and before[name] is not value:
            merged[name] = join(before[name], value)
    return merged


def _claim_where_guarded(ctx: FileContext, call: cst.Call) -> None:
    """`where(d == 0, fallback, x / d)` handles the zero itself: its division/log/sqrt of d is not reported."""
    if not call.args or not isinstance(call.args[0].value, cst.Comparison):
        return
    condition = call.args[0].value
    guarded = {ctx.shape(condition.left)}
    guarded.update(ctx.shape(target.comparator) for target in condition.comparisons)
    stack = [arg.value for arg in call.args[1:]]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Divide) and ctx.shape(node.right) in guarded:
                ctx.claim(node)
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.Call):
            inner = [arg.value for arg in node.args]
            if isinstance(node.func, cst.Attribute):
                inner.append(node.func.value)
            if any(ctx.shape(arg) in guarded for arg in inner):
                ctx.claim(node)
            stack.extend(inner)
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)


def _mentions(node, word: str) -> bool:
    """Whether a condition names something containing `word` (`if args.debug:`, `if DEBUG and x`)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            if word in item.value.lower():
                return True
        elif isinstance(item, cst.Attribute):
            if word in item.attr.value.lower():
                return True
            stack.append(item.value)
        elif isinstance(item, cst.Call):
            stack.append(item.func)
            stack.extend(arg.value for arg in item.args)
        elif isinstance(item, cst.BooleanOperation):
            stack.extend((item.left, item.right))
        elif isinstance(item, cst.UnaryOperation):
            stack.append(item.expression)
        elif isinstance(item, cst.Comparison):
            stack.append(item.left)
            stack.extend(c.comparator for c in item.comparisons)
        elif isinstance(item, cst.Subscript):
            stack.append(item.value)
    return False


def _loader_of(ctx: FileContext, node, value: Value) -> Value:
    """The DataLoader a for loop iterates, also through enumerate()/tqdm()/zip()."""
    if value.kind == "dataloader":
        return value
    if isinstance(node, cst.Call):
        for arg in node.args:
            inner = ctx.value(arg.value)
            if inner.kind == "dataloader":
                return inner
    return value


def _compared_names(test: cst.BaseExpression) -> list[str]:
    """Names a condition compares (`if d > 0`, `if (d != 0).all()`, `if a and b >= 0`)."""
    found: list[str] = []
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            stack.append(node.func.value)
        elif isinstance(node, cst.Comparison):
            for side in [node.left] + [c.comparator for c in node.comparisons]:
                if isinstance(side, cst.Name):
                    found.append(side.value)
    return found


def _params(params: cst.Parameters) -> list[cst.Param]:
    found = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            found.append(star)
    return found


def _module_frame(frame: Frame) -> Frame:
    while frame.parent is not None:
        frame = frame.parent
    return frame


def _module_qual(qual: str) -> str:
    """torch.nn.modules.activation.Sigmoid -> torch.nn.Sigmoid."""
    if qual.startswith("torch.nn.modules."):
        return "torch.nn." + qual.rsplit(".", 1)[-1]
    return qual


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


__all__ = ["Walker", "ClassInfo", "UNKNOWN"]
