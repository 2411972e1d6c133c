"""Stop 44's held-out batch (the tenth, 14 public projects: course notebooks, loss collections,
segmentation, vector quantisation, an RL library, LLM pre-training, score-based diffusion,
self-supervised recipes, detection, Gaussian processes), with the batch-9 noise it shares a
mechanism with: each mechanism once where a maintainer would close the report (no finding) and once
where it is a bug (exact code and line). The notebook mechanisms (IPython's indentation, exercise
blanks) are in test_notebooks.py."""

from __future__ import annotations

import textwrap

import pytest
from conftest import codes_lines

from torchlint.api import check_paths

# u2net's test scripts min-max normalise the saliency map they save as a PNG: nothing in the program,
# nor in the model module it imports, differentiates, so a constant map's NaN stays in that one image.
SCRIPT = """\
import torch
from model import Net

def norm_pred(d):
    ma = torch.max(d)
    mi = torch.min(d)
    return (d - mi) / (ma - mi)

def main():
    net = Net()
    pred = norm_pred(net(torch.randn(1, 4)))
    {extra}

if __name__ == "__main__":
    main()
"""
MODEL = """\
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
{extra}"""
TRAINS = "\n\ndef fit(net, x):\n    net(x).sum().backward()\n"


@pytest.mark.parametrize(("script", "model", "importer", "expected"), [
    ("print(pred)", "", False, set()),
    ("pred.sum().backward()", "", False, {("TL106", 7)}),  # the program itself differentiates
    ("print(pred)", TRAINS, False, {("TL106", 7)}),  # a module it imports does
    ("print(pred)", "", True, {("TL106", 7)}),  # another file imports it: its functions may be trained through
])
def test_a_spread_in_a_program_that_never_differentiates(tmp_path, script, model, importer, expected):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL.format(extra=model))
    (tmp_path / "test_script.py").write_text(SCRIPT.format(extra=script))
    if importer:
        (tmp_path / "train.py").write_text("from test_script import norm_pred\n")
    found = {(f.code, f.line) for f in check_paths([str(tmp_path / "test_script.py")])}
    assert found == expected


# deep-person-reid's HACNN L2-normalises its ReLU features only on the evaluation path.
EVAL_BRANCH = """
    import torch
    import torch.nn as nn
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            x = torch.relu(self.fc(x))
            {test}
                x = x / x.norm(p=2, dim=1, keepdim=True)
            return x
    """


@pytest.mark.parametrize(("test", "expected"), [
    ("if not self.training:", set()),
    ("if self.training:\n                pass\n            else:", set()),
    ("if self.training:", {("TL106", 11)}),
])
def test_a_spread_on_the_evaluation_path_of_a_module(test, expected):
    assert codes_lines(textwrap.dedent(EVAL_BRANCH.format(test=test))) == expected


# pytorch-loss divides the summed loss by the labels that are not the ignore label, as
# nn.CrossEntropyLoss(reduction="mean") does: 0 only when the whole batch is ignored.
VALID_COUNT = """
    import torch.nn as nn
    import torch.nn.functional as F
    class SmoothCE(nn.Module):
        def __init__(self, smoothing=0.1, ignore_index=-100):
            super().__init__()
            self.lb_ignore = ignore_index
        def forward(self, logits, labels):
            losses = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
            {count}
            return losses.sum() / n_valid
    """


@pytest.mark.parametrize(("count", "expected"), [
    ("n_valid = (labels != self.lb_ignore).sum()", set()),
    ("ignore = labels == self.lb_ignore\n            n_valid = (ignore == 0).sum()", set()),
    ("n_valid = (labels > 0).sum()", {("TL106", 11)}),  # the positives: none in many batches
    ("n_valid = (labels != logits.argmax(1)).sum()", {("TL106", 11)}),  # the mistakes: none when all right
])
def test_a_count_of_the_labels_that_are_not_the_ignore_label(count, expected):
    found = codes_lines(textwrap.dedent(VALID_COUNT.format(count=count)))
    expected = {(code, line + (1 if "ignore =" in count else 0)) for code, line in expected}
    assert found == expected


# mrdbourke's course notebooks seed torch, train, then pick a few test images with `random.sample` to
# plot their predictions: what runs after the last training statement cannot change the weights.
SHOW_AFTER = """
    import random
    import torch
    torch.manual_seed(42)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    paths = ["a.jpg", "b.jpg", "c.jpg"]
    {before}
    def fit(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    def show(k):
        return random.sample(paths, k=k)
    fit(torch.randn(8, 4))
    {after}
    """


@pytest.mark.parametrize(("before", "after", "expected"), [
    ("", "picked = random.sample(paths, k=2)\nshown = show(1)", set()),
    ("", "picked = show(2)", set()),
    ("picked = random.sample(paths, k=2)", "", {("TL501", 4)}),  # before training: it may shape the data
    ("picked = show(2)", "", {("TL501", 4)}),
    ("", "picked = show(2)\nfit(torch.randn(8, 4))", {("TL501", 4)}),  # another training follows
])
def test_a_draw_after_the_last_training_statement(before, after, expected):
    body = textwrap.dedent(SHOW_AFTER).replace("{before}", before).replace("{after}", after)
    assert codes_lines(body) == expected


def test_a_module_that_starts_training_rechecks_the_cached_script(project, capsys):
    from torchlint.cli import main

    (project / "pyproject.toml").write_text("")
    (project / "model.py").write_text(MODEL.format(extra=""))
    (project / "test_script.py").write_text(SCRIPT.format(extra="print(pred)"))
    assert main(["test_script.py"]) == 0
    # the script is unchanged and so is what the model module exports, but the module now differentiates
    demo = '\n\nif __name__ == "__main__":\n    Net()(torch.randn(2, 4)).sum().backward()\n'
    (project / "model.py").write_text("import torch\n" + MODEL.format(extra=demo))
    assert main(["test_script.py"]) == 1 and "TL106" in capsys.readouterr().out
