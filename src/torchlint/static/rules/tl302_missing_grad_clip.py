"""TL302 missing-grad-clip: a training loop with no gradient clipping (recurrent/attention models)."""

from __future__ import annotations

import libcst as cst

from torchlint.rule import RuleInfo
from torchlint.static.interpret.expressions import string_key
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import CLIP, STEP, innermost_training_loops, loop_header

EXPLODING_PRONE = frozenset({
    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
    "scaled_dot_product_attention",
})

# recurrences backpropagate through time: the same weights multiply the gradient at every step
RECURRENT = frozenset({"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"})

DEFAULT_LR = {f"torch.optim.{name}": lr for name, lr in (
    ("Adam", 1e-3), ("AdamW", 1e-3), ("Adamax", 2e-3), ("NAdam", 2e-3), ("RAdam", 1e-3),
    ("RMSprop", 1e-2), ("Adagrad", 1e-2), ("Adadelta", 1.0),
)}


class MissingGradClip(Rule):
    info = RuleInfo(
        "TL302", "missing-grad-clip", "warning",
        "A training loop with no clip_grad_norm_/clip_grad_value_ between backward and step.",
        tags=("training-loop", "nan"), precision="low", default_enabled=False,
        options={"mode": "auto", "mode:choices": ("auto", "always", "off")},
    )

    def on_end(self, ctx: FileContext) -> None:
        mode = ctx.option(self.info, "mode")
        if mode == "off":
            return
        prone = sorted({c.name for c in ctx.calls.values()
                        if (c.qual or "").startswith("torch.") and c.name in EXPLODING_PRONE}
                       | _imported_layers(ctx))
        if mode == "auto" and not prone:
            return
        unnormalised = _unnormalised_update(ctx, recurrent=bool(RECURRENT.intersection(prone)))
        if mode == "auto" and unnormalised is None:
            return  # Adam-family updates on mean losses: short recurrences train fine unclipped
        why = f"this file uses {', '.join(prone)}, whose gradients can explode" if prone else "gradients can explode"
        if unnormalised:
            why += f", and {unnormalised}"
        for loop, steps in innermost_training_loops(ctx):
            if any(a.kind == CLIP for a in steps):
                continue
            if any(a.kind == STEP and a.call is not None and a.call.args for a in steps):
                continue  # `optimizer.step(closure)`: LBFGS-style line searches bound the update
            ctx.report(
                self.info, loop_header(loop),
                f"training loop without gradient clipping: {why}, and one large batch turns the weights into "
                "inf/NaN. Call torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) between "
                "backward() and step()",
            )


def _unnormalised_update(ctx: FileContext, recurrent: bool) -> str | None:
    """Evidence that gradient size reaches the weights unscaled: a plain SGD step (no per-parameter
    normalisation) of a recurrent model (attention alone does not multiply the gradient through
    time: transformers train with SGD unclipped), an adaptive optimizer at 10x or more its default learning rate, a loss summed rather than averaged (its gradient grows with batch and sequence
    length), or a CTC loss (infinite on infeasible alignments). None when there is none."""
    for call in ctx.calls.values():
        qual = call.qual or ""
        if not qual.startswith("torch.") and call.name != "backward":
            continue
        if qual == "torch.optim.SGD" and recurrent:
            return "plain SGD applies the gradient unnormalised"
        default = DEFAULT_LR.get(qual)
        lr = ctx.value(call.param(1, "lr")) if default is not None else None
        if lr is not None and lr.op == "const" and lr.const is not None and lr.const >= 10 * default:
            return f"lr={lr.const:g} is {lr.const / default:g}x {call.name}'s default step"
        if call.name in ("CTCLoss", "ctc_loss"):
            return "a CTC loss is infinite on alignments it cannot make"
        if call.name == "backward" and call.form == "method" and call.receiver is not None \
                and ctx.value(call.receiver).op == "sum":
            return f"`{ctx.code(call.receiver, 30)}` is a sum, so its gradient grows with the batch"
        if call.scope.no_grad:
            continue  # an evaluation loss is never differentiated
        reduction = call.kwargs.get("reduction")
        if string_key(reduction) == "sum" or _false(call.kwargs.get("size_average")):
            return f"`{ctx.code(call.node, 40)}` sums the loss, so its gradient grows with the batch"
    return None


def _false(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _imported_layers(ctx: FileContext) -> set[str]:
    """Recurrent/attention layers of the project classes this file imports (`from model import CRNN`)."""
    found = set()
    for value in ctx.names.values():
        if value.kind == "class" and value.cls is not None and value.cls.is_module:
            for attr in value.cls.attrs.values():
                name = (attr.qual or "").rsplit(".", 1)[-1]
                if attr.kind == "module" and name in EXPLODING_PRONE:
                    found.add(name)
    return found
