"""A model chosen by configuration (`MLP() if ... else CNN()`): each class it may be is checked."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchlint.api import check_paths
from torchlint.config import Settings

MODELS = """
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


class Raw(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""

TRAINER = """
import torch.nn as nn


class LocalUpdate:
    def __init__(self):
        self.criterion = nn.NLLLoss()

    def update(self, model, loader):
        for x, y in loader:
            loss = self.criterion(model(x), y)
            loss.backward()
"""


def lint(root: Path, files: dict[str, str], select: str = "TL111,TL118"):
    (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    settings = Settings(select=select.split(","))
    return sorted(check_paths([root], settings), key=lambda f: (f.path, f.line, f.code))


def main_choosing(*classes: str) -> str:
    branches = "\n".join(
        f"    {'if' if i == 0 else 'elif'} args.model == {name.lower()!r}:\n        net = {name}()"
        for i, name in enumerate(classes[:-1])
    )
    return f"""
import copy

from models import {', '.join(classes)}
from trainer import LocalUpdate


def main(args, loader):
{branches}
    else:
        net = {classes[-1]}()
    LocalUpdate().update(copy.deepcopy(net), loader)
"""


def test_each_class_a_branch_can_build_is_checked_across_files(tmp_path):
    findings = lint(tmp_path, {"models.py": MODELS, "trainer.py": TRAINER,
                               "main.py": main_choosing("MLP", "CNN", "Raw")})
    assert [(Path(f.path).name, f.code, f.line) for f in findings] == [
        ("trainer.py", "TL111", 11), ("trainer.py", "TL118", 11)]
    softmax, raw = findings
    assert "a softmax output when the model is `MLP`" in softmax.message
    assert "the raw output of a linear layer when the model is `Raw`" in raw.message
    assert [(Path(r.path).name, r.line) for r in softmax.related] == [("models.py", 12)]
    assert [(Path(r.path).name, r.line) for r in raw.related] == [("models.py", 30)]


def test_no_finding_when_every_class_returns_what_the_loss_expects(tmp_path):
    models = MODELS.replace("return F.softmax(self.fc(x), dim=1)", "return F.log_softmax(self.fc(x), dim=1)")
    assert lint(tmp_path, {"models.py": models, "trainer.py": TRAINER, "main.py": main_choosing("MLP", "CNN")}) == []


def test_a_conditional_expression_chooses_too(tmp_path):
    main = """
    import torch.nn.functional as F

    from models import CNN, MLP


    def train(args, loader):
        net = MLP() if args.small else CNN()
        for x, y in loader:
            F.nll_loss(net(x), y).backward()
    """
    findings = lint(tmp_path, {"models.py": MODELS, "main.py": main})
    assert [(f.code, f.line) for f in findings] == [("TL111", 10)]


@pytest.mark.parametrize("count, expected", [(4, [("TL111", 11)]), (5, [])])
def test_more_than_four_classes_are_unknown(tmp_path, count, expected):
    extra = "".join(f"""

class Net{i}(nn.Module):
    def forward(self, x):
        return F.softmax(x, dim=1)
""" for i in range(4))
    names = ("MLP", "Net0", "Net1", "Net2", "Net3")[:count]
    findings = lint(tmp_path, {"models.py": MODELS + extra, "trainer.py": TRAINER, "main.py": main_choosing(*names)})
    assert [(f.code, f.line) for f in findings] == expected
