"""A model's output compared with targets flattened in one place and left as it is in another.

`pred = model(x).squeeze(-1)` (or `.view(-1)`, `.reshape(-1)`, `.flatten()`) then `pred - y` says
what the program's own code knows: the model returns one value per example in a trailing dim of
size 1, and the targets are one-dimensional. Where the same model's raw output then meets targets
unflattened, `F.mse_loss(model(x), y)` or `(model(x) - y) ** 2`, an (N, 1) output and an (N,)
target broadcast to (N, N): the loss averages every prediction against every target, and the
model learns the targets' mean. mse_loss only warns; a hand-written difference says nothing.

Both sites compare the model's output with something not reshaped itself (a target flattened or
unsqueezed on purpose is not evidence), within the functions and the module-level code of one file;
a name stands for its one plain assignment in that function (a name assigned twice is unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.bootstrap import REGRESSION_FUNCTIONS, REGRESSION_MODULES
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.model_calls import is_model_call
from torchlint.static.traverse import code_scopes, nodes_of

_FLATTENING = ("squeeze", "view", "reshape", "flatten", "ravel")
_RESHAPING = frozenset({"squeeze", "unsqueeze", "view", "reshape", "flatten", "ravel", "expand", "expand_as",
                        "view_as", "reshape_as", "repeat", "t", "transpose", "permute", "sum", "mean", "gather",
                        "max", "min", "argmax", "norm", "squeeze_", "unsqueeze_"})
_DEPTH = 3


@dataclass
class Comparison:
    node: cst.CSTNode  # the loss call or the subtraction
    model: str  # the called model's code (`model`, `self.net`)
    flattened: bool  # the model's output was made one-dimensional before the comparison
    output: cst.Call  # the model call


def broadcast_comparisons(ctx: FileContext) -> list[tuple[Comparison, Comparison]]:
    """(unflattened comparison, flattened comparison of the same model) pairs."""
    source = ctx.source
    if not any(text in source for text in ("squeeze(", "view(-1)", "reshape(-1)", "flatten()", "ravel()")):
        return []
    flattening = {info.scope.function for info in ctx.calls.values()
                  if info.form == "method" and info.name in _FLATTENING and _flattens(info.node, info.name)}
    if not flattening:
        return []  # no output made one-dimensional anywhere: no evidence to compare with
    helpers = _subtracting_helpers(ctx.module)
    scopes = code_scopes(ctx.module)
    # the evidence first, in the scopes that flatten something; the other comparisons only if found
    flat: dict[str, Comparison] = {}
    for name, scope in scopes:
        if name in flattening:
            for comparison in _comparisons(ctx, scope, helpers):
                if comparison.flattened:
                    flat.setdefault(comparison.model, comparison)
    if not flat:
        return []
    found = []
    for _name, scope in scopes:
        found.extend((c, flat[c.model]) for c in _comparisons(ctx, scope, helpers)
                     if not c.flattened and c.model in flat)
    return found


def _comparisons(ctx: FileContext, scope: list, helpers: set[str]) -> list[Comparison]:
    assigned = _assignments(scope)
    found = []
    for node in (n for root in scope for n in nodes_of(root, (cst.Call, cst.BinaryOperation))):
        pair = _compared(ctx, node, helpers)
        if pair is None or _shapes_known(ctx, pair):
            continue
        sides = [_side(ctx, side, assigned) for side in pair]
        outputs = [s for s in sides if s.model is not None]
        if len(outputs) != 1 or outputs[0].shape == OTHER:
            continue  # one side the model's output, raw or flattened
        target = sides[1 - sides.index(outputs[0])]
        if target.shape != RAW or not target.tensor_like:
            continue  # the other a tensor not reshaped
        if target.computed and outputs[0].shape == FLAT:
            continue  # a flattened output against a computed reference (an exact solution on a grid) says
            # nothing of the shape of the targets the model is trained on
        found.append(Comparison(node, ctx.code(outputs[0].model.func, 80), outputs[0].shape == FLAT,
                                outputs[0].model))
    return found


def _shapes_known(ctx: FileContext, pair) -> bool:
    """Both sides' shapes follow from the data flow: TL605 judges them (what the code does elsewhere
    is weaker evidence)."""
    return all(ctx.value(side).shape is not None for side in pair)


def _compared(ctx: FileContext, node, helpers: set[str]):
    """The two operands a regression loss, a subtraction or a helper that subtracts its first two
    parameters compares."""
    if isinstance(node, cst.BinaryOperation):
        return (node.left, node.right) if isinstance(node.operator, cst.Subtract) else None
    args = [a for a in node.args if a.keyword is None and a.star == ""]
    if len(args) < 2:
        return None
    info = ctx.call(node)
    if info is not None and info.form == "function" and info.qual in REGRESSION_FUNCTIONS:
        return args[0].value, args[1].value
    if info is not None and info.callee.kind in ("module", "instance") and info.callee.qual in REGRESSION_MODULES:
        return args[0].value, args[1].value
    if isinstance(node.func, cst.Name) and node.func.value in helpers:
        return args[0].value, args[1].value
    return None


def _subtracting_helpers(module: cst.Module) -> set[str]:
    """Module-level functions whose body subtracts their second parameter from their first (or the reverse)."""
    names = set()
    for statement in module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        params = [p.name.value for p in statement.params.params]
        if len(params) < 2:
            continue
        first, second = params[:2]
        for binop in nodes_of(statement.body, (cst.BinaryOperation,)):
            if isinstance(binop.operator, cst.Subtract) and {_name(binop.left), _name(binop.right)} == {first, second}:
                names.add(statement.name.value)
                break
    return names


def _name(node) -> str | None:
    return node.value if isinstance(node, cst.Name) else None


def _assignments(scope: list) -> dict[str, list[cst.Assign]]:
    found: dict[str, list[cst.Assign]] = {}
    for assign in (a for root in scope for a in nodes_of(root, (cst.Assign,))):
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            found.setdefault(assign.targets[0].target.value, []).append(assign)
    return found


RAW, FLAT, OTHER = "raw", "flat", "other"


@dataclass
class _Side:
    model: cst.Call | None  # the model call the value comes from
    shape: str  # RAW: as it came; FLAT: made one-dimensional; OTHER: reshaped or reduced otherwise
    tensor_like: bool = True  # a name, attribute, subscript or call (not a literal)
    computed: bool = False  # what a function of this file returns (an analytic solution), not data


def _side(ctx: FileContext, expression, assigned, depth: int = _DEPTH) -> _Side:
    """Where one compared operand comes from, through method chains and names."""
    shape = RAW
    node = expression
    while True:
        if isinstance(node, cst.Name):
            definition = _definition(node, assigned)
            if definition is None or depth == 0:
                return _Side(None, shape, ctx.value(node).const is None)
            inner = _side(ctx, definition, assigned, depth - 1)
            return _Side(inner.model, _then(inner.shape, shape), inner.tensor_like, inner.computed)
        if isinstance(node, cst.Subscript):
            if any(isinstance(e.slice, cst.Index) and _is_none(e.slice.value) for e in node.slice):
                shape = OTHER  # y[:, None]
            if isinstance(node.value, (cst.Name, cst.Attribute)) and shape == RAW:
                return _Side(None, shape)  # batch["y"], y[idx]
            node = node.value
            continue
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _RESHAPING:
                shape = _then(FLAT if method in _FLATTENING and _flattens(node, method) else OTHER, shape)
            info = ctx.call(node)
            if info is not None and info.form == "method":
                node = node.func.value
                continue
        if isinstance(node, cst.Call) and _is_model(ctx, node):
            return _Side(node, shape)
        if isinstance(node, cst.Attribute):
            return _Side(None, shape)
        tensor_like = isinstance(node, (cst.Call, cst.BinaryOperation)) and ctx.value(node).const is None
        info = ctx.call(node) if isinstance(node, cst.Call) else None
        computed = info is not None and info.form == "local" and getattr(info.callee, "body", None) is not None
        return _Side(None, shape, tensor_like, computed)


def _then(inner: str, outer: str) -> str:
    """The shape after an inner step and an outer one (applied later)."""
    if OTHER in (inner, outer):
        return OTHER
    return FLAT if FLAT in (inner, outer) else RAW


def _definition(name: cst.Name, assigned):
    candidates = assigned.get(name.value)
    if not candidates or len(candidates) > 1:
        return None  # a parameter, or reassigned: unknown
    return candidates[0].value


def _flattens(call: cst.Call, method: str) -> bool:
    args = call.args
    if method in ("flatten", "ravel"):
        return not args
    if method == "squeeze":
        return len(args) == 1 and _integer(args[0].value) in (-1, 1)
    return len(args) == 1 and _integer(args[0].value) == -1


def _integer(node) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_model(ctx: FileContext, call: cst.Call) -> bool:
    return is_model_call(ctx, call) and ctx.call(call).callee.qual not in REGRESSION_MODULES
