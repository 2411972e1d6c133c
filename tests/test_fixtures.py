"""The exact (rule, line) findings on every bundled fixture program."""

import pytest
from conftest import FIXTURES

from torchlint import check_paths
from torchlint.config import Settings

EXPECTED = {
    # seed 001 example 3: Adam lr=0.1 on gradients scaled by 1e-50; plus fp16 params and eps=0
    # (`param.grad.data *= 1e-50` runs after backward, when no graph is alive: not a TL201)
    "numerics/adam_tiny_grads.py": {("TL120", 19), ("TL110", 33), ("TL110", 34)},
    # seed 002: float16 softmax over large logits (a .half() model, fp16 autocast); bf16/upcast are clean
    # Adam on a .half() model: eps=1e-8 is 0 in float16 (runtime: TL906 at step 1)
    "numerics/adam_half_eps.py": {("TL110", 10)},
    "numerics/attention_fp16.py": {("TL107", 31), ("TL107", 38)},
    # seed 000 example 3: BCE on a model ending in Sigmoid (function and BCELoss forms); clamped form clean
    # the model's own sigmoid (lines 26, 27) is reported with TL103 mode = "always" only
    "numerics/bce_on_sigmoid_model.py": {("TL103", 39)},
    # seed 001 example 1: -y*log(p) - (1-y)*log(1-p) on a saturating sigmoid; clamped form clean
    "numerics/handwritten_bce.py": {("TL104", 25)},
    # seed 001 example 2: param.data.uniform_(1, 10); plus normal_(std=2); data tensors and bias=1 clean
    "numerics/large_init.py": {("TL109", 15), ("TL109", 26)},
    # a hand-written cross-entropy after the model: log of a softmax that underflows (runtime: TL901 on the loss)
    "numerics/loss_outside_model.py": {("TL102", 18)},
    "numerics/losses.py": {
        # pairwise_distance(a, b) (line 35) is a distance matrix written by hand: its diagonal is 0
        # when a is b, and sqrt's gradient there is NaN (TL119); zscore(x) (line 39) divides data by
        # its std: data varies in practice, no finding
        ("TL102", 10), ("TL111", 17), ("TL111", 21), ("TL114", 25), ("TL119", 35),
        ("TL106", 49), ("TL101", 53), ("TL112", 57), ("TL113", 61), ("TL112", 65), ("TL108", 75),
        ("TL101", 80), ("TL106", 84), ("TL106", 89),
    },
    # seed 002 exercise: log(x - x.min() + 1e-9) in the second layer
    "numerics/nan_hunt_mlp.py": {("TL101", 17)},
    # seed 000 example 2: 1 / data with a zero; inverse class frequencies; norms. where-masked form clean
    # (normalize_rows divides an unknown input by its norm: nothing shows the norm reaches 0)
    "numerics/preprocess_divide.py": {("TL106", 9), ("TL106", 15)},
    # seed 000 example 1: an LSTM trained without gradient clipping
    "training/rnn_no_clip.py": {("TL302", 23)},
    "training/broken_loops.py": {
        ("TL301", 10), ("TL301", 18), ("TL303", 29), ("TL303", 38), ("TL404", 44), ("TL305", 48),
        ("TL403", 54), ("TL402", 62), ("TL401", 64), ("TL304", 69), ("TL304", 70), ("TL204", 74),
        ("TL306", 81), ("TL205", 87), ("TL701", 91),
    },
    # the zero_grad is missing from a method the fit() loop calls, defined after it
    "training/trainer_class.py": {("TL301", 15)},
    "training/leaky_script.py": {("TL402", 19)},
    "training/autograd_errors.py": {
        ("TL202", 11), ("TL203", 17), ("TL203", 23), ("TL202", 29), ("TL201", 53),
    },
    # seed 002's reproducibility recipe, done partially
    # Python and NumPy seeded, torch not (runtime --repro: TL905 at step 1)
    "training/unseeded_script.py": {("TL501", 10)},
    # (the DataLoader's workers at line 27 are seeded by PyTorch itself: random, torch and, since 1.9, NumPy)
    "training/reproducibility.py": {("TL503", 12), ("TL501", 13), ("TL502", 16), ("TL502", 17)},
    # models/ are for `torchlint trace`; statically they are clean
    **{f"models/{name}.py": set() for name in ("mlp", "mlp_shape_bug", "cnn_bad_flatten", "attention",
                                               "batch_specialized", "data_dependent", "lstm_tagger", "llama",
                                               "sqrt_head")},
    "models/distance_head.py": {("TL119", 17)},
    "models/unseeded_noise.py": {("TL501", 7)},
    "models/log_sigmoid.py": {("TL106", 15), ("TL102", 17)},
    "models/inplace_gate.py": {("TL203", 14)},
    "models/shape_branch.py": {("TL102", 15)},
    "models/half_attention.py": set(),  # the .half() is in a factory: only `trace` sees the float16 softmax
    "clean/training.py": set(),
    "clean/good_loops.py": set(),
    "clean/no_torch.py": set(),
}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_fixture_findings(relative):
    findings = check_paths([FIXTURES / relative], Settings(extend_select=["ALL"]))  # opt-in rules included
    assert {(f.code, f.line) for f in findings} == EXPECTED[relative]


def test_every_fixture_is_covered():
    present = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.py")
               if not p.relative_to(FIXTURES).as_posix().startswith(("real/", "blind/"))}  # bench/real_bugs.py, bench/blind.py
    assert present == set(EXPECTED)


def test_bce_on_a_model_output_needs_the_always_mode():
    from torchlint.api import check_source
    from torchlint.config import settings_from_table

    source = (FIXTURES / "numerics/bce_on_sigmoid_model.py").read_text()
    settings = settings_from_table({"TL103": {"mode": "always"}})
    assert {(f.code, f.line) for f in check_source(source, settings=settings)} == {
        ("TL103", 26), ("TL103", 27), ("TL103", 39)}
