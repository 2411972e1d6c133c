"""TL313 inverted-step-condition: an optimizer step gated by `if count % k:`, which skips the multiples of k."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.interpret.training import STEP, innermost_training_loops
from torchlint.static.rules.base import Rule


class InvertedStepCondition(Rule):
    info = RuleInfo(
        "TL313", "inverted-step-condition", "error",
        "`if i % k:` is true when i is NOT a multiple of k: the step runs on the wrong iterations, and never "
        "when k is 1.",
        tags=("training-loop",),
    )

    def on_end(self, ctx: FileContext) -> None:
        reported: set[int] = set()
        for _loop, steps in innermost_training_loops(ctx):
            for action in steps:
                if action.kind != STEP:
                    continue
                for test, passes in action.gates:
                    modulo = _bare_modulo(test)
                    if modulo is None or not passes or id(test) in reported:
                        continue
                    reported.add(id(test))
                    ctx.report(
                        self.info, test,
                        f"`if {ctx.code(test, 60)}:` gates `{ctx.code(action.node, 40)}`, but a remainder is true "
                        "when it is not 0: the step runs on every iteration except the multiples of "
                        f"`{ctx.code(modulo.right, 40)}`, and never when that is 1 (accumulation's usual default: "
                        f"the model is not updated at all). Test `{ctx.code(modulo, 60)} == 0`",
                        related=((action.node, "the step it gates"),),
                    )


def _bare_modulo(test) -> cst.BinaryOperation | None:
    """`count % k` used as the whole test (or `% k != 0`): true where count is not a multiple of k."""
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo):
        return test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and \
            isinstance(test.left, cst.BinaryOperation) and isinstance(test.left.operator, cst.Modulo):
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.NotEqual, cst.GreaterThan)) and \
                isinstance(target.comparator, cst.Integer) and target.comparator.value == "0":
            return test.left
    return None
