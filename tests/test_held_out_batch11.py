"""Stop 45's held-out batch (the eleventh, 14 public projects: time series, explanation maps, vision
transformers, latent diffusion, video recognition, consistency models, a distributed-training
library, LLM fine-tuning recipes, graph benchmarks, segmentation, RL and classic-model notebooks,
LLM pre-training): each mechanism behind a wrong or dismissed finding once where a maintainer would
close the report (no finding) and once where it is a bug (exact code and line). The notebook
mechanism (IPython's automagic) is in test_notebooks.py."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

from torchlint.api import check_paths

# torchtune's distillation losses return early when no label is kept, then divide by the same
# count written out again: the check covers the expression, not only the name it was stored in.
KD_LOSS = """
    import torch
    def kd(x, labels, ignore_index=-100):
        mask = (labels != ignore_index).int()
        {guard}
        return -torch.sum(x * mask.view(-1), dim=0) / torch.sum(mask.view(-1), dim=0)
    """


@pytest.mark.parametrize(("guard", "expected"), [
    ("n = torch.sum(mask.view(-1), dim=0)\n        if n == 0:\n            return x.sum() * 0", set()),
    ("n = torch.sum(mask.view(-1), dim=0)", {("TL106", 6)}),  # stored, never checked
    ("n = torch.sum(mask, dim=0)\n        if n == 0:\n            return x.sum() * 0", {("TL106", 8)}),  # another count
])
def test_a_count_checked_under_a_name_then_divided_by_as_written(guard, expected):
    assert codes_lines(textwrap.dedent(KD_LOSS.format(guard=guard))) == expected


# torchtune's set_seed turns cudnn's benchmark on only in the branch that turns determinism off.
SEEDS = """
    import torch
    def set_seed(seed, debug_mode):
        torch.manual_seed(seed)
        if debug_mode == 0:
            torch.backends.cudnn.deterministic = {first}
            torch.backends.cudnn.benchmark = True
        else:
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
    """


@pytest.mark.parametrize(("first", "expected"), [
    ("False", set()),
    ("True", {("TL502", 7)}),  # both on in the same branch
])
def test_benchmark_on_in_the_branch_opposite_to_determinism(first, expected):
    assert codes_lines(textwrap.dedent(SEEDS.format(first=first))) == expected


# pytorch-grad-cam's ROAD/ARCC metric takes a NumPy root: NumPy records no gradient.
@pytest.mark.parametrize(("sqrt", "expected"), [
    ("np.sqrt", set()),
    ("torch.sqrt", {("TL105", 6)}),
])
def test_a_numpy_square_root_has_no_gradient_to_blow_up(sqrt, expected):
    source = textwrap.dedent(f"""
        import numpy as np
        import torch
        w = torch.nn.Parameter(torch.randn(4, 3))
        c = w - w.mean(1, keepdim=True)
        s = {sqrt}((c ** 2).sum(1))
        s.sum().backward()
        """)
    assert codes_lines(source) == expected


# Stability's watermark detector writes a stable sigmoid, exp(x) / (1 + exp(x)): no sum of scores.
@pytest.mark.parametrize(("denominator", "expected"), [
    ("1 + np.exp(logits)", set()),
    ("np.exp(logits).sum(axis=1, keepdims=True) + 1e-9", {("TL115", 5)}),
])
def test_exp_over_one_plus_itself_is_a_sigmoid_not_a_softmax(denominator, expected):
    source = textwrap.dedent(f"""
        import numpy as np
        def prob(x, w):
            logits = x @ w
            return np.exp(logits) / ({denominator})
        """)
    assert codes_lines(source) == expected


# bentrevett's n-step A2C script takes the entropy of its own actor's logits; nothing in the
# program writes an infinity, so no logit is -inf and no 0 * -inf can happen.
A2C = """\
import torch
import torch.nn as nn
from torch.nn.functional import log_softmax, softmax

def entropy_bonus(logits):
    p = softmax(logits, dim=1)
    log_p = log_softmax(logits, dim=1)
    return -1 * torch.sum(p * log_p, dim=1).mean()

def main():
    actor = nn.Linear(4, 2)
    {extra}
    logits = torch.empty(0, 2)
    for _ in range(3):
        logits = torch.cat((logits, actor(torch.randn(8, 4))), dim=0)
    entropy_bonus(logits).backward()

{run}
"""
GUARD = 'if __name__ == "__main__":\n    main()'


@pytest.mark.parametrize(("extra", "run", "expected"), [
    ("pass", GUARD, set()),
    ("floor = float('-inf')", GUARD, {("TL116", 8)}),  # the program writes a -inf somewhere
    ("pass", "main()", {("TL116", 8)}),  # a module others may import and call with masked logits
])
def test_hand_written_entropy_in_a_program_that_writes_no_infinity(tmp_path, extra, run, expected):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a2c.py").write_text(A2C.format(extra=extra, run=run))
    assert {(f.code, f.line) for f in check_paths([str(tmp_path / "a2c.py")])} == expected


# accelerate's sync test collects each iteration's loss, then backpropagates them one by one later.
SYNC = """
    import torch
    def check(model, batches, opt):
        losses = []
        for x in batches:
            loss = model(x).pow(2).mean()
            loss.backward()
            losses.append(loss)
        {later}
    """


@pytest.mark.parametrize(("later", "expected"), [
    ("for i in range(len(losses)):\n            loss = losses[i]\n            loss.backward()", set()),
    ("print(sum(l.item() for l in losses))", {("TL402", 8)}),
    # neuromancer's trainer stacks the kept losses into its output dict, then backpropagates another loss
    ("out = {}\n        out['mean'] = torch.stack(losses).mean()\n        model(x).sum().backward()", {("TL402", 8)}),
])
def test_losses_kept_for_a_later_backward(later, expected):
    assert codes_lines(textwrap.dedent(SYNC.format(later=later))) == expected


# rasbt's softmax-regression notebooks zero the linear layer's weight and bias in __init__: what the
# unseeded generator drew is overwritten, so seeding after building the model changes nothing.
ZEROED = """
    import torch
    class SoftmaxRegression(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(784, 10)
            self.linear.weight.detach().zero_()
            {bias}
    model = SoftmaxRegression()
    torch.manual_seed(123)
    print(model(torch.randn(2, 784)))
    """


@pytest.mark.parametrize(("bias", "expected"), [
    ("self.linear.bias.detach().zero_()", set()),
    ("torch.nn.init.zeros_(self.linear.bias)", set()),
    ("pass", {("TL505", 10)}),  # the bias keeps its random draw
])
def test_seed_after_a_model_whose_weights_are_all_set_to_constants(bias, expected):
    assert codes_lines(textwrap.dedent(ZEROED.format(bias=bias))) == expected


# rasbt's autoencoder notebooks run the evaluated model on one batch to plot five reconstructions.
ONE_BATCH = """
    import torch
    model = torch.nn.Linear(4, 4)
    model.eval()
    loader = [torch.randn(2, 4) for _ in range(10)]
    for features in loader:
        decoded = model(features)
        {last}
    print(decoded.detach())
    """


@pytest.mark.parametrize(("last", "expected"), [
    ("break", set()),
    ("if decoded.sum() > 0:\n            break", {("TL306", 6)}),  # runs until a condition: many batches
])
def test_an_evaluated_model_run_on_one_batch_to_look_at(last, expected):
    assert codes_lines(textwrap.dedent(ONE_BATCH.format(last=last))) == expected
