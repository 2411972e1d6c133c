"""TL302 missing-grad-clip: a training loop with no gradient clipping (recurrent/attention models)."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.context import FileContext
from torchlint.static.rules.base import Rule
from torchlint.static.interpret.training import CLIP, STEP, innermost_training_loops, loop_header

EXPLODING_PRONE = frozenset({
    "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
    "scaled_dot_product_attention",
})


class MissingGradClip(Rule):
    info = RuleInfo(
        "TL302", "missing-grad-clip", "warning",
        "A training loop with no clip_grad_norm_/clip_grad_value_ between backward and step.",
        tags=("training-loop", "nan"),
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
        why = f"this file uses {', '.join(prone)}, whose gradients can explode" if prone else "gradients can explode"
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
