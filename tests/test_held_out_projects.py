"""Stop 40's held-out batches, the mechanisms that need a project around the file: imports through
`from utils import *`, callers in other modules, the PyTorch a project's requirements install. Each
once where a maintainer would close the report and once where it is a bug (exact code and line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchlint.api import check_paths


def found_in(root: Path) -> list[tuple[str, str, int]]:
    return sorted((Path(f.path).name, f.code, f.line) for f in check_paths([root]))


EVALUATE = """
from utils import *


def evaluate(loader, model):
    model.eval()
    with torch.no_grad():
        for images in loader:
            model(images)


def evaluate_with_graphs(loader, model):
    model.eval()
    for images in loader:
        model(images)
"""


def test_a_star_import_brings_the_modules_imports(tmp_path: Path):
    """`from utils import *` binds what utils imports: `torch.no_grad()` there is torch's (SSD tutorial)."""
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "utils.py").write_text("import torch\nimport numpy as np\n\n\ndef helper():\n    return 1\n")
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    assert found_in(tmp_path) == [("evaluate.py", "TL306", 14)]


LOAD_FROM = """
import torch
import torch.nn as nn


class Unit(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3)

    def load_from(self, weights):
        self.conv.weight.copy_(weights["conv"])
"""
LOADER = """
import torch
import torch.nn as nn
from .units import Unit


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(Unit(), Unit())

    def load_from(self, weights):
        {context}
            for name, unit in self.body.named_children():
                unit.load_from(weights[name])
"""


@pytest.mark.parametrize(("context", "expected"), [
    ("with torch.no_grad():", []),
    ("if weights:", [("units.py", "TL202", 12)]),
])
def test_a_method_called_on_an_unknown_receiver_under_no_grad(tmp_path: Path, context, expected):
    """ViT's `unit.load_from(w)` in `with torch.no_grad():` in another module: the receiver is not
    known, but every call of a method of that name runs with grad off (jeonsworld/ViT-pytorch)."""
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "units.py").write_text(LOAD_FROM)
    (tmp_path / "models" / "net.py").write_text(LOADER.replace("{context}", context))
    assert found_in(tmp_path) == expected


SCHEDULED = """
import torch
def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, 20)
    for epoch in range(epochs):
        scheduler.step()
        for x in loader:
            opt.zero_grad()
            model(x).mean().backward()
            opt.step()
"""


@pytest.mark.parametrize(("pin", "expected"), [
    ("torch==0.4.1\n", []),
    ("torch>=1.4\n", [("train.py", "TL303", 7)]),
])
def test_scheduler_first_is_the_protocol_before_torch_1_1(tmp_path: Path, pin, expected):
    """pytorch-semseg pins torch 0.4.1, whose schedulers were stepped at the start of each epoch."""
    (tmp_path / "requirements.txt").write_text(pin)
    (tmp_path / "train.py").write_text(SCHEDULED)
    assert found_in(tmp_path) == expected


SHUFFLED = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Batches(Dataset):
    def __init__(self, samples):
        self.samples = samples
        self.shuffled = False

    def __getitem__(self, index):
        if not self.shuffled:
            {seed}
            np.random.shuffle(self.samples)
            self.shuffled = True
        return self.samples[index]

    def __len__(self):
        return len(self.samples)


loader = DataLoader(Batches(list(range(100))), batch_size=4, num_workers=4)
"""


@pytest.mark.parametrize(("seed", "expected"), [
    ("np.random.seed(index)", []),
    ("pass", [("data.py", "TL504", 15)]),
])
def test_numpy_reseeded_per_item_before_torch_1_9(tmp_path: Path, seed, expected):
    """CSAIL's segmentation loader seeds NumPy with the item's index before it shuffles."""
    (tmp_path / "requirements.txt").write_text("torch==0.4.1\n")
    (tmp_path / "data.py").write_text(SHUFFLED.replace("{seed}", seed))
    assert found_in(tmp_path) == expected
