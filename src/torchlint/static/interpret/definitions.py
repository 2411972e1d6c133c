"""Definitions: what a `def` or `class` statement binds, and the scope its body runs in.

A function's body is walked once where it is defined, with its parameters bound to what the file's
calls pass them (see ``callsites``), its decorators deciding grad mode (`@torch.no_grad()`, a project
decorator that hands out `no_grad`), and its returns joined into what calling it yields. A class
records its bases, attributes set on `self` and its methods (`__init__` first).
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts.values import NOTHING, Value, join, same_class
from torchlint.static.interpret import batches
from torchlint.static.interpret.frames import (
    ClassInfo,
    Frame,
    float_default,
    is_class_method,
    is_static,
    module_frame,
    params_of,
)
from torchlint.static.interpret.scopes import INIT_FUNCTIONS, MODULE_SCOPE, Body, Scope

GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                      "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})


class Definitions:
    """The definition half of the interpreter (mixed into Walker)."""

    def _return(self, node: cst.Return) -> None:
        if node.value is None or (isinstance(node.value, cst.Name) and node.value.value == "None"):
            return  # `return None` early: a caller using the result as a tensor uses the other returns
        value = self.expr(node.value)
        self.frame.returns.append(value)
        if node.value is not None and (value.grad_off or self._mentions_grad_off(node.value)):
            self.frame.grad_off = True

    def _mentions_grad_off(self, expression) -> bool:
        """`return torch.no_grad()`, `return (torch.inference_mode if new else torch.no_grad)()(fn)`."""
        qualify = self.ctx.qualify
        return any(qualify(name) in GRAD_OFF for name in _callee_names(expression))

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
        if qual in GRAD_OFF:
            return True
        if isinstance(func, cst.Name) and self._project_grad_off(func):
            return True
        if qual == "torch.set_grad_enabled" and isinstance(expression, cst.Call) and expression.args:
            argument = expression.args[0].value
            return isinstance(argument, cst.Name) and argument.value == "False"
        return False

    def _project_grad_off(self, func: cst.Name) -> bool:
        """A decorator or context defined in the project that hands out no_grad/inference_mode."""
        value = self.frame.lookup(func.value)
        return value.kind == "function" and value.grad_off

    def _function(self, node: cst.FunctionDef, self_value: Value | None = None) -> Value:
        fp16, no_grad = self._decorators(node)
        registered = self.frame.env.get(node.name.value) if self_value is None else (
            self_value.cls.methods.get(node.name.value) if self_value.cls is not None else None)
        body = registered.body if registered is not None and isinstance(registered.body, Body) \
            and registered.body.node is node else Body("function", node, MODULE_SCOPE)
        name = node.name.value
        body.origin = self.ctx.path
        body.qualname = _qualname(self.frame, self_value, name)
        if self_value is not None and self_value.cls is not None and self_value.cls.grad_disabled:
            no_grad = True
        if id(node) in self.ctx.grad_off_functions:
            no_grad = True  # every call of it in this file runs with grad mode off
        if id(node) in self.ctx.fp16_functions:
            fp16 = 1  # every call of it runs under a float16 autocast
        body.scope = Scope(no_grad=no_grad or self.scope.no_grad, function=name,
                           debug=self.scope.debug or "debug" in name.lower(),
                           init=self.scope.init or name in INIT_FUNCTIONS or name in self.applied,
                           cond=self.scope.cond, fp16=bool(fp16) or self.fp16 > 0)
        for param in params_of(node.params):
            if param.default is not None:
                self.expr(param.default)
        self.flush()
        outer = self.frame
        frame = Frame(outer if outer.self_value is None else module_frame(outer))
        params = params_of(node.params)
        facts = self.ctx.param_facts.get(id(node), {})
        bound = self_value is not None and not is_static(node)
        for index, param in enumerate(params):
            if index == 0 and bound:  # `cls` of a `@classmethod` is the class: calling it builds an instance
                frame.env[param.name.value] = self_value if not is_class_method(node) else \
                    Value(kind="class", cls=self_value.cls, qual=self_value.cls.name if self_value.cls else None)
            else:
                frame.env[param.name.value] = self._current(facts.get(param.name.value)) or \
                    float_default(param) or self._annotated(param)
        self.frame = frame
        self.fp16 += fp16
        outer_scope = self.scope
        self.scope = body.scope
        self.logs.append(body)
        self.ctx.functions.append(body)
        self.ctx.enclosing.append(node)
        try:
            self._preregister(node.body.body if isinstance(node.body, cst.IndentedBlock) else [], frame.env)
            self.body(node)
        finally:
            self.ctx.enclosing.pop()
            self.logs.pop()
            self.scope = outer_scope
            self.fp16 -= fp16
            self.frame = outer
        returns = NOTHING
        if frame.returns:
            returns = frame.returns[0]
            for value in frame.returns[1:]:
                returns = join(returns, value)
        if body.scope.no_grad and returns is not NOTHING and returns.kind is None:
            returns = returns.but(tracked=False)  # computed with grad mode off: no tensor it returns has history
        value = Value(kind="function", returns=returns, body=body, grad_off=frame.grad_off)
        if self_value is None:
            outer.env[node.name.value] = value
        return value

    def _current(self, value: Value | None) -> Value | None:
        """A parameter's learned value, with an instance of a class of this file moved to this walk's
        class: the previous walk's one holds what its methods returned before this walk learned more."""
        if value is None or value.kind != "instance" or value.cls is None:
            return value
        known = self.frame.lookup(value.cls.name)
        if known.kind == "class" and known.cls is not None and known.cls is not value.cls and \
                same_class(known.cls, value.cls):
            return value.but(cls=known.cls)
        return value

    def _annotated(self, param: cst.Param) -> Value:
        """`module: ModelWrapper` names a class the project defines: the parameter is an instance
        (`args: Namespace`: the parsed options)."""
        annotation = param.annotation.annotation if param.annotation is not None else None
        if _last_name(annotation) == "Namespace" and self.ctx.qualify(annotation) == "argparse.Namespace":
            return Value(kind="namespace", qual="argparse.Namespace")
        if isinstance(annotation, cst.Name):
            known = self.frame.lookup(annotation.value)
            if known.kind == "class" and known.cls is not None:
                return Value(kind="instance", cls=known.cls, qual=known.qual)
        return Value()

    def _class(self, node: cst.ClassDef) -> None:
        self._decorators(node)
        bases, parents = [], []
        for arg in node.bases:
            base = self.expr(arg.value)
            bases.append(self.ctx.qualify(arg.value) or "")
            if base.kind == "class" and base.cls is not None:
                parents.append(base.cls)
        self.flush()
        info = ClassInfo(node.name.value, bases, parents=parents, module=self.ctx.path)
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
        self.ctx.classes.append(info)
        try:
            self.block([s for s in body if not isinstance(s, cst.FunctionDef)])
            for name, value in class_frame.env.items():
                if value.kind == "rng":  # `R = np.random.RandomState()` in the class body: one generator,
                    info.attrs.setdefault(name, value)  # shared by every instance (MONAI's Randomizable)
            for function in functions:
                info.methods[function.name.value] = self._function(function, instance)
            if self.ctx.call_sites is not None:
                for step, batch in batches.trainer_batches(info):
                    self.ctx.call_sites.record(step, True, [batch, NOTHING], {}, False)
        finally:
            self.ctx.classes.pop()
            self.frame = outer
        outer.env[node.name.value] = Value(kind="class", cls=info, qual=info.name)


def _qualname(frame: Frame, self_value: Value | None, name: str) -> str:
    """How other modules address a function defined here: only module-level functions and the
    methods of module-level classes have one."""
    if self_value is None:
        return name if frame.parent is None else ""
    top = frame.parent is not None and frame.parent.parent is None
    return f"{self_value.cls.name}.{name}" if top and self_value.cls is not None else ""


def _callee_names(expression) -> list:
    """The dotted names an expression calls or picks between (cheap: no visitor, no copies)."""
    found, stack = [], [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            found.append(node)
        elif isinstance(node, cst.Call):
            stack.append(node.func)
            stack.extend(arg.value for arg in node.args)
        elif isinstance(node, cst.IfExp):
            stack.extend((node.body, node.orelse))
        elif isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
    return found


def _last_name(node) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    return node.attr.value if isinstance(node, cst.Attribute) else None
