"""Why an update exploded, from what can be observed: the learning rate, clipping, warm-up.

Clipping is seen at runtime (`clip_grad_norm_`, `clip_grad_value_` and `clip_grads_with_norm_`
are wrapped while a watch is on, which also catches Lightning's `gradient_clip_val`, the HF
Trainer's `max_grad_norm` and Accelerate's `clip_grad_norm_`) or in the user's source text.
Warm-up is read from the optimizer: a scheduler sets each group's `initial_lr`, and a warm-up
starts below it.
"""

from __future__ import annotations

import contextlib

import torch

CLIPPERS = ("clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_")
EARLY = 20  # steps: an explosion this early without warm-up points at it


@contextlib.contextmanager
def clipping_seen(on_clip):
    """Call `on_clip()` whenever a gradient-clipping function of torch runs, while inside."""
    import torch.nn.utils as utils
    import torch.nn.utils.clip_grad as clip_grad

    saved = []
    for namespace in (utils, clip_grad):
        for name in CLIPPERS:
            original = getattr(namespace, name, None)
            if original is None or getattr(original, "__torchlint_wrapped__", False):
                continue

            def wrapper(*args, __original=original, **kwargs):
                on_clip()
                return __original(*args, **kwargs)

            wrapper.__torchlint_wrapped__ = True
            wrapper.__wrapped__ = original
            wrapper.__name__ = name
            wrapper.__doc__ = original.__doc__
            saved.append((namespace, name, original))
            setattr(namespace, name, wrapper)
    try:
        yield
    finally:
        for namespace, name, original in saved:
            setattr(namespace, name, original)


def _written_in(paths) -> bool:
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as source:
                if "clip_grad" in source.read():
                    return True
        except OSError:
            continue
    return False


def update_causes(optimizer: torch.optim.Optimizer, param: torch.Tensor, step: int, grad_norm: float,
                  weight_norm: float, lr_used, first_lr, clipped: bool, sources) -> str:
    """`; likely cause: ...` naming the learning rate, missing clipping and missing warm-up, or ''."""
    group = next((g for g in optimizer.param_groups if any(p is param for p in g["params"])), {})
    causes = []
    lr = lr_used if isinstance(lr_used, (int, float)) else group.get("lr")
    if isinstance(lr, (int, float)):
        if "exp_avg_sq" in optimizer.state.get(param, {}) or "square_avg" in optimizer.state.get(param, {}):
            causes.append(f"lr={lr:g} (an adaptive optimizer moves each weight by about lr per step, against "
                          f"weights of norm {weight_norm:.3g})")
        else:
            causes.append(f"lr={lr:g} (lr x gradient norm = {lr * grad_norm:.3g}, against weights of norm "
                          f"{weight_norm:.3g})")
    if not clipped and not _written_in(sources):
        causes.append("the gradients are not clipped (no clip_grad_norm_ call seen)")
    initial = group.get("initial_lr")
    if step <= EARLY:
        if initial is None:
            causes.append(f"no warm-up (no lr scheduler: the full lr from step 1, and this is step {step})")
        elif isinstance(first_lr, (int, float)) and first_lr >= initial:
            causes.append(f"no warm-up (the scheduler starts at its full lr {initial:g}; this is step {step})")
    return f"; likely cause: {'; '.join(causes)}" if causes else ""
