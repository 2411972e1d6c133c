"""torchlint: find NaN/Inf, autograd, training-loop, memory and reproducibility bugs in PyTorch code."""

from __future__ import annotations

__version__ = "0.1.0"

from torchlint.api import check_paths, check_source
from torchlint.finding import Edit, Finding, Fix

__all__ = ["Edit", "Finding", "Fix", "check_paths", "check_source", "__version__"]
