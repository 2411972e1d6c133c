"""TL116 hand-written-entropy: p * log(p) (or exp(lp) * lp) where a probability is exactly 0."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.facts.ops import LOG_OPS
from torchlint.static.facts.values import UNDERFLOW, Value
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.frames import params_of
from torchlint.static.interpret.grad_mode import whole_program
from torchlint.static.rules.base import Rule
from torchlint.static.traverse import local_assignments, nodes_of

# `float("-inf")`, `-math.inf`, `torch.inf`, `np.inf`: where a -inf can come from (not `isinf`, not `info`)
_INFINITY = re.compile(r"\binf\b|\bInfinity\b")
_NAN_HANDLING = frozenset({"nansum", "nanmean"})
# Log-probabilities that are -inf exactly where a logit is -inf (a masked vocabulary entry).
_LOG_PROBABILITIES = frozenset({"log_softmax"})


def _same(a: Value, b: Value | None) -> bool:
    """Two facts about one tensor: the same value, or values produced by the same expression."""
    if b is None:
        return False
    return a is b or (a.node is not None and a.node is b.node)


def _probability(value: Value) -> bool:
    """Non-negative with evidence that exactly 0 is reached (a softmax underflows, a ReLU, a count)."""
    return value.lo >= 0 and value.reaches_zero(UNDERFLOW)


def _may_be_masked(logits: Value | None) -> bool:
    """Logits that can hold -inf: handed in by the caller (a library function's argument, which
    top-k/top-p filtering or a padding mask may have set to -inf), not a layer's finite output."""
    if logits is None:
        return True
    return logits.op is None and not logits.kind and not logits.unbounded and logits.tracked is not True


def _computed_here(ctx: FileContext, log_call) -> bool:
    """The logits given to the log-softmax are a name the enclosing function computes itself, on
    every path, with arithmetic or calls (`logits = h @ w.t()`, then rescaled or soft-capped), never
    filled with -inf: not a caller's tensor that masking may have set to -inf."""
    call = ctx.call(log_call) if isinstance(log_call, cst.Call) else None
    argument = call.operand if call is not None else None
    if not isinstance(argument, cst.Name) or not ctx.enclosing:
        return False
    function = ctx.enclosing[-1]
    if argument.value in {param.name.value for param in params_of(function.params)}:
        return False
    assigned = ctx.assignments(function).get(argument.value)
    if not assigned or any(not isinstance(value, (cst.Call, cst.BinaryOperation)) for value in assigned):
        return False  # a loop variable, a plain copy of another name, an augmented assignment: unknown
    return not any(_fills_minus_inf(node) for node in nodes_of(function.body, (cst.Call,)))


def _fills_minus_inf(call: cst.Call) -> bool:
    """`x.masked_fill(mask, float("-inf"))` and the like: a -inf written into a tensor."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ("masked_fill", "masked_fill_", "fill_", "where", "full", "full_like", "fill_diagonal_")


def _never_infinite(ctx: FileContext) -> bool:
    """A whole program (a notebook, or a script no project module imports) in which neither this file
    nor a project module it imports writes an infinity: its logits cannot be -inf (a network's outputs,
    masked with finite values if at all)."""
    found = ctx.memo.get("never infinite")
    if found is None:
        found = ctx.memo["never infinite"] = whole_program(ctx) and not _INFINITY.search(ctx.source) and not any(
            _INFINITY.search(_text(path)) for path in ctx.deps)
    return found


def _text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "inf"  # unknown: as if it wrote one


class HandWrittenEntropy(Rule):
    info = RuleInfo(
        "TL116", "hand-written-entropy", "warning",
        "p * log(p) is 0 * -inf = NaN where a probability is exactly 0; use torch.special.entr or xlogy.",
        tags=("numerics", "nan"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        # `(p * log p).nansum()` / `torch.nan_to_num(p * log p)`: the code drops the NaN itself
        if call.op in _NAN_HANDLING or (call.qual or "").endswith("nan_to_num"):
            target = call.operand
            if isinstance(target, cst.BinaryOperation):
                ctx.claim(target)

    def on_binop(self, ctx: FileContext, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Multiply) or ctx.is_claimed(node):
            return
        left, right = ctx.value(node.left), ctx.value(node.right)
        for p_node, p, log_node, log in ((node.left, left, node.right, right), (node.right, right, node.left, left)):
            if log.op in LOG_OPS and _same(p, log.of) and _probability(p):
                self._report(ctx, node, log_node, (
                    f"`{ctx.code(node, 50)}` is an entropy term written by hand: `{ctx.code(p_node, 30)}` is "
                    f"{p.desc or 'a probability'} and is exactly 0 somewhere, where `{ctx.code(log_node, 30)}` "
                    "is -inf and the product 0 * -inf is NaN (in the value and in the gradient). Use "
                    "torch.special.entr(p) (or torch.xlogy(p, p)), which define 0 * log 0 as 0"))
                return
            from_logs = (p.op == "exp" and _same(log, p.of)) or (p.op == "softmax" and _same(p.of, log.of))
            if from_logs and log.op in _LOG_PROBABILITIES and _may_be_masked(log.of) and \
                    not _computed_here(ctx, log.node) and not _never_infinite(ctx):
                self._report(ctx, node, log_node, (
                    f"`{ctx.code(node, 50)}` is an entropy term written by hand from log-probabilities: "
                    f"where a logit is -inf (a masked token, top-k/top-p filtering, padding), "
                    f"`{ctx.code(log_node, 30)}` is -inf, its exp is 0, and 0 * -inf is NaN. Use "
                    "torch.special.entr(probs), or torch.distributions.Categorical(logits=...).entropy()"))
                return

    def _report(self, ctx: FileContext, node: cst.BinaryOperation, log_node, message: str) -> None:
        ctx.claim(node)
        log_call = ctx.value(log_node).node
        if isinstance(log_call, cst.CSTNode):
            ctx.claim(log_call)  # one finding: TL102/TL101 on the log inside would name the same bug
        ctx.claim(log_node)
        ctx.report(self.info, node, message)
