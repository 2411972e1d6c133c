"""Evidence that a file runs models in float16: an fp16 autocast, a GradScaler, a `.half()` model.

A module whose own code shows none of these can still run in float16 when a project file that
imports it does (the training script autocasts the model its `forward` belongs to); the project
answers that through its import graph (``project_fp16_evidence``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst

from torchlint.static.interpret.autocast import autocast_dtype
from torchlint.static.interpret.context import FileContext

SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cpu.amp.GradScaler",
                     "torch.amp.grad_scaler.GradScaler"})


def fp16_evidence(ctx: FileContext):
    """The first call of the file that puts a model in float16 (its node), or None."""
    for call in ctx.calls.values():
        if call.form == "function" and call.qual in SCALERS:
            return call.node
        if call.form == "function" and (call.qual or "").endswith("autocast") and \
                autocast_dtype(ctx, call.node) == "float16":
            return call.node
        if call.form == "function" and call.qual == "apex.amp.initialize":
            return call.node  # every opt_level (O1 to O3) runs in float16
        if call.form == "method" and call.receiver is not None and call.name in ("half", "to") and \
                (call.name == "half" and not call.args or call.name == "to" and _half_dtype(ctx, call)):
            receiver = ctx.value(call.receiver)
            if receiver.kind in ("instance", "module"):
                return call.node
    return None


def converts_whole_model(node) -> bool:
    """Evidence (from ``fp16_evidence``) that converts a whole model to float16 (`.half()`,
    `.to(torch.float16)`): every tensor it computes is float16, unlike an autocast, which keeps
    reductions in float32."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value in ("half", "to")


def _half_dtype(ctx: FileContext, call) -> bool:
    """`.to(torch.float16)`, `.to(device, dtype=torch.half)`."""
    candidates = [call.kwargs["dtype"]] if "dtype" in call.kwargs else call.args
    return any(ctx.value(node).kind == "dtype" and ctx.value(node).half for node in candidates)


def project_fp16_evidence(ctx: FileContext, accept: Callable[[Any, Path | None], bool] | None = None):
    """(node, path) of the call that runs models in float16: this file's own (path ""), else that of
    the nearest project module importing it (up to three imports away); None when there is none.
    ``accept(node, importer path or None)`` can refuse a kind of evidence or an importer."""
    node = fp16_evidence(ctx)
    if node is not None:
        return (node, "") if accept is None or accept(node, None) else None
    if ctx.project is None or ctx.file is None:
        return None
    importer = ctx.project.importer_where(
        ctx.file, ctx.deps,
        lambda summary: summary.fp16 is not None and (accept is None or accept(summary.fp16, summary.path)))
    if importer is None:
        return None
    summary = ctx.project.summary_at(str(importer))
    return (summary.fp16, str(importer)) if summary is not None and summary.fp16 is not None else None
