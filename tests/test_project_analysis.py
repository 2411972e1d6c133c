"""Whole-project facts: what one module defines changes what another module's code means."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchlint.api import check_paths
from torchlint.config import Settings


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
    # TL117: the model passed to train() ends in a ReLU; TL116: entropy() is given a softmax
    assert found(root) == [("train.py", "TL116", 25), ("train.py", "TL117", 18)]


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
    found_here = sorted((Path(f.path).name, f.code, f.line)
                        for f in check_paths([root], Settings(extend_select=["TL302"])))  # TL302 is opt-in
    assert found_here == [("train.py", "TL302", 10)]


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


METERS = """
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


class ListLogger:
    def __init__(self):
        self.history = []

    def log(self, values):
        for v in values:
            self.history.append(v)


class LastValue:
    def update(self, val):
        self.val = val
"""

METER_LOOP = """
import torch
from utils.meters import AverageMeter, LastValue, ListLogger


def train(model, loader, optimizer):
    losses, logger, last = AverageMeter(), ListLogger(), LastValue()
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))
        losses.update(loss.item(), n=x.size(0))
        logger.log([loss.detach(), loss.item()])
        last.update(loss)


class Runner:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.logger = ListLogger()

    def train_step(self, batch):
        loss, aux = self.model(batch)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.logger.log([aux, loss.item()])
"""


def test_a_meter_in_another_module_that_adds_the_loss_to_its_state(tmp_path):
    """`losses.update(loss)` keeps the graph when `update` does `self.sum += val` (utils/meters.py);
    a step function (backward outside any loop) counts as an iteration; `.item()`/`.detach()`
    arguments, and a method that only overwrites its slot, are fine."""
    root = make(tmp_path, {"utils/__init__.py": "", "utils/meters.py": METERS, "train.py": METER_LOOP})
    findings = [f for f in check_paths([root / "train.py"]) if f.code == "TL402"]
    assert [(f.code, f.line) for f in findings] == [("TL402", 13), ("TL402", 29)]
    related = findings[0].related[0]
    assert (Path(related.path).name, related.line) == ("meters.py", 8)
    assert "losses.update" in findings[0].message and "loss.item()" in findings[0].message


CHECKPOINT_UTILS = """
from argparse import Namespace

import torch


def save_checkpoint(path, model, args):
    torch.save({"args": Namespace(**vars(args)), "state_dict": model.state_dict()}, path)
"""

RESUME = """
import torch
from utils import save_checkpoint


def resume(path, model):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["state_dict"])
    return state["args"]


def pretrained(path, model):
    model.load_state_dict(torch.load(path)["state_dict"])
"""

UNRELATED = """
import torch


def resume(path):
    return torch.load(path)["args"]
"""


def test_a_load_reading_the_key_a_project_module_saves_a_namespace_under(tmp_path):
    root = make(tmp_path, {"utils.py": CHECKPOINT_UTILS, "train.py": RESUME, "other.py": UNRELATED})
    assert found(root) == [("train.py", "TL702", 7)]
    finding = next(f for f in check_paths([root]) if f.code == "TL702")
    assert "utils.py:8" in finding.message


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


LOSSES = """
import torch


def nll(p, y):
    return -torch.log(p).gather(1, y[:, None]).mean()


class Evaluator:
    def score(self, model, loader):
        model.eval()
        for x, y in loader:
            out = model(x)
"""

CALLS_LOSSES = """
import torch

from losses import Evaluator, nll


def step(model, x, y):
    probs = torch.softmax(model(x), dim=-1)
    return nll(probs, y)


def validate(model, loader):
    with torch.no_grad():
        Evaluator().score(model, loader)
"""

CALLS_LOSSES_WITH_LOG_PROBS = """
import torch

from losses import nll


def other(model, x, y):
    return nll(torch.log_softmax(model(x), dim=-1).exp() + 1, y)
"""


def test_parameters_get_what_the_calls_in_other_modules_pass(tmp_path):
    # nll() is given a softmax in train.py (TL102 in losses.py); score() runs only under no_grad there
    root = make(tmp_path, {"losses.py": LOSSES, "train.py": CALLS_LOSSES})
    assert found(root) == [("losses.py", "TL102", 6)]


def test_a_caller_in_another_module_that_disagrees_leaves_the_parameter_unknown(tmp_path):
    root = make(tmp_path, {"losses.py": LOSSES, "train.py": CALLS_LOSSES,
                           "other.py": CALLS_LOSSES_WITH_LOG_PROBS})
    assert found(root) == []


def test_a_module_imported_by_many_files_keeps_unknown_parameters(tmp_path):
    files = {"losses.py": LOSSES, "train.py": CALLS_LOSSES}
    files.update({f"user{i}.py": "from losses import nll\n" for i in range(20)})
    assert found(make(tmp_path, files)) == [("losses.py", "TL306", 12)]


ATTENTION = """
import torch


