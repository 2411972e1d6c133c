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
from dataclasses import replace

import libcst as cst

from torchlint.static.facts.values import (
    DEGENERATE,
    NOTHING,
    ROUTINE,
    Value,
    constant,
    element_updated,
    join,
    literal_number,
)
from torchlint.static.interpret import batches, guards, shaping
from torchlint.static.interpret.calls import Calls
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.definitions import Definitions
from torchlint.static.interpret.expressions import Expressions, string_key
from torchlint.static.interpret.frames import (
    Frame,
    checked_key,
    dotted,
    stored_key,
)
from torchlint.static.interpret.merging import merge
from torchlint.static.interpret.scopes import MODULE_SCOPE, Body, Mark

Handler = Callable[[FileContext, object], None]
# Top-level packages that are never project modules: resolving them would only cost file lookups.
EXTERNAL_ROOTS = frozenset({"torch", "numpy", "typing", "os", "sys", "math", "collections", "functools",
                            "dataclasses", "pathlib", "transformers", "lightning", "pytorch_lightning",
                            "__future__", "abc", "itertools", "random", "json", "re", "logging"})


class Walker(Definitions, Expressions, Calls):
    def __init__(self, ctx: FileContext, handlers: tuple[list[Handler], ...]) -> None:
        """handlers: per hook (call, binop, augassign, with, end), the rules' methods."""
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
            cst.Assert: self._assert,
        }
        self._expr: dict[type, Callable[[cst.CSTNode], Value]] = {
            cst.Name: self._name,
            cst.Integer: lambda n: constant(literal_number(n.value), n),
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
        try:
            self.applied = guards.applied_functions(self.ctx.source)
            body = Body("module", module, MODULE_SCOPE)
            self.ctx.module_body = body
            self.logs.append(body)
            self._preregister(module.body, self.frame.env)
            self.block(module.body)
            self.ctx.names = self.frame.env
        finally:
            # The dispatch tables hold bound methods of the walker: a reference cycle that would keep
            # the walker, its context and the whole syntax tree alive until a cyclic-GC pass.
            self._stmt = self._small = self._expr = {}

    def finish(self) -> None:
        """The rules' end-of-file checks: run once, after the walk whose findings are kept."""
        for handler in self.handlers[4]:
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
        start = self.scope
        for node in body:
            handler = stmt.get(type(node))
            if handler is not None:
                handler(node)
        self.scope = start  # drop the gates of `if ...: continue` statements in this block

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
        call = node.body[0].value if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) else None
        if isinstance(call, cst.Call) and self._disables_grad(call) and \
                self.ctx.qualify(call.func) == "torch.set_grad_enabled":
            # `torch.set_grad_enabled(False)` as a statement: grad mode is off for the rest of the block
            self.scope = replace(self.scope, no_grad=True)

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
                # under an if inside a loop over the parameters: some of them (swav's frozen prototypes),
                # a freeze of those, not a clearing of the gradients the step uses
                if not (self.scope.guarded and self.expr(target.value).kind == "param"):
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
        written = node.target.value if isinstance(node.target, cst.Subscript) else node.target
        if _is_data(written):
            self.data_write(written)
        self.events.append((2, node))
        self.ctx.scopes[id(node)] = self.scope
        self._log(Mark("accumulate", node, value=node.value, scope=self.scope))
        target = node.target
        if isinstance(target, cst.Name):
            self.frame.env[target.value] = self._updated(node, left, right)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            old = self.frame.lookup(target.value.value)
            key = string_key(target.slice[0].slice.value) if len(target.slice) == 1 and \
                isinstance(target.slice[0].slice, cst.Index) else None
            if key is not None and old.kind == "dict":  # `stats["n"] += 1`: the entry is stored again
                self.frame.env[target.value.value] = old.but(items=old.items + (self._updated(node, left, right),),
                                                             keys=old.keys + (key,))
            elif not old.kind and old.op == "const":  # `count[y] += 1` on `torch.ones(n)`: no longer that constant
                self.frame.env[target.value.value] = element_updated(old, self._updated(node, left, right),
                                                                      bool(self.scope.loop_depth))

    def _updated(self, node: cst.AugAssign, left: Value, right: Value) -> Value:
        """The value `x op= y` leaves in `x`."""
        op = type(node.operator).__name__.replace("Assign", "")
        result = self._arith_value(op, left, right, node.target, node.value)
        if op == "Add" and self.scope.loop_depth and left.op == "const" and result.zero > DEGENERATE:
            # a running total over the loop (`count += mask.sum()`, started at a constant): 0 only
            # when every iteration adds 0, not whenever one does
            result = result.but(zero=DEGENERATE)
        return result

    def _import(self, node: cst.Import) -> None:
        aliases = self.ctx.aliases
        for alias in node.names:
            name = dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                aliases[alias.asname.name.value] = name
            else:
                root = name.split(".", 1)[0]
                aliases[root] = root

    def _import_from(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module is not None else None
        level = len(node.relative)
        bound = self._project_import(node, module, level)
        if level or module is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            if local not in bound:  # a name the project defines is that definition
                self.ctx.aliases[local] = f"{module}.{name}"

    def _project_import(self, node: cst.ImportFrom, module: str | None, level: int) -> set[str]:
        """Bind what the project's own module defines (its classes, functions, aliases)."""
        ctx = self.ctx
        if ctx.project is None or ctx.file is None or (module or "").split(".")[0] in EXTERNAL_ROOTS:
            return set()
        star = isinstance(node.names, cst.ImportStar)
        locals_of = {} if star else {
            dotted(a.name): (a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
                             else dotted(a.name)) for a in node.names}
        names = None if star else list(locals_of)
        found = ctx.project.names(ctx.file, module, level, names, ctx.deps)
        if star:  # its imports come along: `torch.no_grad()` in a file that gets `torch` from `utils`
            for local, target in ctx.project.star_aliases(ctx.file, module, level, ctx.deps).items():
                if local not in found and local not in self.frame.env:
                    ctx.aliases.setdefault(local, target)
        bound = set()
        for name, value in found.items():
            local = locals_of.get(name, name)
            self.frame.env[local] = value
            self.ctx.aliases.pop(local, None)
            bound.add(local)
        return bound

    def _if(self, node: cst.If) -> None:
        self.expr(node.test)
        self.flush()
        self.checked(guards.checked_names(node.test))
        # a test that names no flag (`if opt.freeze_timer > 0:`) is one by its code: its branches exclude each other
        flag = guards.flag_of(node.test) or (" ".join(self.ctx.exact_code(node.test).split()), True)
        before = dict(self.frame.env)
        outer_scope = self.scope
        then_scope = replace(outer_scope, guarded=True, gates=outer_scope.gates + ((node.test, True),))
        if not outer_scope.debug and _mentions(node.test, "debug"):
            then_scope = replace(then_scope, debug=True)
        if flag is not None:
            then_scope = replace(then_scope, cond=outer_scope.cond + (flag,))
        self.scope = then_scope
        try:
            self.body(node)
        finally:
            self.scope = outer_scope
        after_then = self.frame.env
        self.frame.env = dict(before)
        otherwise = outer_scope.gates + ((node.test, False),)
        if node.orelse is not None:
            if flag is not None:
                self.scope = replace(outer_scope, guarded=True, cond=outer_scope.cond + ((flag[0], not flag[1]),),
                                     gates=otherwise)
            else:
                self.scope = replace(outer_scope, guarded=True, gates=otherwise)
            try:
                if isinstance(node.orelse, cst.If):
                    self._if(node.orelse)
                else:
                    self.body(node.orelse)
            finally:
                self.scope = outer_scope
        self.frame.env = merge(before, after_then, self.frame.env)
        if node.orelse is None and guards.exits(node.body):
            self.scope = replace(outer_scope, gates=otherwise)  # the rest of the block: only when the test fails

    def data_write(self, data: cst.Attribute) -> None:
        """`p.data = ...`, `p.data.clamp_(...)`, `p.data -= ...`: a write that autograd does not see."""
        self._log(Mark("data_write", data, value=self.ctx.value(data.value), scope=self.scope))

    def checked(self, names) -> None:
        """Values the code compares or tests are handled by it: no longer evidence of reaching 0."""
        env = self.frame.env
        for name in names:
            value = self.frame.lookup(name)
            if not value.kind and not value.checked:
                env[name] = value.but(zero=0, eps=None, checked=True)
                if value.zero and isinstance(value.node, (cst.Call, cst.BinaryOperation)):
                    # `n = mask.sum(); if n == 0: return` also checks a later `x / mask.sum()`
                    env[checked_key(self.ctx.code(value.node, 10_000))] = env[name]
                    self.ctx.checked_expressions = True

    def _assert(self, node: cst.Assert) -> None:
        self.expr(node.test)
        self.checked(guards.checked_names(node.test))

    def _loop(self, node, header: Callable[[], Value | None]) -> None:
        iterable = header()
        self.flush()
        before = dict(self.frame.env)
        outer_scope = self.scope
        self.scope = replace(outer_scope, loop_depth=outer_scope.loop_depth + 1, guarded=False)
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
        self.frame.env = merge(before, before, self.frame.env)

    def _for(self, node: cst.For) -> None:
        def header() -> Value:
            iterable = self.expr(node.iter)
            item = Value(kind="param", qual="matrix") if iterable.kind == "params" else NOTHING
            if iterable.kind != "params":
                item = batches.batch_of(self.ctx, node.iter, iterable)
            if _counts(node.iter) and isinstance(node.target, cst.Name):
                item = Value(tracked=False)  # an int: indexing with it drops a dim
                self.ctx.memo.setdefault(shaping.COUNTERS, set()).add(id(item))
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
        self.events.append((3, node))
        self.ctx.scopes[id(node)] = self.scope
        self.flush()
        self.fp16 += fp16
        outer_scope = self.scope
        if no_grad and not outer_scope.no_grad:
            self.scope = replace(outer_scope, no_grad=True)
        if fp16 and not self.scope.fp16:
            self.scope = replace(self.scope, fp16=True)
        try:
            self.body(node)
        finally:
            self.scope = outer_scope
            self.fp16 -= fp16

    def _try(self, node) -> None:
        self.body(node)
        outer_scope = self.scope
        self.scope = replace(outer_scope, guarded=True)  # handlers run only on an exception
        try:
            for handler in node.handlers:
                if handler.type is not None:
                    self.expr(handler.type)
                    self.flush()
                self.body(handler)
        finally:
            self.scope = outer_scope
        if node.orelse is not None:
            self.body(node.orelse)
        if node.finalbody is not None:
            self.body(node.finalbody)

    def bind(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name):
            if self.scope.loop_depth and value.zero > DEGENERATE and _adds_to(value.node, target.value) and \
                    self.frame.lookup(target.value).op == "const":
                value = value.but(zero=DEGENERATE, shape=value.shape)  # `n = n + k`: a running total, as `n += k`
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
                self.data_write(target)
                if value.half and not self.ctx.value(target.value).half:
                    self.made_half(target.value)  # `l.weight.data = l.weight.data.half()`
            if owner.kind == "instance" and owner.cls is not None:
                owner.cls.attrs[target.attr.value] = value
                if isinstance(target.value, cst.Name) and self.ctx.enclosing and not value.kind:
                    # `self.loss = a + b`, read back later in the same method: the tensor just stored
                    self.frame.env[stored_key(target.value.value, target.attr.value)] = value
        elif isinstance(target, cst.Subscript):
            self.expr(target)
            if not self.scope.no_grad and self.ctx.value(target.value).op is not None:
                self.ctx.item_writes.append((target, self.scope))  # `att[:, 0] = 0`: written in place (TL203)
            if _is_data(target.value):
                self.data_write(target.value)
            if isinstance(target.value, cst.Name):
                name = target.value.value
                old = self.frame.lookup(name)
                key = string_key(target.slice[0].slice.value) if len(target.slice) == 1 and \
                    isinstance(target.slice[0].slice, cst.Index) else None
                if old.kind == "dict":  # `state["args"] = args`: one more item in the dict
                    self.frame.env[name] = old.but(items=old.items + (value,), keys=old.keys + (key,))
                elif key is not None and old.kind is None and old.op is None:
                    # a mapping of unknown content (a parameter) filled by key: what is stored is known
                    self.frame.env[name] = Value(kind="dict", items=(value,), keys=(key,))
                elif any(isinstance(element.slice, cst.Index) and name in guards.checked_names(element.slice.value)
                       for element in target.slice):
                    self.checked([name])  # `norm[norm == 0] = 1`: the zeros are replaced
                elif value.op == "exp" and old.op == "const" and old.const == 0 and not old.kind:
                    # `out = torch.zeros(n); out[i] = exp(s)`: a buffer of exps (a copy: not exp's output)
                    self.frame.env[name] = value.but(node=None)
                elif value.op == "mask" and old.op == "const" and old.const == 0 and not old.kind:
                    # `m = np.zeros(shape); m[:, t] = blob > 0.3`: a mask, 0 also wherever nothing was written
                    self.frame.env[name] = value.but(node=None, zero=ROUTINE, shape=old.shape)
                elif not old.kind:  # `m[mask] = -1`: filled piecewise, its elements are not all equal
                    self.frame.env[name] = join(old, value).but(op="piecewise")





def _is_data(node) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "data"


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


def _counts(node) -> bool:
    """`range(...)`: a loop over ints."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range"


def _adds_to(node, name: str) -> bool:
    """`name + k` / `k + name`."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and any(
        isinstance(side, cst.Name) and side.value == name for side in (node.left, node.right))


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
