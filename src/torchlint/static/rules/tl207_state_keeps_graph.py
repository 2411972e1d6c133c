"""TL207 state-keeps-graph: an object's state carries one step's autograd graph into the next."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.carried_state import carried_states
from torchlint.static.interpret.persistent_state import state_writes
from torchlint.static.interpret.training import BACKWARD, classify, innermost_training_loops
from torchlint.static.rules.base import Rule

TRAINS = "TL207 backward"  # memo key: the file backpropagates


class StateKeepsGraph(Rule):
    info = RuleInfo(
        "TL207", "state-keeps-graph", "error",
        "An attribute that lives from one training step to the next (a memory bank, a queue, a running "
        "statistic, a stored hidden state) is updated with a tensor that has autograd history: the next "
        "step's backward runs into this step's freed graph, or the graphs chain and memory grows.",
        tags=("autograd", "memory"),
    )

    def on_call(self, ctx: FileContext, call: CallInfo) -> None:
        if TRAINS not in ctx.memo and classify(ctx, call) == BACKWARD:
            ctx.memo[TRAINS] = True

    def on_end(self, ctx: FileContext) -> None:
        if TRAINS not in ctx.memo:
            return  # an inference-only file (a KV cache written in forward): nothing backpropagates
        for write in state_writes(ctx.module, ctx):
            how = (f"`self.{write.attr}` is rebuilt from itself and `{ctx.code(write.value, 40)}`, which has autograd "
                   "history, so each step's graph hangs on the previous one's" if write.form == "recurrence" else
                   f"`{ctx.code(write.value, 40)}`, which has autograd history, is written into `self.{write.attr}`, "
                   "which keeps it (and the graph behind it) after the step")
            ctx.report(
                self.info, write.node,
                f"{how}: the next backward() that reaches `self.{write.attr}` fails (\"Trying to backward through "
                "the graph a second time\") or backpropagates into earlier steps, and memory grows step after "
                f"step. Store `{ctx.code(write.value, 30)}.detach()`, or update under `torch.no_grad()`",
            )
        for state in carried_states(ctx, [loop for loop, _steps in innermost_training_loops(ctx)]):
            ctx.report(
                self.info, state.write,
                f"`{state.name}` is the model's output with autograd history, and `{ctx.code(state.read, 40)}` "
                "reads it in the next iteration: that forward builds on this step's graph, which backward() frees, "
                "so the next backward() fails (\"Trying to backward through the graph a second time\") or, with "
                f"retain_graph, runs through every earlier step while memory grows. Detach it once per step "
                f"(`{state.name} = {state.name}.detach()`)",
                related=((state.read, "the next iteration's forward reads it here"),),
            )
