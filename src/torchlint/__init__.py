"""torchlint: find NaN/Inf, autograd, training-loop, memory and reproducibility bugs in PyTorch code."""

from __future__ import annotations

__version__ = "0.1.0"

from torchlint.api import check_paths, check_source
from torchlint.finding import Edit, Finding, Fix


def watch(model, optimizer, **options):
    """`with torchlint.watch(model, optimizer) as w:` runtime checks inside your own loop (needs torch)."""
    from torchlint.runtime.watch import watch as _watch

    return _watch(model, optimizer, **options)


__all__ = ["Edit", "Finding", "Fix", "check_paths", "check_source", "watch", "__version__"]
