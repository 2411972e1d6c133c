"""The watch beside `torch.compile`: what torch says about torchlint's global hooks stays unsaid."""

from __future__ import annotations

import contextlib
import warnings


@contextlib.contextmanager
def quiet_about_global_hooks():
    """torch warns that `torch.compile(module)` runs global hooks once more for its wrapper: those are
    torchlint's, and the warning is not the program's business. Only that filter is added and removed."""
    warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks")
    entry = warnings.filters[0]
    try:
        yield
    finally:
        if entry in warnings.filters:
            warnings.filters.remove(entry)
            warnings._filters_mutated()
