"""The static rule catalog: one module per rule."""

from __future__ import annotations

from torchlint.static.rules.base import Rule
from torchlint.static.rules.tl101_unguarded_log import UnguardedLog
from torchlint.static.rules.tl201_data_attribute import DataAttribute
from torchlint.static.rules.tl202_inplace_on_leaf import InplaceOnLeaf
from torchlint.static.rules.tl203_inplace_on_saved_tensor import InplaceOnSavedTensor
from torchlint.static.rules.tl204_needless_retain_graph import NeedlessRetainGraph
from torchlint.static.rules.tl205_implicit_reentrant_checkpoint import ImplicitReentrantCheckpoint
from torchlint.static.rules.tl206_loss_term_without_gradient import LossTermWithoutGradient
from torchlint.static.rules.tl207_state_keeps_graph import StateKeepsGraph
from torchlint.static.rules.tl208_bootstrap_target_with_gradient import BootstrapTargetWithGradient
from torchlint.static.rules.tl209_baseline_with_gradient import BaselineWithGradient
from torchlint.static.rules.tl210_backward_after_step import BackwardAfterStep
from torchlint.static.rules.tl211_inplace_on_split_output import InplaceOnSplitOutput
from torchlint.static.rules.tl301_missing_zero_grad import MissingZeroGrad
from torchlint.static.rules.tl302_missing_grad_clip import MissingGradClip
from torchlint.static.rules.tl303_misordered_step import MisorderedStep
from torchlint.static.rules.tl304_anomaly_detection_left_on import AnomalyDetectionLeftOn
from torchlint.static.rules.tl305_unscaled_clip import UnscaledClip
from torchlint.static.rules.tl306_eval_without_no_grad import EvalWithoutNoGrad
from torchlint.static.rules.tl307_fp16_without_grad_scaler import Fp16WithoutGradScaler
from torchlint.static.rules.tl308_train_mode_not_restored import TrainModeNotRestored
from torchlint.static.rules.tl309_unfrozen_not_optimized import UnfrozenNotOptimized
from torchlint.static.rules.tl310_new_layer_not_optimized import NewLayerNotOptimized
from torchlint.static.rules.tl311_input_gradient_in_update import InputGradientInUpdate
from torchlint.static.rules.tl312_evaluation_in_train_mode import EvaluationInTrainMode
from torchlint.static.rules.tl313_inverted_step_condition import InvertedStepCondition
from torchlint.static.rules.tl314_dropout_ignores_eval import DropoutIgnoresEval
from torchlint.static.rules.tl401_empty_cache_in_loop import EmptyCacheInLoop
from torchlint.static.rules.tl402_graph_kept_alive import GraphKeptAlive
from torchlint.static.rules.tl403_synchronous_dataloader import SynchronousDataloader
from torchlint.static.rules.tl404_zero_grad_to_zeros import ZeroGradToZeros
from torchlint.static.rules.tl405_sample_modified_in_place import SampleModifiedInPlace
from torchlint.static.rules.tl501_partial_seeding import PartialSeeding
from torchlint.static.rules.tl502_conflicting_determinism import ConflictingDeterminism
from torchlint.static.rules.tl503_env_set_too_late import EnvSetTooLate
from torchlint.static.rules.tl504_rng_shared_by_workers import RngSharedByWorkers
from torchlint.static.rules.tl505_seed_after_init import SeedAfterInit
from torchlint.static.rules.tl506_split_drawn_twice import SplitDrawnTwice
from torchlint.static.rules.tl507_ids_from_set_order import IdsFromSetOrder
from torchlint.static.rules.tl508_overlapping_split import OverlappingSplit
from torchlint.static.rules.tl509_seed_before_spawn import SeedBeforeSpawn
from torchlint.static.rules.tl510_seed_from_string_hash import SeedFromStringHash
from torchlint.static.rules.tl511_seed_zero_skipped import SeedZeroSkipped
from torchlint.static.rules.tl603_output_target_broadcast import OutputTargetBroadcast
from torchlint.static.rules.tl604_reshape_moves_dim import ReshapeMovesDim
from torchlint.static.rules.tl605_misaligned_broadcast import MisalignedBroadcast
from torchlint.static.rules.tl701_unsafe_load import UnsafeLoad
from torchlint.static.rules.tl702_load_needs_weights_only_false import LoadNeedsWeightsOnlyFalse
from torchlint.static.rules.tl703_load_pickles_on_old_torch import LoadPicklesOnOldTorch
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
from torchlint.static.rules.tl115_hand_written_softmax import HandWrittenSoftmax
from torchlint.static.rules.tl116_hand_written_entropy import HandWrittenEntropy
from torchlint.static.rules.tl117_relu_on_logits import ReluOnLogits
from torchlint.static.rules.tl118_logits_into_probability_loss import LogitsIntoProbabilityLoss
from torchlint.static.rules.tl119_hand_written_norm import HandWrittenNorm
from torchlint.static.rules.tl120_high_learning_rate import HighLearningRate
from torchlint.static.rules.tl121_fill_overflows_float16 import FillOverflowsFloat16
from torchlint.static.rules.tl122_eps_vanishes_in_float16 import EpsVanishesInFloat16
from torchlint.static.rules.tl123_unclamped_acos import UnclampedAcos
from torchlint.static.rules.tl124_positive_infinity_mask import PositiveInfinityMask

