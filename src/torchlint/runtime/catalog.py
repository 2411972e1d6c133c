"""Runtime rules (torch-free metadata, so the catalog can list them without importing torch)."""

from torchlint.catalog import RuleInfo

NON_FINITE_FORWARD = RuleInfo(
    "TL901", "non-finite-forward", "error",
    "A module produced NaN/Inf in the forward pass (runtime: names the module, the op and its line).",
    tags=("runtime", "nan"), precision="very-high",
)
NON_FINITE_GRADIENT = RuleInfo(
    "TL902", "non-finite-gradient", "error",
    "The gradients of a step are NaN/Inf (runtime).", tags=("runtime", "nan"), precision="very-high",
)
EXPLODING_GRADIENT = RuleInfo(
    "TL903", "exploding-gradient", "warning",
    "The gradient norm jumped far above its running median, before it turns into NaN (runtime).",
    tags=("runtime", "nan"), precision="high",
)
MEMORY_GROWTH = RuleInfo(
    "TL904", "memory-growth", "warning",
    "Memory grows step after step: something keeps every iteration alive (runtime; see TL402).",
    tags=("runtime", "memory"), precision="medium",
)
NONDETERMINISTIC = RuleInfo(
    "TL905", "nondeterministic", "warning",
    "Two runs with the same seeds differ (runtime --repro): the first differing step and parameter.",
    tags=("runtime", "reproducibility"), precision="high",
)
RUNTIME_RULES = (NON_FINITE_FORWARD, NON_FINITE_GRADIENT, EXPLODING_GRADIENT, MEMORY_GROWTH, NONDETERMINISTIC)
