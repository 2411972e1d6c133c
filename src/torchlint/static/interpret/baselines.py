"""A learned baseline (a critic) entering a policy-gradient term with its gradient.

REINFORCE with a baseline and actor-critic methods weight the log-probabilities of the actions by an
advantage, `(reward - value) * log_prob`, and train the value towards the reward with a regression,
`mse_loss(value, reward)`. The advantage must be a constant in the policy term: with the value's
gradient in it, the policy loss also moves the critic, in a direction that depends on the
log-probabilities, and the critic's estimate drifts away from the return it is trained to predict.

Found in one function (or the module's own code) from how the program uses the values, not from names:
`a - b` multiplies another model output, while a regression loss (mse, l1, smooth-l1, huber, or a
squared difference in a function that calls backward) trains `b` towards `a`, `b` being assigned from a model's output (a call of a
layer or an `nn.Module`, outside `no_grad`) and used without `.detach()` in the product.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.static.interpret.bootstrap import REGRESSION_FUNCTIONS, REGRESSION_MODULES
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.frames import dotted_code
from torchlint.static.interpret.model_calls import is_model_call, with_history
from torchlint.static.traverse import code_scopes, nodes_of, target_names


@dataclass
class BaselineWithGradient:
    product: cst.BinaryOperation  # `(reward - value) * log_prob`
    baseline: str  # `value`
    regression: cst.CSTNode  # what trains it towards the return


_SQUARED = re.compile(r"\)\s*\*\*\s*2\b")


def baselines_with_gradient(ctx: FileContext) -> list[BaselineWithGradient]:
    if "backward" not in ctx.source:
        return []
    regressing = {call.scope.function for call in ctx.calls.values()
                  if (call.op == "loss" or call.form != "function") and _regressed(ctx, call.node)}
    if _SQUARED.search(ctx.source) is not None:  # `(ret - value) ** 2`: in a function that backpropagates
        regressing |= {call.scope.function for call in ctx.calls.values()
                       if call.form == "method" and call.name == "backward"}
    if not regressing:
        return []  # nothing trains a value towards a target: no baseline
    found: list[BaselineWithGradient] = []
    for name, scope in code_scopes(ctx.module):
        if name in regressing:
            found.extend(_in_scope(ctx, scope))
    return found


def _in_scope(ctx: FileContext, scope: list) -> list[BaselineWithGradient]:
    regressions: dict[frozenset, cst.CSTNode] = {}
    products = []
    model_outputs: set[str] = set()
    for root in scope:
        for node in nodes_of(root, (cst.Call, cst.BinaryOperation, cst.Assign)):
            if isinstance(node, cst.Assign):
                if isinstance(node.value, cst.Call) and is_model_call(ctx, node.value) and \
                        with_history(ctx, node.value):
                    model_outputs.update(n.value for t in node.targets for n in target_names(t.target))
            elif isinstance(node, cst.Call):
                pair = _regressed(ctx, node)
                if pair is not None:
                    regressions.setdefault(pair, node)
            elif isinstance(node.operator, cst.Power) and _is_two(node.right) and _difference(node.left):
                regressions.setdefault(frozenset(_difference(node.left)), node)
            elif isinstance(node.operator, cst.Multiply):
                products.append(node)
    found = []
    for product in products:
        for side, other in ((product.left, product.right), (product.right, product.left)):
            pair = _difference(side)
            if pair is None or frozenset(pair) not in regressions:
                continue
            target, baseline = pair
            if baseline not in model_outputs or target in model_outputs or not _model_value(other, model_outputs):
                continue
            if ctx.scope_of(product).no_grad:
                continue
            found.append(BaselineWithGradient(product, baseline, regressions[frozenset(pair)]))
            break
    return found


def _regressed(ctx: FileContext, call: cst.Call) -> frozenset | None:
    info = ctx.call(call)
    if info is None:
        return None
    regression = (info.form == "function" and info.qual in REGRESSION_FUNCTIONS) or (
        info.callee.kind in ("module", "instance") and info.callee.qual in REGRESSION_MODULES)
    args = [a.value for a in call.args if a.keyword is None]
    if not regression or len(args) < 2:
        return None
    codes = [dotted_code(a) for a in args[:2]]
    return frozenset(codes) if all(codes) and codes[0] != codes[1] else None


def _difference(node) -> tuple[str, str] | None:
    """`(a - b)` of two names or attributes: (a, b)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        left, right = dotted_code(node.left), dotted_code(node.right)
        if left and right and left != right:
            return left, right
    return None


def _model_value(node, model_outputs: set[str]) -> bool:
    """The other factor comes from a model: a model output's name, or an expression of one."""
    return any(n.value in model_outputs for n in ([node] if isinstance(node, cst.Name) else nodes_of(node, (cst.Name,))))


def _is_two(node) -> bool:
    return isinstance(node, cst.Integer) and node.value == "2"
