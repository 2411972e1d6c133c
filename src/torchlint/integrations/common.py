"""What the framework integrations share: the event text, the user's line, the set-up check of an
optimizer, and whether `torchlint run` already watches the whole process."""

from __future__ import annotations

import os
import sys

from torchlint.runtime.records import Event

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the torchlint package


def describe(event: Event) -> str:
    """One event as the text report prints it (with the static findings it confirms)."""
    from torchlint.report.text import display_path

    where = f"{display_path(event.file)}:{event.line}: " if event.file else ""
    when = f"at step {event.step}" if event.step else "before the first step"
    lines = [f"torchlint: {where}{event.code} {event.name} {when}: {event.message}"]
    lines.extend(f"  confirms {f.code} {f.name} (static) at {display_path(f.path)}:{f.line}"
                 for f in event.confirmed)
    return "\n".join(lines)


def user_site() -> tuple[str | None, int | None]:
    """The innermost calling frame in the user's code: not torchlint's, an installed library's or
    the standard library's (the `Trainer(...)` line when called from inside its `__init__`)."""
    from torchlint.runtime.reductions import installed

    frame = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if not file.startswith("<") and not os.path.abspath(file).startswith(HERE + os.sep) and not installed(file):
            return os.path.abspath(file), frame.f_lineno
        frame = frame.f_back
    return None, None


def process_watch():
    """The process-wide watch of `torchlint run`, when one is on: a callback then leaves the
    watching to it instead of hooking the same steps twice."""
    from torchlint.runtime.watch import Watch

    return Watch.process


def optimizer_events(optimizer, model, fix: str, site: tuple[str | None, int | None] = (None, None)) -> list[Event]:
    """TL110 before the first step: an adaptive optimizer with eps=0, or with an eps that rounds to 0
    on the float16 parameters it updates. The fused kernels add eps in float32, so their groups are
    left out (the Hugging Face Trainer's default `adamw_torch_fused` on torch >= 2.8)."""
    import torch

    optimizer = getattr(optimizer, "optimizer", optimizer)  # Accelerate's AcceleratedOptimizer
    groups = getattr(optimizer, "param_groups", [])
    if not any(group.get("eps") == 0 or any(p.dtype == torch.float16 for p in group["params"]) for group in groups):
        return []  # the common case, decided without loading the static rule's module
    from torchlint.static.rules.tl110_risky_optimizer_config import (
        ADAPTIVE,
        FLOAT16_TINY,
        RiskyOptimizerConfig,
    )

    name = type(optimizer).__name__
    if name not in ADAPTIVE:
        return []
    names = {id(p): n for n, p in model.named_parameters()} if model is not None else {}
    info = RiskyOptimizerConfig.info
    for group in optimizer.param_groups:
        eps = group.get("eps")
        if not isinstance(eps, (int, float)):
            continue
        half = [p for p in group["params"] if p.dtype == torch.float16]
        if eps == 0:
            message = (f"`{name}` has eps=0: the update divides by sqrt(v) + eps, so a parameter with zero "
                       "gradient history gives 0/0 = NaN; keep eps > 0")
        elif half and eps < FLOAT16_TINY and not group.get("fused"):
            first = names.get(id(half[0]), "")
            example = f" (such as `{first}`)" if first else ""
            message = (f"`{name}` updates {len(half)} float16 parameter tensor(s){example} with eps={eps:g}, "
                       f"below float16's smallest value ({FLOAT16_TINY:g}): eps rounds to 0, so wherever the "
                       "average of squared gradients underflows (gradients below about 5e-3) the update divides "
                       f"by zero and the parameter turns inf/NaN; {fix}")
        else:
            continue
        return [Event(info.code, info.name, 0, message, file=site[0], line=site[1])]
    return []
