"""Canonical op names: one name for the function, method and module forms of an op.

``torch.log(x)``, ``numpy.log(x)`` and ``x.log()`` are all ``log``;
``F.softmax``, ``torch.softmax``, ``x.softmax(d)`` and ``nn.Softmax()(x)`` are
all ``softmax``. Rules and the value analysis speak only canonical names.
"""

from __future__ import annotations

_TORCH_NP = ("torch.", "numpy.")

# Function forms whose canonical name is their last component, in torch and numpy.
_SHARED = (
    "log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "sum", "mean", "std", "var",
    "abs", "square", "clip", "maximum", "minimum", "matmul", "divide", "einsum", "where",
    "nansum", "nanmean", "amax", "amin", "max", "min", "count_nonzero", "bincount", "dot",
    "zeros", "ones", "zeros_like", "ones_like", "full", "floor", "ceil", "round", "trunc", "arange",
    "prod", "cumprod",
)
FUNCTION_OPS: dict[str, str] = {prefix + name: name for prefix in _TORCH_NP for name in _SHARED}
FUNCTION_OPS.update({
    "numpy.absolute": "abs",
    "numpy.true_divide": "divide",
    "numpy.linalg.norm": "norm",
    "numpy.array": "tensor",
    "numpy.asarray": "tensor",
    "torch.rsqrt": "rsqrt",
    "torch.sigmoid": "sigmoid",
    "torch.special.expit": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid",
    "scipy.special.expit": "sigmoid",
    "torch.softmax": "softmax",
    "torch.special.softmax": "softmax",
    "torch.nn.functional.softmax": "softmax",
    "scipy.special.softmax": "softmax",
    "torch.log_softmax": "log_softmax",
    "torch.special.log_softmax": "log_softmax",
    "torch.nn.functional.log_softmax": "log_softmax",
    "torch.logsumexp": "logsumexp",
    "torch.special.logsumexp": "logsumexp",
    "torch.nn.functional.softplus": "softplus",
    "torch.relu": "relu",
    "torch.nn.functional.relu": "relu",
    "torch.clamp": "clamp",
    "torch.clamp_min": "clamp_min",
    "torch.norm": "norm",
    "torch.linalg.norm": "norm",
    "torch.linalg.vector_norm": "norm",
    "torch.pow": "pow",
    "numpy.power": "pow",
    "torch.div": "divide",
    "torch.mm": "matmul",
    "torch.bmm": "matmul",
    "torch.nn.functional.linear": "matmul",
    "torch.tensor": "tensor",
    "torch.as_tensor": "tensor",
    "torch.from_numpy": "tensor",
    "torch.randn": "randn",
    "torch.randn_like": "randn",
    "torch.normal": "randn",
    "numpy.random.randn": "randn",
    "numpy.random.normal": "randn",
    "torch.rand": "rand",
    "torch.rand_like": "rand",
    "numpy.random.rand": "rand",
    "numpy.random.random": "rand",
    "numpy.random.uniform": "uniform",
    "random.uniform": "uniform",
    "torch.nn.functional.binary_cross_entropy": "bce",
    "torch.nn.functional.binary_cross_entropy_with_logits": "bce_logits",
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll_loss",
    "torch.nn.functional.multilabel_soft_margin_loss": "multilabel_logits",
    "torch.nn.functional.normalize": "normalize",
    "torch.tanh": "tanh",
    "torch.nn.functional.tanh": "tanh",
    "torch.nn.functional.cosine_similarity": "cosine",
    "torch.cosine_similarity": "cosine",
})
# inverse cosine and sine: defined on [-1, 1], with an infinite derivative at its ends
FUNCTION_OPS.update({f"{prefix}{name}": name.replace("arc", "a") for prefix in _TORCH_NP
                     for name in ("acos", "asin", "arccos", "arcsin")})
FUNCTION_OPS.update({f"torch.nn.functional.{name}": "loss" for name in (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "soft_margin_loss", "ctc_loss",
)})
FUNCTION_OPS["torch.nn.functional.kl_div"] = "kl_div"  # takes log-probabilities as its input
LOSS_OPS = frozenset({"loss", "bce", "bce_logits", "cross_entropy", "nll_loss", "multilabel_logits", "kl_div"})
# Losses that apply a sigmoid / log_softmax to their input themselves: they take raw logits.
LOGIT_LOSSES = frozenset({"bce_logits", "cross_entropy", "multilabel_logits"})
# The description a Linear/Conv output carries (its op is "matmul", like any projection).
LINEAR_OUTPUT = "a linear-layer output"
# Losses that take probabilities (BCE) or log-probabilities (NLL), not raw logits.
PROBABILITY_LOSSES = frozenset({"bce", "nll_loss"})
# Functions that return (a view of) their first argument's values.
FUNCTION_OPS.update({f"torch.{name}": "identity" for name in (
    "masked_fill", "squeeze", "unsqueeze", "real", "flatten", "reshape", "transpose", "permute",
    "detach", "clone", "narrow", "select", "index_select", "gather",
)})

# Method forms (``x.name(...)``) and the canonical op they denote.
METHOD_OPS: dict[str, str] = {name: name for name in (
    "log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "rsqrt", "sigmoid", "softmax",
    "log_softmax", "logsumexp", "sum", "mean", "std", "var", "norm", "abs", "square", "pow",
    "relu", "clamp", "clamp_min", "matmul", "amax", "amin", "max", "min", "nansum", "nanmean",
    "count_nonzero", "bincount", "tanh", "floor", "ceil", "round", "trunc", "prod", "cumprod",
    "acos", "asin",
)}
METHOD_OPS.update({
    "clip": "clamp", "clip_min": "clamp_min", "absolute": "abs", "div": "divide",
    "true_divide": "divide", "mm": "matmul", "bmm": "matmul", "dot": "matmul",
    "log_": "log", "sqrt_": "sqrt", "exp_": "exp", "sigmoid_": "sigmoid", "clamp_": "clamp",
    "clamp_min_": "clamp_min", "div_": "divide",
    "arccos": "acos", "arcsin": "asin", "acos_": "acos", "asin_": "asin",
})