class Attention(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / 8.0
        scores = scores.masked_fill(mask == 0, -1e9)
        return torch.softmax(scores, dim=-1) @ v
"""

AMP_TRAIN = """
import torch

from model import Attention


def train(loader):
    model = Attention(64).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6)
    scaler = torch.amp.GradScaler("cuda")
    for x, mask, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = (model(x, mask) - y).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""


HALF_TRAIN = """
import torch

from model import Attention


def evaluate(loader):
    model = Attention(64).cuda()
    for x, mask in loader:
        print(model(x, mask).float().mean())
"""


def test_a_fill_beyond_float16_in_a_model_the_training_script_autocasts(tmp_path):
    root = make(tmp_path, {"model.py": ATTENTION, "train.py": AMP_TRAIN})
    findings = [f for f in check_paths([root]) if f.code == "TL121"]
    assert [(Path(f.path).name, f.line) for f in findings] == [("model.py", 13)]
    assert "in float16" in findings[0].message  # forward only ever runs inside train.py's autocast
    # the model made .half() where another module builds it: that place is named
    half = HALF_TRAIN.replace("Attention(64)", "Attention(64).half()")
    findings = [f for f in check_paths([make(tmp_path, {"train.py": half})]) if f.code == "TL121"]
    assert [(Path(f.path).name, f.line) for f in findings] == [("model.py", 13)]
    assert [(Path(r.path).name, r.line) for r in findings[0].related] == [("train.py", 8)]
    findings = [f for f in check_paths([make(tmp_path, {"train.py": HALF_TRAIN})]) if f.code == "TL121"]
    assert findings == []
    bf16 = AMP_TRAIN.replace('scaler = torch.amp.GradScaler("cuda")', "scaler = None").replace(
        "torch.float16", "torch.bfloat16")
    assert [f for f in check_paths([make(tmp_path, {"train.py": bf16})]) if f.code == "TL121"] == []


MASK_LOSS = """
import torch.nn as nn


class MaskLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.bce = nn.BCELoss()
        self.logits_bce = nn.BCEWithLogitsLoss()

    def forward(self, pred, mask):
        return self.bce(pred, mask)

    def from_logits(self, logits, mask):
        return self.logits_bce(logits, mask)
"""

AUTOCAST_LOOP = """
import torch

from losses import MaskLoss


def train(model, loader, optimizer):
    criterion = MaskLoss()
    scaler = torch.cuda.amp.GradScaler()
    for x, mask in loader:
        optimizer.zero_grad()
        with torch.cuda.amp.autocast():
            logits = model(x)
            loss = criterion(torch.sigmoid(logits), mask) + criterion.from_logits(logits, mask)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""


def test_a_loss_module_only_called_under_a_float16_autocast_in_another_module(tmp_path):
    root = make(tmp_path, {"losses.py": MASK_LOSS, "train.py": AUTOCAST_LOOP})
    assert found(root) == [("losses.py", "TL103", 12)]
    outside = AUTOCAST_LOOP.replace(
        "            loss = criterion(", "        loss = criterion(")  # the loss after the autocast region
    assert found(make(tmp_path, {"train.py": outside})) == []


def test_a_fact_from_a_caller_in_another_module_names_the_callers_expression(tmp_path):
    make(tmp_path, {
        "losses.py": """
        import torch


        def nll(p, y):
            return -torch.log(p).gather(1, y).mean()
        """,
        "train.py": """
        import torch.nn.functional as F

        from losses import nll


        def step(model, x, y):
            probs = F.softmax(model(x), dim=-1)
            nll(probs, y).backward()
        """,
    })
    findings = check_paths([tmp_path])
    assert [(Path(f.path).name, f.code, f.line) for f in findings] == [("losses.py", "TL102", 6)]
    assert [(Path(r.path).name, r.line, r.column, r.message) for r in findings[0].related] == [
        ("train.py", 8, 13, "the softmax is applied here")]


SEEDED_MAIN = """
import random
import torch
from fl_train import fed_avg
from data import Augmented