# Order matters only for claims within one node: rules that own a whole expression come first.
STATIC_RULES: tuple[Rule, ...] = (
    NaiveLogsumexp(),
    HandWrittenEntropy(),
    ImpreciseLog1p(),
    HandWrittenBce(),
    LogOfProbability(),
    EpsVanishesInFloat16(),
    UnclampedAcos(),
    PositiveInfinityMask(),
    UnguardedLog(),
    BceOnProbabilities(),
    HandWrittenNorm(),
    UnguardedSqrt(),
    UnguardedDivision(),
    HalfPrecisionSoftmax(),
    UnstableExp(),
    LargeInit(),
    RiskyOptimizerConfig(),
    HighLearningRate(),
    FillOverflowsFloat16(),
    SoftmaxBeforeCrossEntropy(),
    HandWrittenSoftmax(),
    ReluOnLogits(),
    LogitsIntoProbabilityLoss(),
    ImpreciseExpm1(),
    DataAttribute(),
    InplaceOnSavedTensor(),
    InplaceOnLeaf(),
    NeedlessRetainGraph(),
    ImplicitReentrantCheckpoint(),
    LossTermWithoutGradient(),
    StateKeepsGraph(),
    BootstrapTargetWithGradient(),
    BaselineWithGradient(),
    BackwardAfterStep(),
    InplaceOnSplitOutput(),
    OutputTargetBroadcast(),
    ReshapeMovesDim(),
    MisalignedBroadcast(),
    MissingZeroGrad(),
    MissingGradClip(),
    MisorderedStep(),
    AnomalyDetectionLeftOn(),
    UnscaledClip(),
    EvalWithoutNoGrad(),
    Fp16WithoutGradScaler(),
    TrainModeNotRestored(),
    UnfrozenNotOptimized(),
    NewLayerNotOptimized(),
    InputGradientInUpdate(),
    EvaluationInTrainMode(),
    InvertedStepCondition(),
    DropoutIgnoresEval(),
    EmptyCacheInLoop(),
    GraphKeptAlive(),
    SynchronousDataloader(),
    ZeroGradToZeros(),
    SampleModifiedInPlace(),
    PartialSeeding(),
    ConflictingDeterminism(),
    EnvSetTooLate(),
    RngSharedByWorkers(),
    SeedAfterInit(),
    SplitDrawnTwice(),
    IdsFromSetOrder(),
    OverlappingSplit(),
    SeedBeforeSpawn(),
    SeedFromStringHash(),
    SeedZeroSkipped(),
    UnsafeLoad(),
    LoadNeedsWeightsOnlyFalse(),
    LoadPicklesOnOldTorch(),
)

__all__ = ["Rule", "STATIC_RULES"]
