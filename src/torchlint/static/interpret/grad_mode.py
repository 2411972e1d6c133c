"""Code through which no gradient is ever taken: a program that differentiates nothing.

A notebook, or a script run as `__main__` that no project module imports, is a whole program. When
neither it nor any project module it imports differentiates (no `backward()`, `autograd.grad`,
optimizer `step()`, `fit()` or `train()`), a hazard of the gradient alone never happens in it: the
inf gradient of sqrt at 0, or the NaN a backward would carry from one degenerate sample to every
weight (u2net's test scripts min-max normalise a saliency map to write a PNG).
"""

from __future__ import annotations

import re

import libcst as cst

DIFFERENTIATING = frozenset({"backward", "grad", "step", "fit", "train", "manual_backward"})
# the same in a module's text (project modules are read as summaries, not walked here)
TRAINS = re.compile(rb"\.(?:backward|manual_backward|grad|step|fit|train)\(")  # calls, not `def step(`


def never_differentiated(ctx) -> bool:
    """This file is a whole program through which no gradient is ever taken (see the module's doc)."""
    found = ctx.memo.get("never differentiated")
    if found is None:
        found = ctx.memo["never differentiated"] = _never(ctx)
    return found


def _never(ctx) -> bool:
    if any(call.name in DIFFERENTIATING for call in ctx.calls.values()):
        return False
    if ctx.path.endswith(".ipynb"):
        return True
    if not whole_program(ctx):
        return False  # imported by others (or by too many to see): they may differentiate through it
    for path in ctx.deps:
        summary = ctx.project.summary_at(path)
        if summary is None or summary.trains:
            return False
    return True


def whole_program(ctx) -> bool:
    """A notebook, or a script run as `__main__` that no project module imports: every value in it is
    made in it or in the project modules it imports (``ctx.deps``)."""
    if ctx.path.endswith(".ipynb"):
        return True
    return ctx.project is not None and ctx.file is not None and _is_script(ctx.module) and \
        ctx.project.importers(ctx.file) == []


def _is_script(module: cst.Module) -> bool:
    """Run as a program: an `if __name__ == "__main__":` block."""
    for statement in module.body:
        if isinstance(statement, cst.If) and isinstance(statement.test, cst.Comparison):
            left = statement.test.left
            if isinstance(left, cst.Name) and left.value == "__name__":
                return True
    return False


def eval_branch(scope) -> bool:
    """Under `if not self.training:` (or the `else` of `if self.training:`): a module's evaluation or
    inference path (YOLO's box decoding), whose outputs no training step backpropagates through."""
    for test, holds in scope.gates:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, holds = test.expression, not holds
        if not holds and _self_training(test):
            return True
    return False


def training_branch(scope) -> bool:
    """Under `if self.training:` (also `if self.training and p > 0:`): code that runs only while the
    module trains (dropout applied by hand only then)."""
    for test, holds in scope.gates:
        parts = [test]
        while parts:
            part = parts.pop()
            if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.And):
                parts.extend((part.left, part.right))
            elif holds and _self_training(part):
                return True
    return False


def _self_training(node) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "training" and \
        isinstance(node.value, cst.Name) and node.value.value == "self"
