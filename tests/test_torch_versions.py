"""The PyTorch versions a project supports, and the findings that depend on them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_cli import run

from torchlint.api import check_paths
from torchlint.static.torch_support import (
    lower_bound,
    newest_in_text,
    oldest_in_text,
    torch_support,
)


@pytest.mark.parametrize(("text", "oldest"), [
    ("torch>=1.7.0,<2\nnumpy", (1, 7, 0)),
    ("torch==2.8.0", (2, 8, 0)),
    ("torchvision>=0.8\ntorch~=1.13.1+cu117", (1, 13, 1)),
    ("torch>=2.0; sys_platform == 'linux'\ntorch==1.13; sys_platform == 'darwin'", (1, 13)),
    ("-f https://download.pytorch.org/whl/torch_stable.html\ntorch==1.8.1+cu111", (1, 8, 1)),
    ("dependencies:\n  - pytorch::pytorch=1.7\n  - pytorch-cuda=11.8", (1, 7)),
    ("torch", None),  # no lower bound: unknown, not "any version"
    ("torch<2", None),
    ("torchvision>=0.15\ntorchaudio", None),
    ("torch>=2.0\ntorch", None),
])
def test_oldest_supported_version_of_requirement_text(text, oldest):
    assert oldest_in_text(text) == oldest


@pytest.mark.parametrize(("text", "newest"), [
    ("torch==1.7.1", (1, 7, 2)),
    ("torch>=1.4,<1.9", (1, 9)),
    ("torch<=1.8.1", (1, 8, 2)),
    ("torch~=1.7.1", (1, 8)),
    ("dependencies:\n  - pytorch=0.4.1", (0, 4, 2)),
    ("torch>=1.7", None),  # a floor only: today's release is what an install gets
    ("torch==1.7\ntorch>=2.0; sys_platform == 'linux'", None),
])
def test_newest_installed_version_of_requirement_text(text, newest):
    assert newest_in_text(text) == newest


def test_lower_bounds():
    assert lower_bound(">=1.8,<3") == (1, 8)
    assert lower_bound("<2.6") is None
    assert lower_bound("!=2.0") is None


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.mark.parametrize(("files", "oldest", "source"), [
    ({"requirements.txt": "# torch==1.0 was too old\ntorch>=1.6\n"}, (1, 6), "requirements.txt"),
    ({"requirements/base.txt": "torch==1.10.1\n"}, (1, 10, 1), "base.txt"),
    ({"setup.py": "import torch\nsetup(install_requires=['torch>=1.4', 'numpy'])\n"}, (1, 4), "setup.py"),
    ({"setup.cfg": "[options]\ninstall_requires =\n    torch>=1.9\n"}, (1, 9), "setup.cfg"),
    ({"pyproject.toml": "[project]\nname='p'\ndependencies = ['torch>=2.2']\n"}, (2, 2), "pyproject.toml"),
    ({"pyproject.toml": "[project]\nname='p'\n[project.optional-dependencies]\ngpu = ['torch==1.12']\n"},
     (1, 12), "pyproject.toml"),
    ({"pyproject.toml": "[tool.poetry.dependencies]\ntorch = '^1.11'\n"}, (1, 11), "pyproject.toml"),
    ({"environment.yml": "channels:\n  - pytorch\ndependencies:\n  - pytorch=0.4.1\n"}, (0, 4, 1), "environment.yml"),
    ({"environment.yml": "channels:\n  - pytorch\ndependencies:\n  - pytorch\n"}, None, None),
    ({"requirements.txt": "numpy\n"}, None, None),
])
def test_project_metadata_is_read_from_the_nearest_folder_that_names_torch(tmp_path, files, oldest, source):
    write(tmp_path, {**files, "pkg/train.py": "import torch\n"})
    (tmp_path / ".git").mkdir()  # the project root: metadata is looked for from the file up to it
    found = torch_support(tmp_path / "pkg" / "train.py")
    assert (found and found.oldest, found and Path(found.source).name) == (oldest, source)


DATASET = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Crops(Dataset):
    def __init__(self, images):
        self.images = images

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        scale = np.random.uniform(0.8, 1.2)
        return torch.from_numpy(self.images[index] * scale)


def loader(images):
    return DataLoader(Crops(images), batch_size=8, num_workers=4{init})
"""


def codes(root: Path) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in check_paths([root]) if f.code == "TL504"}


