"""Reading an optimizer's state on the slow path: why an update went non-finite or does nothing.

Adaptive optimizers (Adam, AdamW, RMSprop, Adagrad...) divide by `sqrt(v) + eps`, where `v`
(`exp_avg_sq`, `square_avg`, `sum`) is a running mean of squared gradients. When `v` is 0 and eps
is 0 in the parameter's dtype (eps=0, or 1e-8 in float16), the update is x/0.
"""

from __future__ import annotations

import torch

SECOND_MOMENTS = ("exp_avg_sq", "square_avg", "sum")


def _group_of(optimizer: torch.optim.Optimizer, param: torch.Tensor) -> dict:
    return next((g for g in optimizer.param_groups if any(p is param for p in g["params"])), {})


def _second_moment(optimizer: torch.optim.Optimizer, param: torch.Tensor):
    state = optimizer.state.get(param, {})
    return next(((key, state[key]) for key in SECOND_MOMENTS if isinstance(state.get(key), torch.Tensor)),
                (None, None))


def _eps_note(eps: float, dtype: torch.dtype) -> str:
    if eps == 0:
        return "eps=0"
    if torch.tensor(eps, dtype=dtype).item() == 0:
        return f"eps={eps:g} rounds to 0 in {str(dtype).removeprefix('torch.')}"
    return ""


def explain_non_finite(optimizer: torch.optim.Optimizer, param: torch.Tensor) -> str:
    """`: ...` naming the cause an optimizer's state shows for a parameter that went NaN/Inf, or ''."""
    key, moment = _second_moment(optimizer, param)
    group = _group_of(optimizer, param)
    eps = group.get("eps")
    if moment is None or eps is None:
        lr = group.get("lr")
        return f": the update lr*grad overflowed (lr={lr:g})" if isinstance(lr, float) else ""
    bad = ~torch.isfinite(param.detach())
    zero = int(((moment == 0) & bad).sum())
    note = _eps_note(eps, param.dtype)
    if zero and note:
        return (f": {type(optimizer).__name__}'s {key} is 0 at {zero} of its {int(bad.sum())} non-finite entries and "
                f"{note}, so the update divided by zero")
    if note:
        return f": {type(optimizer).__name__} divides by sqrt({key}) + eps with {note}"
    return ""


def explain_vanishing(optimizer: torch.optim.Optimizer, grad_norm: float, floor: float) -> str:
    """Why a run whose every gradient is 0 (or below an adaptive optimizer's eps) does not learn."""
    size = "exactly 0" if grad_norm == 0 else f"below eps={floor:g} (norm {grad_norm:.3g})"
    params = [p for group in optimizer.param_groups for p in group["params"]]
    moments = [m for m in (_second_moment(optimizer, p)[1] for p in params) if m is not None]
    if moments:
        zero = sum(int((m == 0).sum()) for m in moments)
        total = sum(m.numel() for m in moments)
        name = type(optimizer).__name__
        effect = "every update is 0" if grad_norm == 0 else "each update is lr*m/eps, scaled by eps, not by the gradients"
        return (f"every gradient is {size}: {name}'s second-moment state is 0 in {zero} of {total} entries and "
                f"{effect}: the model does not learn (gradients underflowed, or the loss does not depend on the "
                "parameters)")
    return (f"every gradient is {size}: the parameters do not change and the model does not learn "
            "(gradients underflowed, or the loss does not depend on the parameters)")
