"""Whole-project facts: what one module defines changes what another module's code means."""

from __future__ import annotations

import textwrap
from pathlib import Path

from torchlint.api import check_paths


def make(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def found(root: Path) -> list[tuple[str, str, int]]:
    return sorted((Path(f.path).name, f.code, f.line) for f in check_paths([root]))


UTILS = """
import torch


def smart_inference_mode(new_torch=True):
    def decorate(fn):
        return (torch.inference_mode if new_torch else torch.no_grad)()(fn)

    return decorate


def quiet():
    return torch.no_grad()
"""

VALIDATE = """
import torch
from pkg.utils import quiet, smart_inference_mode


@smart_inference_mode()
def run(model, loader):
    model.eval()
    for x, y in loader:
        out = model(x)


def run_quietly(model, loader):
    model.eval()
    with quiet():
        for x, y in loader:
            out = model(x)


def run_with_graphs(model, loader):
    model.eval()
    for x, y in loader:
        out = model(x)
"""


def test_grad_off_decorators_and_contexts_defined_in_the_project(tmp_path):
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/val.py": VALIDATE})
    assert found(root) == [("val.py", "TL306", 22)]


CALLERS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return F.relu(self.fc(x))


def train(loader, model, loss_fn, optimizer):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def entropy(p):
    return -(p * torch.log(p)).sum()


model = Net()
train([], model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
print(entropy(torch.softmax(torch.randn(4), 0)))
"""


def test_parameters_get_what_every_call_in_the_file_passes(tmp_path):
    root = make(tmp_path, {"train.py": CALLERS})
    # TL117: the model passed to train() ends in a ReLU; TL102: entropy() is given a softmax
    assert found(root) == [("train.py", "TL102", 25), ("train.py", "TL117", 18)]


DISAGREEING = """
import torch


def entropy(p):
    return -(p * torch.log(p)).sum()


def uses(logits, counts):
    a = entropy(torch.softmax(logits, 0))
    b = entropy(counts.float() + 1)
    return a + b
"""


def test_callers_that_disagree_leave_the_parameter_unknown(tmp_path):
    assert found(make(tmp_path, {"m.py": DISAGREEING})) == []


HOLDER = """
import torch


def train(module, loader, optimizer):
    outputs = []
    for batch in loader:
        optimizer.zero_grad()
        output = module.training_step(batch)
        output["loss"].backward()
        optimizer.step()
        outputs.append(output)
    return outputs


def train_detached(module, loader, optimizer):
    outputs = []
    for batch in loader:
        optimizer.zero_grad()
        output = module.training_step(batch)
        output["loss"].backward()
        optimizer.step()
        output["loss"] = output["loss"].detach()
        outputs.append(output)
    return outputs
"""


def test_an_object_holding_the_differentiated_loss_kept_across_steps(tmp_path):
    assert found(make(tmp_path, {"loop.py": HOLDER})) == [("loop.py", "TL402", 12)]


METHODS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(8, 4), nn.ReLU())

    def forward(self, x):
        return self.head(x)


class Trainer:
    def fit(self, module: Net, loader):
        optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
        for epoch in range(10):
            self.train(loader, module, optimizer)

    def train(self, loader, module, optimizer):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(module(x), y)
            loss.backward()
            optimizer.step()
"""


def test_annotated_parameters_and_calls_through_self_reach_helper_methods(tmp_path):
    # train() gets `module` from fit(), whose annotation names the project's Net class
    assert found(make(tmp_path, {"trainer.py": METHODS})) == [("trainer.py", "TL117", 25)]


RECURRENT = """
import torch.nn as nn


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(64, 256, bidirectional=True)
        self.dense = nn.Linear(512, 37)

    def forward(self, x):
        return self.dense(self.rnn(x)[0])
"""

TRAIN_RECURRENT = """
import torch

from model import CRNN


def main(loader):
    crnn = CRNN()
    optimizer = torch.optim.RMSprop(crnn.parameters(), lr=1e-4)
    for x, y in loader:
        loss = (crnn(x) - y).pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_the_trained_model_imported_from_the_project_decides_missing_clipping(tmp_path):
    root = make(tmp_path, {"model.py": RECURRENT, "train.py": TRAIN_RECURRENT})
    assert found(root) == [("train.py", "TL302", 10)]


NO_GRAD_CALLERS = """
import torch


def _load_state(model, state):
    for name, module in model.named_modules():
        if name in state:
            module.weight.copy_(state.pop(name))


@torch.no_grad()
def initialize(model, state):
    _load_state(model, state)


def _shrink(model):
    for module in model.modules():
        module.weight.mul_(0.5)


def train_step(model, state):
    _shrink(model)
"""


def test_a_helper_only_called_under_no_grad_runs_without_grad(tmp_path):
    # _load_state is only called from a @torch.no_grad() function; _shrink is called with grad on
    assert found(make(tmp_path, {"m.py": NO_GRAD_CALLERS})) == [("m.py", "TL202", 18)]


AUGMENT = """
import numpy as np


class RandomFlip:
    def __init__(self, random_state):
        self.random_state = random_state

    def __call__(self, m):
        return m[::-1] if self.random_state.uniform() > 0.5 else m


def train_transform(seed):
    return RandomFlip(np.random.RandomState(seed))
"""

DATASET = """
from torch.utils.data import Dataset

from augment import train_transform


class Volumes(Dataset):
    def __init__(self, volumes):
        self.volumes = volumes
        self.transform = train_transform(47)

    def __len__(self):
        return len(self.volumes)

    def __getitem__(self, idx):
        return self.transform(self.volumes[idx])
"""

LOADER = """
from torch.utils.data import DataLoader

from data.volumes import Volumes


def loader(volumes, num_workers=8):
    return DataLoader(Volumes(volumes), batch_size=2, num_workers=num_workers)
"""


def test_a_generator_made_in_one_module_copied_into_workers_by_a_loader_in_another(tmp_path):
    files = {"augment.py": AUGMENT, "data/volumes.py": DATASET, "train.py": LOADER}
    # the dataset's module has no DataLoader: the loader that imports it decides
    assert found(make(tmp_path, files)) == [("volumes.py", "TL504", 16)]


def test_a_loader_in_another_module_that_seeds_its_workers_or_may_be_told_to(tmp_path):
    changes = ("num_workers=num_workers, worker_init_fn=seed_worker)", "num_workers=num_workers, **kwargs)")
    for index, change in enumerate(changes):
        root = tmp_path / str(index)
        root.mkdir()
        seeded = LOADER.replace("num_workers=num_workers)", change)
        files = {"augment.py": AUGMENT, "data/volumes.py": DATASET, "train.py": seeded}
        assert found(make(root, files)) == []