@pytest.mark.parametrize(("requirements", "init", "expected"), [
    ("torch==1.7.1\n", "", {("TL504", 15)}),  # workers copy np.random's state before PyTorch 1.9
    ("torch>=1.4,<1.9\n", "", {("TL504", 15)}),  # capped below 1.9: what is installed is older
    ("torch>=1.7\n", "", set()),  # only a floor: an install gets a current PyTorch
    ("torch>=1.7,<2\n", "", set()),  # 1.9 and later admitted
    ("torch~=1.8\n", "", set()),  # 1.8 up to 2.0
    ("torch>=1.9\n", "", set()),  # PyTorch reseeds np.random in every worker
    ("torch\n", "", set()),  # the oldest supported version is not known
    (None, "", set()),
    ("torch==1.7.1\n", ", worker_init_fn=lambda i: np.random.seed(torch.initial_seed() % 2**32)", set()),
])
def test_numpy_global_draws_in_workers_depend_on_the_oldest_supported_torch(tmp_path, requirements, init, expected):
    files = {"data.py": DATASET.replace("{init}", init)}
    if requirements is not None:
        files["requirements.txt"] = requirements
    assert codes(write(tmp_path, files)) == expected


def test_the_config_setting_wins_over_the_project_metadata(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"data.py": DATASET.replace("{init}", ""), "requirements.txt": "torch>=1.9\n",
                     "pyproject.toml": "[tool.torchlint]\ntorch-version = '>=1.8'\n"})
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["data.py", "--select", "TL504", "--no-cache"], capsys)
    assert code == 1 and "data.py:15:17: TL504" in out and "runs PyTorch 1.8 ([tool.torchlint] torch-version)" in out


def test_editing_the_requirements_rechecks_a_cached_file(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"data.py": DATASET.replace("{init}", ""), "requirements.txt": "torch>=1.9\n",
                     "pyproject.toml": "[tool.torchlint]\nselect = ['TL504']\n"})
    monkeypatch.chdir(tmp_path)
    assert run(["data.py"], capsys)[0] == 0
    (tmp_path / "requirements.txt").write_text("torch==1.7.1\n")
    assert run(["data.py"], capsys)[0] == 1


LOADS = """
import torch


def resume(model, args):
    torch.save(model.state_dict(), args.out)
    model.load_state_dict(torch.load(args.out))


def pretrained(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))


def safe(model, path):
    return torch.load(path, weights_only=True), torch.load(path, weights_only=False)
"""


@pytest.mark.parametrize(("requirements", "expected"), [
    ("torch>=1.8,<3\n", {("TL703", 11)}),  # before 2.6 the default load runs pickle
    ("torch>=2.6\n", set()),  # the default is weights_only=True
    ("torch\n", set()),  # the oldest supported version is not known
])
def test_default_load_is_reported_only_where_the_project_supports_torch_before_2_6(tmp_path, requirements,
                                                                                    expected):
    write(tmp_path, {"load.py": LOADS, "requirements.txt": requirements})
    from torchlint.config import Settings

    found = {(f.code, f.line) for f in check_paths([tmp_path], Settings(extend_select=["TL703"]))
             if f.code == "TL703"}
    assert found == expected


def test_tl703_is_off_by_default(tmp_path):
    write(tmp_path, {"load.py": LOADS, "requirements.txt": "torch>=1.8\n"})
    assert not [f for f in check_paths([tmp_path]) if f.code == "TL703"]


TRAINER = """
import torch
from transformers import AutoModel, Trainer, TrainingArguments


def build(path, data):
    model = AutoModel.from_pretrained(path, torch_dtype=torch.float16)
    return Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=data)
"""


@pytest.mark.parametrize(("requirements", "expected"), [
    ("torch>=2.1\ntransformers>=4.40\n", {("TL110", 8)}),  # AdamW's foreach kernel: eps rounds to 0
    ("torch>=2.8\ntransformers>=5.0\n", set()),  # the Trainer defaults to the fused AdamW (float32 math)
    (None, {("TL110", 8)}),  # unknown: the non-fused default may run
])
def test_hf_trainer_default_eps_depends_on_the_default_optimizer(tmp_path, requirements, expected):
    files = {"train.py": TRAINER}
    if requirements is not None:
        files["requirements.txt"] = requirements
    assert {(f.code, f.line) for f in check_paths([write(tmp_path, files)]) if f.code == "TL110"} == expected