# Ops that accept no positional argument in method form: `logger.log("x", v)` is not a log.
NULLARY_METHODS = frozenset({
    "log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "rsqrt", "sigmoid", "abs",
    "square", "relu", "log_", "sqrt_", "exp_", "sigmoid_", "acos", "asin", "arccos", "arcsin",
})

# Methods that return (a view or copy of) the same values.
TRANSPARENT_METHODS = frozenset({
    "detach", "clone", "contiguous", "view", "view_as", "reshape", "reshape_as", "flatten",
    "squeeze", "unsqueeze", "permute", "transpose", "t", "expand", "expand_as", "repeat", "repeat_interleave", "tile",
    "cpu", "cuda", "gather", "index_select", "masked_select", "narrow", "select", "numpy",
    "item", "tolist", "requires_grad_", "unflatten", "movedim", "roll", "flip", "chunk",
    "split", "squeeze_", "unsqueeze_", "data", "masked_fill", "masked_fill_", "bool", "long", "int", "byte",
})
# Methods that return a new tensor with the same values (not a view of the original).
COPY_METHODS = frozenset({"clone", "gather", "index_select", "masked_select", "contiguous", "numpy", "tolist",
                          "item", "cpu", "cuda"})
UPCAST_METHODS = frozenset({"float", "double"})
# Differentiable tensor methods whose values are not modelled: the result keeps the receiver's history.
HISTORY_METHODS = frozenset({"det", "diagonal", "diag", "diag_embed", "bmm", "mm", "trace", "inverse", "tril",
                             "triu", "cross", "outer", "cumsum", "cumprod", "prod", "baddbmm", "addmm", "lerp"})
# Methods whose result carries no autograd history.
DETACHING_METHODS = frozenset({"detach", "detach_", "item", "numpy", "tolist"})
# Tensor factories not modelled as ops: their result has no autograd history (unless asked for
# with requires_grad=True, which is read before).
FACTORIES = frozenset({"torch.eye", "torch.linspace", "torch.logspace", "torch.empty", "torch.empty_like",
                       "torch.full_like", "torch.tril_indices", "torch.triu_indices"})
# Calls of Python builtins that turn a tensor into a plain number.
PYTHON_NUMBERS = frozenset({"float", "int", "len", "bool"})
# Function namespaces with no autograd: their results are never tracked.
UNTRACKED_PREFIXES = ("numpy.", "math.", "scipy.")
HALF_METHODS = frozenset({"half"})


# nn.Module classes and the op their call applies.
MODULE_OPS: dict[str, str] = {
    "torch.nn.Sigmoid": "sigmoid",
    "torch.nn.Softmax": "softmax",
    "torch.nn.LogSoftmax": "log_softmax",
    "torch.nn.ReLU": "relu",
    "torch.nn.Tanh": "tanh",
    "torch.nn.Softplus": "softplus",
    "torch.nn.Linear": "linear",
    "torch.nn.LazyLinear": "linear",
    "torch.nn.Bilinear": "linear",
    "torch.nn.Conv1d": "linear",
    "torch.nn.Conv2d": "linear",
    "torch.nn.Conv3d": "linear",
    "torch.nn.BCELoss": "bce",
    "torch.nn.BCEWithLogitsLoss": "bce_logits",
    "torch.nn.CrossEntropyLoss": "cross_entropy",
    "torch.nn.NLLLoss": "nll_loss",
    "torch.nn.MultiLabelSoftMarginLoss": "multilabel_logits",
    "torch.nn.KLDivLoss": "kl_div",
    "torch.nn.Identity": "identity",
    "torch.nn.Dropout": "identity",
    "torch.nn.Sequential": "sequential",
    "torch.nn.Embedding": "embedding",
    "torch.nn.CosineSimilarity": "cosine",
}

FLOAT16_NAMES = frozenset({"torch.float16", "torch.half", "numpy.float16"})
# Elementwise ops a float16 autocast runs in float32 (torch.amp's float32 list): a float32 output
AUTOCAST_FLOAT32 = frozenset({"exp", "expm1", "log", "log2", "log10", "log1p", "softmax", "log_softmax", "pow",
                              "reciprocal", "rsqrt", "acos", "asin", "tan", "sinh", "cosh", "erfinv", "softplus",
                              "normalize"})
UPCAST_DTYPES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})
FLOAT64_NAMES = frozenset({"torch.float64", "torch.double"})

# Calls that assemble a feature tensor from several: what they are given is an input feature.
FEATURE_CALLS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack",
                           "torch.vstack", "torch.column_stack", "torch.dstack"})

LOG_OPS = frozenset({"log", "log2", "log10"})
INTEGRAL_OPS = frozenset({"floor", "ceil", "round", "trunc", "arange", "count", "mask"})

# Trailing-underscore methods that do not write the tensor's values.
NOT_INPLACE = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "detach_"})


def is_inplace(method: str) -> bool:
    """`x.add_(...)`, `x.clamp_(...)`: methods that overwrite their receiver."""
    return method.endswith("_") and not method.startswith("_") and method not in NOT_INPLACE
