"""Repeated blocks run once (graph/reuse.py): the report is the same as running every node, faster."""

import json

import pytest
from conftest import FIXTURES

from torchlint.cli import main

torch = pytest.importorskip("torch")
import torchlint.graph.shapes as shapes  # noqa: E402

MODELS = FIXTURES / "models"
LLAMA = '{"dim": 64, "layers": 4, "heads": 4, "hidden": 128, "vocab": 100}'
PYRAMID = '''import torch.nn as nn


class Pyramid(nn.Module):
    """Blocks of the same class but different widths: nothing of one stands for another."""

    def __init__(self):
        super().__init__()
        widths = [32, 24, 16, 8]
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(a, b), nn.GELU()) for a, b in zip(widths, widths[1:]))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
'''
INPLACE = '''import torch.nn as nn


class Inplace(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).sigmoid()
            x.mul_(2)
        return x
'''


def _report(capsys, monkeypatch, reuse: bool, *args) -> tuple[dict, object]:
    memos = []

    def memo(meter):
        made = shapes_memo(meter) if reuse else None
        memos.append(made)
        return made

    shapes_memo = shapes.NodeMemo
    monkeypatch.setattr(shapes, "NodeMemo", memo)
    code = main(["trace", *args, "--output-format", "json", "--no-cache"])
    monkeypatch.setattr(shapes, "NodeMemo", shapes_memo)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out), (memos[0] if memos else None)


def _same_with_and_without(capsys, monkeypatch, *args):
    plain, _ = _report(capsys, monkeypatch, False, *args)
    reused, memo = _report(capsys, monkeypatch, True, *args)
    assert reused == plain  # every row (shape, params, FLOPs, saved bytes, source line), the totals, the peak
    return reused, memo


def test_llama_blocks_reuse_the_first_blocks_results_with_the_same_report(capsys, monkeypatch):
    report, memo = _same_with_and_without(capsys, monkeypatch, f"{MODELS}/llama.py:Llama", "--input", "int64[B, T]",
                                          "--init-kwargs", LLAMA, "--dims", "B=2,T=16")
    rows = report["layers"]
    block = [r for r in rows if r["module"].startswith("layers.1")]
    assert memo.hits >= 3 * len(block) - 5  # blocks 1-3 (and the keys' rotary, which repeats the queries')
    assert report["costs"]["training_peak_bytes"] > 0


def test_blocks_of_different_widths_reuse_nothing_between_them(capsys, monkeypatch, tmp_path):
    path = tmp_path / "pyramid.py"
    path.write_text(PYRAMID)
    report, memo = _same_with_and_without(capsys, monkeypatch, f"{path}:Pyramid", "--dims", "B=4")
    assert [r["shape"] for r in report["layers"] if r["op"] == "Linear"] == ["[B, 24]", "[B, 16]", "[B, 8]"]
    assert memo.hits == 0


def test_a_graph_with_in_place_calls_runs_every_node(capsys, monkeypatch, tmp_path):
    path = tmp_path / "inplace.py"
    path.write_text(INPLACE)
    report, memo = _report(capsys, monkeypatch, True, f"{path}:Inplace")
    assert memo is None  # the backward check needs the real autograd graph
    assert [f["code"] for f in report["findings"]] == ["TL203"]


def test_hugging_face_export_graph_reuses_blocks_with_the_same_report(capsys, monkeypatch):
    pytest.importorskip("transformers")
    report, memo = _same_with_and_without(
        capsys, monkeypatch, "hf:gpt2", "--init-kwargs",
        '{"n_layer": 3, "n_embd": 64, "n_head": 4, "vocab_size": 128, "n_positions": 64}', "--dims", "B=2,T=16")
    assert memo.hits > len(report["layers"]) / 3
