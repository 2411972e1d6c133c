"""Bootstrapped regression targets made by the network they train, with autograd on.

Temporal-difference learning (DQN, SARSA, TD(0) critics) regresses a network's prediction onto a
target of the form ``reward + discount * <the same network's output on the next state>``. That
target must be a constant: the update is a semi-gradient one. Computed with gradients on, the loss
also pushes the next state's value towards the current one (a residual-gradient update, which
learns another, usually worse, fixed point and often diverges).

Found from the walker's facts, not from names: a regression loss (mse, l1, smooth-l1, huber) whose
prediction and whose target both come, through the values' reaching definitions, from calls of the
same user network; the target is a sum with a product term holding that network's output (the
bootstrap), and that output carries autograd history (not under ``no_grad``, not detached).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.context import CallInfo, FileContext

REGRESSION_FUNCTIONS = frozenset(f"torch.nn.functional.{name}" for name in
                                 ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"))
REGRESSION_MODULES = frozenset(f"torch.nn.{name}" for name in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"))
_DEPTH = 4  # reaching definitions followed from an argument


@dataclass
class BootstrapTarget:
    network: cst.Call  # the call of the network inside the target (`q_net(next_obs)`)
    prediction: cst.Call  # the call of the same network the prediction comes from


def regression_arguments(ctx: FileContext, call: CallInfo) -> tuple | None:
    """(prediction, target) of `F.mse_loss(pred, target)` or `criterion(pred, target)` with
    `criterion = nn.MSELoss()` (and l1, smooth-l1, huber); None for any other call."""
    if call.form == "function" and call.qual in REGRESSION_FUNCTIONS:
        return call.param(0, "input"), call.param(1, "target")
    if call.form != "function" and call.callee.kind in ("module", "instance") and call.callee.qual in REGRESSION_MODULES:
        args = call.node.args
        if len(args) >= 2 and args[0].keyword is None and args[1].keyword is None:
            return args[0].value, args[1].value
    return None


def bootstrap_target(ctx: FileContext, prediction, target) -> BootstrapTarget | None:
    if prediction is None or target is None:
        return None
    terms = _discounted_terms(_definition(ctx, target))
    if not terms:
        return None  # not `r + gamma * ...`: no bootstrap
    predicted = {ctx.code(node.func, 80): node for node in _network_calls(ctx, prediction)}
    if not predicted:
        return None
    for term in terms:
        if ctx.value(term).tracked is False:
            continue  # detached, or made under no_grad
        for node in _network_calls(ctx, term):
            same = predicted.get(ctx.code(node.func, 80))
            if same is not None and same is not node:
                return BootstrapTarget(node, same)
    return None


def _definition(ctx: FileContext, node):
    """The expression a name stands for here (its reaching definition), else the node."""
    if isinstance(node, cst.Name):
        made = ctx.value(node).node
        if isinstance(made, cst.BaseExpression) and made is not node:
            return made
    return node


def _discounted_terms(expression) -> list:
    """The factors of the products added in `r + gamma * (1 - done) * v_next` (`gamma`, `(1 - done)`, `v_next`)."""
    if not (isinstance(expression, cst.BinaryOperation) and isinstance(expression.operator, cst.Add)):
        return []
    factors: list = []
    for side in (expression.left, expression.right):
        if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Multiply):
            factors.extend(_factors(side))
        elif isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Add):
            factors.extend(_discounted_terms(side))
    return factors


def _factors(product) -> list:
    if isinstance(product, cst.BinaryOperation) and isinstance(product.operator, cst.Multiply):
        return _factors(product.left) + _factors(product.right)
    return [product]


def _network_calls(ctx: FileContext, expression, depth: int = _DEPTH) -> list[cst.Call]:
    """Calls of models and layers (`q_net(obs)`, `self.critic(s)`) with autograd history, in the
    expression or in what its names stand for."""
    found: list[cst.Call] = []
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            info = ctx.call(node)
            if (info is not None and info.form in ("local", "module") and isinstance(node.func, (cst.Name, cst.Attribute))
                    and ctx.value(node).tracked is True):
                found.append(node)
        if isinstance(node, cst.Name) and depth > 0:
            made = ctx.value(node).node
            if isinstance(made, cst.BaseExpression) and made is not node and ctx.value(node).tracked is not False:
                found.extend(_network_calls(ctx, made, depth - 1))
            continue
        if isinstance(node, (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.DictComp, cst.SetComp)):
            continue
        stack.extend(node.children)
    return found
