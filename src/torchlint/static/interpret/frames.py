"""Interpreter state: name frames and what is known about the classes a file defines."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchlint.static.facts.values import NOTHING, Value, constant, literal_number


@dataclass
class ClassInfo:
    name: str
    bases: list[str]
    attrs: dict[str, Value] = field(default_factory=dict)
    methods: dict[str, Value] = field(default_factory=dict)
    parents: list[ClassInfo] = field(default_factory=list)  # base classes the project defines
    module: str = ""  # path of the file that defines it

    def lineage(self) -> list[ClassInfo]:
        """The class and its project-defined bases, nearest first (a simple MRO)."""
        found: list[ClassInfo] = []
        stack = [self]
        while stack and len(found) < 32:
            info = stack.pop(0)
            if all(info is not seen for seen in found):
                found.append(info)
                stack.extend(info.parents)
        return found

    def find(self, table: str, name: str) -> Value | None:
        """An attribute or method (``table``: "attrs" | "methods") defined by the class or a base."""
        for info in self.lineage():
            value = getattr(info, table).get(name)
            if value is not None:
                return value
        return None

    @property
    def grad_disabled(self) -> bool:
        """A custom torch.autograd.Function runs its forward and backward with grad mode off."""
        return any(base in ("torch.autograd.Function", "torch.autograd.function.Function") for base in self.bases)

    @property
    def is_module(self) -> bool:
        """An nn.Module subclass (or anything with a forward): calling it runs layers with parameters."""
        return "forward" in self.methods or any(base.startswith("torch.nn.") for base in self.bases)

    def call_result(self) -> Value:
        method = self.methods.get("forward") or self.methods.get("__call__")
        return method.returns if method is not None and method.returns is not None else NOTHING


class Frame:
    __slots__ = ("env", "grad_off", "parent", "returns", "self_value")

    def __init__(self, parent: Frame | None, self_value: Value | None = None) -> None:
        self.env: dict[str, Value] = {}
        self.parent = parent
        self.returns: list[Value] = []
        self.grad_off = False  # a return hands out grad mode off (a project no_grad decorator)
        self.self_value = self_value

    def lookup(self, name: str) -> Value:
        frame: Frame | None = self
        while frame is not None:
            value = frame.env.get(name)
            if value is not None:
                return value
            frame = frame.parent
        return NOTHING



def checked_key(code: str) -> str:
    """The frame key recording that the code checked the value of this expression (no identifier has a space)."""
    return f"checked {code}"


def stored_key(owner: str, attr: str) -> str:
    """The frame key of a tensor a function stored as `owner.attr` (no identifier has a dot)."""
    return f"{owner}.{attr}"


def positional_names(params: cst.Parameters) -> list[str]:
    """Names of the parameters a positional argument can fill, in order (`self` included)."""
    return [p.name.value for p in (*params.posonly_params, *params.params)]


def params_of(params: cst.Parameters) -> list[cst.Param]:
    found = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            found.append(star)
    return found


def float_default(param: cst.Param) -> Value | None:
    """`eps=1e-8`: the value a float parameter has where a call leaves it out. Integer defaults
    (counts, sizes, workers) are what callers set: they stay unknown."""
    default = param.default
    negative = isinstance(default, cst.UnaryOperation) and isinstance(default.operator, cst.Minus)
    literal = default.expression if negative else default
    if not isinstance(literal, cst.Float):
        return None
    number = literal_number(literal.value)
    if number is None:
        return None
    return constant(-number if negative else number, default)


def module_frame(frame: Frame) -> Frame:
    while frame.parent is not None:
        frame = frame.parent
    return frame


def module_qual(qual: str) -> str:
    """torch.nn.modules.activation.Sigmoid -> torch.nn.Sigmoid."""
    if qual.startswith("torch.nn.modules."):
        return "torch.nn." + qual.rsplit(".", 1)[-1]
    return qual


def dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def dotted_code(node) -> str | None:
    """`self.scaler` for a name or a chain of attributes of a name; None for anything else."""
    code = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else ""
    return code if code and not code.startswith(".") else None


def _decorated(node: cst.FunctionDef, name: str) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == name for d in node.decorators)


def is_class_method(node: cst.FunctionDef) -> bool:
    """A `@classmethod`: its first parameter is the class, not an instance."""
    return _decorated(node, "classmethod")


def is_static(node: cst.FunctionDef) -> bool:
    """A `@staticmethod`: its first parameter is an argument, not the instance."""
    return _decorated(node, "staticmethod")
