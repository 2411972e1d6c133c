"""Whether a project module has no parameters: calling it on data without gradients builds no graph.

Read from the class's code: it derives from `nn.Module` alone, and every attribute its methods set
on `self` is plain data (a literal, or an argument whose default is one); tensors go to
`register_buffer` (MelGAN's `Audio2Mel`, an STFT with a mel basis). Any call that could attach a
module or parameter (`add_module`, `register_parameter`, `setattr`, ...) makes it unknown.
"""

from __future__ import annotations

import libcst as cst

from torchlint.static.facts.values import Value
from torchlint.static.interpret.stores import on_self
from torchlint.static.traverse import nodes_of

_REGISTERS = frozenset({"register_parameter", "register_module", "add_module", "apply", "load_state_dict"})


def without_parameters(model: Value) -> bool:
    """``model`` is an instance of a project module class whose code gives it no parameters."""
    cls = model.cls if model.kind == "instance" else None
    if cls is None or cls.parents or cls.bases != ["torch.nn.Module"]:
        return False
    for method in cls.methods.values():
        function = getattr(method.body, "node", None)
        if not isinstance(function, cst.FunctionDef):
            return False
        plain = {p.name.value for p in function.params.params if _literal(p.default)}
        for node in nodes_of(function.body, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)):
            if isinstance(node, cst.Call):
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in _REGISTERS or \
                        isinstance(node.func, cst.Name) and node.func.value == "setattr":
                    return False
                continue
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(_sets_self(t) for t in targets) and not _plain(node.value, plain):
                return False
    return True


def _sets_self(target: cst.BaseExpression) -> bool:
    """`self.x = ...`, also as an element of `self.a, self.b = ...`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_sets_self(element.value) for element in target.elements)
    return on_self(target)


def _literal(node) -> bool:
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(node, cst.Name) and node.value in ("None", "True", "False"))


def _plain(node, plain: set[str]) -> bool:
    if node is None or _literal(node):
        return True
    if isinstance(node, cst.Name):
        return node.value in plain
    if isinstance(node, cst.BinaryOperation):
        return _plain(node.left, plain) and _plain(node.right, plain)
    if isinstance(node, cst.UnaryOperation):
        return _plain(node.expression, plain)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_plain(e.value, plain) for e in node.elements)
    return False
