"""The static rule catalog: one module per rule."""

from __future__ import annotations

from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl101_unguarded_log import UnguardedLog
from torchlint.static.rules.tl102_log_of_probability import LogOfProbability
from torchlint.static.rules.tl103_bce_on_probabilities import BceOnProbabilities
from torchlint.static.rules.tl104_hand_written_bce import HandWrittenBce
from torchlint.static.rules.tl105_unguarded_sqrt import UnguardedSqrt
from torchlint.static.rules.tl106_unguarded_division import UnguardedDivision
from torchlint.static.rules.tl107_half_precision_softmax import HalfPrecisionSoftmax
from torchlint.static.rules.tl108_unstable_exp import UnstableExp
from torchlint.static.rules.tl109_large_init import LargeInit
from torchlint.static.rules.tl110_risky_optimizer_config import RiskyOptimizerConfig
from torchlint.static.rules.tl111_softmax_before_cross_entropy import SoftmaxBeforeCrossEntropy
from torchlint.static.rules.tl112_imprecise_log1p import ImpreciseLog1p
from torchlint.static.rules.tl113_imprecise_expm1 import ImpreciseExpm1
from torchlint.static.rules.tl114_naive_logsumexp import NaiveLogsumexp

# Order matters only for claims within one node: rules that own a whole expression come first.
STATIC_RULES: tuple[Rule, ...] = (
    NaiveLogsumexp(),
    ImpreciseLog1p(),
    HandWrittenBce(),
    LogOfProbability(),
    UnguardedLog(),
    BceOnProbabilities(),
    UnguardedSqrt(),
    UnguardedDivision(),
    HalfPrecisionSoftmax(),
    UnstableExp(),
    LargeInit(),
    RiskyOptimizerConfig(),
    SoftmaxBeforeCrossEntropy(),
    ImpreciseExpm1(),
)

__all__ = ["Rule", "STATIC_RULES"]
