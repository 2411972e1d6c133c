"""Alike blocks exported once (graph/repeat.py): the table and the totals equal a whole-model export's."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torchlint.cli import _replay_peak  # noqa: E402
from torchlint.graph.costs import summarise  # noqa: E402
from torchlint.graph.formulas import parse_dims  # noqa: E402
from torchlint.graph.render import render_trace_json  # noqa: E402
from torchlint.graph.shapes import propagate, trace  # noqa: E402
from torchlint.graph.target import load_target  # noqa: E402

LAYERS = 4
DECODER = {"num_hidden_layers": LAYERS, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
           "vocab_size": 100}
CASES = [
    ("gpt2", {"n_layer": LAYERS, "n_embd": 32, "n_head": 2, "vocab_size": 100, "n_positions": 64}),
    ("llama", {**DECODER, "num_key_value_heads": 1}),
    ("qwen2", {**DECODER, "num_key_value_heads": 2}),
    ("gpt_neox", DECODER),
    ("bert", DECODER),
    ("distilbert", {"n_layers": LAYERS, "dim": 32, "hidden_dim": 64, "n_heads": 2, "vocab_size": 100}),
    # constants the export lifts out of each block's forward (falcon's rotary indices): one per block
    ("falcon", {"num_hidden_layers": LAYERS, "hidden_size": 32, "num_attention_heads": 2, "vocab_size": 100}),
]


def _traced(spec: str, overrides: dict, repeat: bool) -> tuple[dict, list[str]]:
    target = load_target(spec, init_kwargs=json.dumps(overrides))
    graph = trace(target, list(target.inputs), repeat=repeat)
    report = propagate(target, graph, list(target.inputs))
    report.costs = summarise(report.rows, graph, target.model, "adamw")
    dims = parse_dims("B=2,T=16")
    _replay_peak(report, graph, target.model, dims)
    return json.loads(render_trace_json(report, dims)), target.notes


@pytest.mark.parametrize("model_type, overrides", CASES, ids=[case[0] for case in CASES])
def test_repeated_blocks_give_the_whole_exports_table(model_type, overrides):
    whole, _ = _traced(f"hf:{model_type}", overrides, repeat=False)
    repeated, notes = _traced(f"hf:{model_type}", overrides, repeat=True)
    assert any(f"the {LAYERS} blocks of" in note and "repeated block 1's graph for blocks 2-3" in note
               for note in notes)

    def rows(data):  # node names are fx's own counters: everything else must match, row by row
        return [{k: v for k, v in row.items() if k != "node"} for row in data["layers"]]

    assert rows(repeated) == rows(whole)
    assert repeated["costs"] == whole["costs"] and repeated["parameters"] == whole["parameters"]
    modules = {row["module"].split(".self_attn")[0] for row in repeated["layers"]}
    assert any(module.endswith(".3") or ".3." in module for module in modules)  # the last block is named


def test_blocks_that_differ_by_more_than_their_index_are_exported_whole():
    # gemma2 alternates sliding-window and global attention: its blocks' attributes differ
    overrides = {**DECODER, "num_key_value_heads": 1, "head_dim": 16}
    _, notes = _traced("hf:gemma2", overrides, repeat=True)
    assert not any("are alike" in note for note in notes)