def main(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    fed_avg(Augmented())
"""
FED_AVG = """
import numpy as np


def fed_avg(data, rounds=10):
    for _ in range(rounds):
        clients = np.random.choice(100, 10, replace=False)
        print(clients)
"""
AUGMENTED = """
import numpy as np
from torch.utils.data import Dataset


class Augmented(Dataset):
    def __getitem__(self, idx):
        return idx + np.random.rand()
"""


@pytest.mark.parametrize("changes, expected", [
    ({}, [("main.py", "TL501", 9)]),  # the training loop picks clients with an unseeded np.random
    ({"main.py": SEEDED_MAIN.replace("    random.seed(seed)", "    random.seed(seed)\n    import numpy\n"
                                     "    numpy.random.seed(seed)")}, []),
    ({"fl_train.py": FED_AVG.replace("np.random.choice(100, 10, replace=False)", "list(range(10))")}, []),
    ({"fl_train.py": "import numpy as np\nimport torch\n\n\ndef fed_avg(data):\n    torch.manual_seed(0)\n"
                     "    return np.random.choice(4, 2)\n"}, [("fl_train.py", "TL501", 6)]),  # reported there once
    # the module's draw is in a function main.py never names, or in a class it builds
    ({"fl_train.py": FED_AVG + "\n\ndef sample_clients(n):\n    return np.random.choice(n, 2)\n"
                     .replace("sample_clients", "unused_sampler"),
      "main.py": SEEDED_MAIN.replace("fed_avg(Augmented())", "Augmented()").replace("from fl_train import fed_avg",
                                                                                   "import fl_train")}, []),
    ({"fl_train.py": "import numpy as np\n\n\nclass Templates:\n    def __init__(self):\n"
                     "        self.order = np.random.permutation(8)\n",
      "main.py": SEEDED_MAIN.replace("fed_avg(Augmented())", "Templates()").replace("import fed_avg",
                                                                                  "import Templates")},
     [("main.py", "TL501", 9)]),
], ids=["unseeded-import", "seeded-in-main", "no-draw", "module-reports-it-itself", "draws-in-code-not-used",
        "draws-in-a-class-built"])
def test_partial_seeding_counts_the_draws_of_imported_modules(tmp_path, changes, expected):
    """Draws in per-item dataset code do not count: DataLoader workers reseed NumPy themselves."""
    files = {"main.py": SEEDED_MAIN, "fl_train.py": FED_AVG, "data.py": AUGMENTED, **changes}
    assert [f for f in found(make(tmp_path, files)) if f[1] == "TL501"] == expected


PACKAGE_CYCLE = {
    "pkg/__init__.py": "",
    "pkg/transforms/__init__.py": "from .base_transform import BaseTransform\nfrom .half_hop import HalfHop\n"
                                  "from .noise import Noise as AddNoise\n",
    "pkg/transforms/base_transform.py": "from abc import ABC\n\n\nclass BaseTransform(ABC):\n"
                                        "    def __call__(self, data):\n        return self.forward(data)\n",
    "pkg/transforms/noise.py": "import torch\nimport torch.nn as nn\n\n\nclass Noise(nn.Linear):\n"
                               "    def forward(self, data):\n        return data + torch.randn_like(data)\n",
    # a module of the package imports its base class from the package it is imported by (a cycle)
    "pkg/transforms/half_hop.py": "import torch\n\nfrom pkg.transforms import BaseTransform\n\n\n"
                                  "class HalfHop(BaseTransform):\n    def __init__(self, p=0.5):\n"
                                  "        if p < 0:\n            raise ValueError(f'bad p {p}')\n        self.p = p\n\n"
                                  "    def forward(self, data):\n        return data * (torch.rand(()) > self.p)\n",
    "test_half_hop.py": "import torch\n\nfrom pkg.transforms import AddNoise, HalfHop\n\n\n"
                        "def test_half_hop():\n    transform = HalfHop()\n    torch.manual_seed(1)\n"
                        "    assert transform(torch.ones(3)).shape == (3,)\n\n\n"
                        "def test_noise():\n    noise = AddNoise(3, 3)\n    torch.manual_seed(1)\n"
                        "    assert noise(torch.ones(3)).shape == (3,)\n",
}


def test_a_base_class_imported_through_the_package_that_imports_the_module(tmp_path):
    """`from pkg.transforms import BaseTransform` inside pkg/transforms/half_hop.py, which
    pkg/transforms/__init__.py imports: Python has bound BaseTransform by then, and so does the
    analysis (HalfHop draws no weights; the aliased nn.Linear subclass does)."""
    assert [f for f in found(make(tmp_path, PACKAGE_CYCLE)) if f[1] == "TL505"] == [("test_half_hop.py", "TL505", 14)]
