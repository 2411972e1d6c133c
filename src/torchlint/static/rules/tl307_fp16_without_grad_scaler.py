"""TL307 fp16-without-grad-scaler: float16 autocast in a training loop whose backward is not scaled."""

from __future__ import annotations

from torchlint.rule import RuleInfo
from torchlint.static.interpret.autocast import autocast_dtype
from torchlint.static.interpret.context import CallInfo, FileContext
from torchlint.static.interpret.training import BACKWARD, body_entries, innermost_training_loops, uses_scaler
from torchlint.static.rules.base import Rule


class Fp16WithoutGradScaler(Rule):
    info = RuleInfo(
        "TL307", "fp16-without-grad-scaler", "warning",
        "A float16 autocast forward trained without a GradScaler: small gradients flush to zero.",
        tags=("training-loop", "mixed-precision"),
    )

    def on_end(self, ctx: FileContext) -> None:
        if any(call.name == "GradScaler" for call in ctx.calls.values()):
            return  # a scaler exists (perhaps enabled by a flag): TL305 looks at how it is used
        on_cuda = _mentions_cuda(ctx.source)
        done = set()
        for loop, steps in innermost_training_loops(ctx):
            if uses_scaler(steps) or any(a.kind == BACKWARD and a.call is not None and a.call.args
                                         for a in steps):
                continue  # `accelerator.backward(loss)` / `fabric.backward(loss)` scale for themselves
            backwards = [a for a in steps if a.kind == BACKWARD]
            for entry, cond, _via in body_entries(ctx, loop):
                if not isinstance(entry, CallInfo) or id(entry.node) in done:
                    continue
                dtype = autocast_dtype(ctx, entry.node)
                # the backward of the same path: `if use_amp: autocast ... else: loss.backward()` has none
                backward = next((a for a in backwards if _compatible(a.cond, cond)), None)
                if backward is not None and (dtype == "float16" or (dtype == "default" and on_cuda)):
                    done.add(id(entry.node))
                    ctx.report(
                        self.info, entry.node,
                        f"`{ctx.code(entry.node)}` runs the forward in float16, but "
                        f"`{ctx.code(backward.node, 40)}` is not scaled: gradients below ~6e-8 flush to zero "
                        "in float16 and training silently stalls. Use torch.amp.GradScaler "
                        "(scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()), or autocast "
                        "to torch.bfloat16",
                        related=((backward.node, "the unscaled backward"),),
                    )


def _compatible(a, b) -> bool:
    """Two sets of flags (`if use_amp:` -> ("use_amp", True)) that one run can hold together."""
    held = dict(a)
    return all(held.get(flag, value) == value for flag, value in b)


def _mentions_cuda(source: str) -> bool:
    """The script targets a GPU, where autocast without a dtype means float16."""
    return '"cuda' in source or "'cuda" in source or ".cuda()" in source
