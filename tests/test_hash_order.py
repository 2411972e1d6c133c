"""TL503's PYTHONHASHSEED case needs evidence that the hash seed matters: a set iterated in order."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchlint.api import check_paths
from torchlint.config import Settings

SEED = """
import os
import random

import torch


def seed_everything(seed):
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    torch.manual_seed(seed)
"""


def lint(root: Path, files: dict[str, str]):
    (root / "pyproject.toml").write_text("[tool.torchlint]\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return check_paths([root], Settings(select=["TL503"]))


@pytest.mark.parametrize("vocab, expected", [
    ("{w: i for i, w in enumerate(set(words))}", [("seed.py", 9)]),
    ("list({w for w in words})", [("seed.py", 9)]),
    ("{w: i for i, w in enumerate(sorted(set(words)))}", []),  # sorted: a fixed order
    ("{w: i for i, w in enumerate(dict.fromkeys(words))}", []),  # insertion order
    ("list(set(range(10)))", []),  # small ints hash to themselves
])
def test_reported_only_where_a_set_is_iterated(tmp_path, vocab, expected):
    script = f"""
    from utils.seed import seed_everything


    def main(words):
        seed_everything(0)
        vocab = {vocab}
        return vocab
    """
    findings = lint(tmp_path, {"utils/__init__.py": "", "utils/seed.py": SEED, "train.py": script})
    assert [(Path(f.path).name, f.line) for f in findings] == expected
    for finding in findings:
        assert [(Path(r.path).name, r.line) for r in finding.related] == [("train.py", 7)]


def test_a_set_iterated_in_the_same_file(tmp_path):
    text = SEED + """

def labels(rows):
    names = set()
    for row in rows:
        names.add(row["label"])
    return [name for name in names]
"""
    findings = lint(tmp_path, {"seed.py": text})
    assert [(f.code, f.line, [r.line for r in f.related]) for f in findings] == [("TL503", 9, [18])]


def test_no_set_anywhere_is_not_reported(tmp_path):
    assert lint(tmp_path, {"seed.py": SEED, "train.py": "from seed import seed_everything\nseed_everything(1)\n"}) == []
