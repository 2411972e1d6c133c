"""Runtime rules (torch-free metadata, so the catalog can list them without importing torch)."""

from torchlint.rule import RuleInfo

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
NON_FINITE_PARAMETER = RuleInfo(
    "TL906", "non-finite-parameter", "error",
    "optimizer.step() left a parameter NaN/Inf (runtime: names the parameter and, from the optimizer's "
    "state, the cause).", tags=("runtime", "nan"), precision="very-high",
)
VANISHING_GRADIENT = RuleInfo(
    "TL907", "vanishing-gradient", "warning",
    "Every gradient is 0, or below an adaptive optimizer's eps, for several steps in a row: the model does not "
    "learn (runtime).", tags=("runtime", "optimizer"), precision="high",
)
GRAPH_KEPT_ALIVE = RuleInfo(
    "TL908", "graph-kept-alive-at-runtime", "warning",
    "The autograd graphs of earlier steps' losses are still alive steps later: something keeps every step's "
    "loss (runtime; confirms TL402 whatever the memory per step).", tags=("runtime", "memory"),
    precision="very-high",
)
GRADIENTS_NOT_CLEARED = RuleInfo(
    "TL909", "gradients-not-cleared", "error",
    "backward() starts while the previous step's gradients are untouched since optimizer.step(): no "
    "zero_grad() (runtime; confirms TL301).", tags=("runtime", "training-loop"), precision="very-high",
)
UNUSED_PARAMETERS = RuleInfo(
    "TL910", "ddp-unused-parameters", "error",
    "Under DistributedDataParallel without find_unused_parameters, a step left parameters without a gradient: "
    "the next forward fails (runtime).", tags=("runtime", "distributed"), precision="very-high",
)
RANKS_DIVERGED = RuleInfo(
    "TL911", "ranks-diverged", "error",
    "The parameters of a DistributedDataParallel model differ between ranks: they were changed on some "
    "ranks only, and the ranks now train different models (runtime).", tags=("runtime", "distributed"),
    precision="very-high",
)
RAW_PIXELS = RuleInfo(
    "TL912", "unnormalised-image-input", "warning",
    "The first convolution over images receives whole numbers from 0 to 255: raw pixel values, not "
    "normalised (runtime).", tags=("runtime", "data"), precision="high",
)
DEAD_UNITS = RuleInfo(
    "TL913", "dead-relu-units", "warning",
    "Most units of a ReLU layer output 0 for every input of the batch, check after check: they are dead, "
    "get no gradient and do not recover (runtime).", tags=("runtime", "training"), precision="high",
)
REPEATED_FORWARD = RuleInfo(
    "TL914", "repeated-forward-with-batchnorm", "warning",
    "A model with BatchNorm ran twice on the same batch in one training step: its running statistics count "
    "the batch twice (runtime).", tags=("runtime", "training-loop"), precision="high",
)
RUNTIME_RULES = (NON_FINITE_FORWARD, NON_FINITE_GRADIENT, EXPLODING_GRADIENT, MEMORY_GROWTH, NONDETERMINISTIC,
                 NON_FINITE_PARAMETER, VANISHING_GRADIENT, GRAPH_KEPT_ALIVE, GRADIENTS_NOT_CLEARED,
                 UNUSED_PARAMETERS, RANKS_DIVERGED, RAW_PIXELS, DEAD_UNITS,
                 REPEATED_FORWARD)
