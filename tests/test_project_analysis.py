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
