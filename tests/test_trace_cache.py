"""The trace cache: a second trace of an unchanged model is answered without building it; any change
to a file the first trace read (the model's module, a module it imports, a config it opens) traces
again."""

import json

import pytest

from torchlint.cli import main
from torchlint.graph import target as target_module
from torchlint.graph import trace_cache

torch = pytest.importorskip("torch")

MODEL = '''import json
import torch
from blocks import Block


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        width = json.load(open("width.json"))["width"]
        self.inp = torch.nn.Linear(4, width)
        self.block = Block(width)

    def forward(self, x):
        return self.block(self.inp(x))
'''
BLOCKS = '''import torch


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = torch.nn.Linear(width, 2)

    def forward(self, x):
        return self.fc(x)
'''


@pytest.fixture
def model(project, monkeypatch):
    """The project; each trace imports its modules afresh, as a new `torchlint trace` process does."""
    import sys

    real = main

    def fresh_main(argv):
        sys.modules.pop("blocks", None)
        return real(argv)

    monkeypatch.setitem(globals(), "main", fresh_main)
    (project / "model.py").write_text(MODEL)
    (project / "blocks.py").write_text(BLOCKS)
    (project / "width.json").write_text('{"width": 8}')
    return project


def params(capsys, *extra):
    code = main(["trace", "model.py:Net", "--input", "float32[B, 4]", "--output-format", "json", *extra])
    data = json.loads(capsys.readouterr().out)
    return code, data["totals"]["params"] if "totals" in data else sum(r["params"] or 0 for r in data["layers"])


def forbid_building(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model was built: the cache was not used")

    monkeypatch.setattr(target_module, "load_target", refuse)


def test_a_second_trace_of_an_unchanged_model_is_not_built(model, capsys, monkeypatch):
    first = params(capsys)
    assert first == (0, 4 * 8 + 8 + 8 * 2 + 2)
    entry = json.loads(next(trace_cache.FOLDER.glob("*.json")).read_text())
    assert {str(model / name) for name in ("model.py", "blocks.py", "width.json")} <= set(entry["files"])
    forbid_building(monkeypatch)
    assert params(capsys) == first
    with pytest.raises(AssertionError, match="cache was not used"):  # other options: another entry
        params(capsys, "--optimizer", "sgd")


@pytest.mark.parametrize("edit", [
    ("blocks.py", BLOCKS.replace("Linear(width, 2)", "Linear(width, 3)"), 4 * 8 + 8 + 8 * 3 + 3),
    ("width.json", '{"width": 16}', 4 * 16 + 16 + 16 * 2 + 2),  # a file the constructor opened
    ("model.py", MODEL.replace("Linear(4, width)", "Linear(4, width, bias=False)"), 4 * 8 + 8 * 2 + 2),
])
def test_an_edit_to_any_file_the_trace_read_traces_again(model, capsys, edit):
    name, text, expected = edit
    params(capsys)
    (model / name).write_text(text)
    assert params(capsys) == (0, expected)


def test_same_size_and_time_but_other_content_is_seen_in_the_users_files(model, capsys):
    import os

    params(capsys)
    stat = os.stat(model / "width.json")
    (model / "width.json").write_text('{"width": 9}')  # same size
    os.utime(model / "width.json", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert params(capsys) == (0, 4 * 9 + 9 + 9 * 2 + 2)


def test_no_cache_neither_reads_nor_writes(model, capsys, monkeypatch):
    params(capsys, "--no-cache")
    assert not trace_cache.FOLDER.exists()
    params(capsys)
    forbid_building(monkeypatch)
    with pytest.raises(AssertionError, match="cache was not used"):
        params(capsys, "--no-cache")


def test_errors_are_not_cached(model, capsys):
    (model / "width.json").write_text("not json")
    assert main(["trace", "model.py:Net", "--input", "float32[B, 4]"]) == 2
    assert not list(trace_cache.FOLDER.glob("*.json"))
