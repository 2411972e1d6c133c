"""`torchlint trace` costs: FLOPs and saved activations per layer as formulas, totals, --dims, the peak."""

import json
import re
import sys
import warnings
from pathlib import Path

import pytest
from conftest import FIXTURES

from torchlint.cli import main

torch = pytest.importorskip("torch")
MODELS = FIXTURES / "models"
TINY_LLAMA = '{"dim": 64, "layers": 2, "heads": 4, "hidden": 128, "vocab": 100}'
FROZEN_ROTARY = '''import torch
import torch.nn as nn


class FrozenRotary(nn.Module):
    def __init__(self, dim=64, vocab=100, max_seq=128):
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)
        self.register_buffer("cos", torch.ones(max_seq, dim), persistent=False)
        self.out = nn.Linear(dim, vocab, bias=False).requires_grad_(False)

    def forward(self, x):
        return self.out(self.proj(x) * self.cos[:x.shape[1]])
'''


def traced(capsys, *args):
    code = main(["trace", *args, "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def by_node(data):
    return {row["node"]: row for row in data["layers"]}


def test_mlp_flops_and_saved_bytes_per_layer(capsys):
    data = traced(capsys, f"{MODELS}/mlp.py:MLP")
    rows = by_node(data)
    # fc1: 2·B·10·50 multiply-adds; it saves its input x (B·10 float32); ReLU saves its output, which
    # fc2 saves too (one storage, counted once)
    assert (rows["fc1"]["flops"], rows["fc1"]["saved_bytes"]) == ("1000*B", "40*B")
    assert (rows["act"]["flops"], rows["act"]["saved_bytes"]) == (0, "200*B")
    assert (rows["fc2"]["flops"], rows["fc2"]["saved_bytes"]) == ("300*B", 0)
    costs = data["costs"]
    weights = (10 * 50 + 50 + 50 * 3 + 3) * 4
    assert costs["weights_bytes"] == weights and costs["gradients_bytes"] == weights
    assert costs["optimizer_state_bytes"] == 2 * weights  # AdamW: two moments
    assert costs["forward_flops"] == "1300*B"
    assert costs["saved_activations_bytes"] == "240*B"
    assert costs["training_bytes"] == f"264*B + {4 * weights}"  # + output [B, 3] and its gradient


def test_dims_evaluate_every_formula(capsys):
    data = traced(capsys, f"{MODELS}/mlp.py:MLP", "--dims", "B=100", "--optimizer", "sgd")
    costs = data["costs"]
    assert costs["forward_flops"] == 130_000 and costs["optimizer_state_bytes"] == 0
    assert costs["training_bytes"] == 26_400 + 2 * 2812
    assert by_node(data)["fc1"]["flops"] == 100_000
    assert costs["training_peak_bytes"] > 0


def test_attention_counts_the_fused_kernel_and_the_kv_cache(capsys):
    data = traced(capsys, f"{MODELS}/llama.py:Llama", "--init-kwargs", TINY_LLAMA)
    costs = data["costs"]
    # no [B, H, T, T] attention weights are saved (flash / memory-efficient kernels never hold them)
    assert "T^2" not in costs["saved_activations_bytes"]
    assert "T^2" in costs["forward_flops"]  # but the attention's matmuls are counted
    assert costs["kv_cache_bytes_per_token"] == 2 * 2 * 64 * 4  # K and V, 2 layers, dim 64, float32
    assert costs["checkpointed_blocks"] == "layers"


def test_text_report_shows_formulas_then_values(capsys):
    code = main(["trace", f"{MODELS}/llama.py:Llama", "--init-kwargs", TINY_LLAMA, "--dims", "B=2,T=16"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cost per step (at B=2, T=16)" in out
    assert "forward FLOPs       512·B·T² + 177K·B·T = " in out
    assert "with activation checkpointing of the 2 blocks in layers" in out
    assert "KV cache 1 KiB per token of each sequence" in out
    assert "training peak" in out


@pytest.mark.parametrize(("target", "args", "flops"), [
    ("llama.py:Llama", ["--init-kwargs", TINY_LLAMA], "512*B*T^2 + 176640*B*T"),  # Linear, attention
    ("attention.py:Attention", ["--input", "float32[B, T, 64]"], "256*B*T^2 + 32768*B*T"),  # q @ k.T
])
def test_formulas_keep_b_and_t_where_the_cpp_matmul_reads_concrete_sizes(capsys, target, args, flops):
    """torch 2.11's C++ matmul (under nn.Linear and attention too) reads the concrete sizes of inputs of
    3 or more dims: that pinned B and T to the example sizes 8 and 7 (TL602, constant FLOPs and
    activations). A kernel that does the same stands in for it here."""
    scoped = getattr(torch.library, "_scoped_library", None)
    if scoped is None:
        pytest.skip("no torch.library._scoped_library in this torch")
    from torch._decomp.decompositions import matmul

    def concrete_sizes(a, b):
        [int(size) for size in (*a.shape, *b.shape)]  # int() of a SymInt guards it to its example size
        return matmul(a, b)

    with scoped("aten", "IMPL") as library:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            library.impl("matmul", concrete_sizes, "CompositeImplicitAutograd")
        code = main(["trace", f"{MODELS}/{target}", *args, "--output-format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert [finding["message"] for finding in data["findings"]] == [] and code == 0
    assert data["costs"]["forward_flops"] == flops
    assert "B*T" in data["costs"]["saved_activations_bytes"]


def fresh_symbols(data) -> list[str]:
    """ShapeEnv symbols (s70) anywhere in a report: sizes that are no dim of the user's."""
    return re.findall(r"\bs\d+\b", json.dumps(data, ensure_ascii=False))


def test_buffers_and_frozen_weights_add_no_symbols(capsys, tmp_path):
    """A buffer sliced by T (`cos[:t]`, as in llama.py) and a frozen Linear: their sizes are constants.
    They were fresh symbols: the slice's shape was [T, s70], the frozen layer's FLOPs 128·B·T·s53, and
    --dims had no value."""
    (tmp_path / "frozen_rotary.py").write_text(FROZEN_ROTARY)
    target = [f"{tmp_path}/frozen_rotary.py:FrozenRotary", "--input", "float32[B, T, 64]"]
    data = traced(capsys, *target)
    rows = by_node(data)
    assert fresh_symbols(data) == []
    assert (rows["getitem_1"]["shape"], rows["out"]["shape"]) == ("[T, 64]", "[B, T, 100]")
    assert (rows["proj"]["flops"], rows["proj"]["saved_bytes"]) == ("8192*B*T", "256*B*T")
    assert (rows["out"]["flops"], rows["out"]["saved_bytes"]) == ("12800*B*T", 0)  # frozen: saves nothing
    costs = data["costs"]
    weights = (64 * 64 + 128 * 64 + 100 * 64) * 4  # the buffer counts as weights, not as an activation
    assert costs["weights_bytes"] == weights and costs["gradients_bytes"] == 64 * 64 * 4
    assert costs["forward_flops"] == "20992*B*T" and costs["saved_activations_bytes"] == "256*B*T"
    assert costs["training_bytes"] == f"1056*B*T + {weights + 3 * 64 * 64 * 4}"  # + output [B, T, 100] twice
    costs = traced(capsys, *target, "--dims", "B=2,T=16")["costs"]
    assert (costs["forward_flops"], costs["training_bytes"]) == (20992 * 32, 1056 * 32 + weights + 3 * 64 * 64 * 4)
    assert costs["training_peak_bytes"] is not None  # every formula has a value at --dims


BUFFER_INDICES = """
import torch
from torch import nn


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.register_buffer("ids", torch.arange(50).unsqueeze(0))  # as CLIP's position_ids

    def forward(self, x):
        return x + self.emb(self.ids)
"""


def test_a_buffer_that_autograd_saves_is_not_an_activation(capsys, tmp_path):
    """The embedding saves its indices, here the buffer itself (not a fake copy of it): 400 bytes of
    saved activations were counted before."""
    (tmp_path / "positions.py").write_text(BUFFER_INDICES)
    data = traced(capsys, f"{tmp_path}/positions.py:Positions", "--input", "float32[B, 50, 16]")
    assert by_node(data)["emb"]["saved_bytes"] == 0
    assert data["costs"]["saved_activations_bytes"] == 0


def test_rotary_tables_keep_their_size(capsys):
    data = traced(capsys, f"{MODELS}/llama.py:Llama", "--init-kwargs", TINY_LLAMA, "--dims", "B=2,T=16")
    assert fresh_symbols(data) == []
    assert by_node(data)["getitem_1"]["shape"] == "[T, 16]"  # cos[:t] of the [4096, 16] table
    assert all(isinstance(value, int) for key, value in data["costs"].items()
               if key.endswith(("_bytes", "_flops")) and value is not None)


@pytest.mark.parametrize("bad", ["B", "B=0", "B=x", "8=B"])
def test_bad_dims_are_one_line_errors(capsys, bad):
    code = main(["trace", f"{MODELS}/mlp.py:MLP", "--dims", bad])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--dims" in err


def test_formula_text():
    sympy = pytest.importorskip("sympy")
    from torchlint.graph.formulas import Formulas

    b, t = sympy.symbols("s0 s1", positive=True, integer=True)
    formulas = Formulas({"s0": "B", "s1": "T"}, {})
    assert formulas.bytes(16384 * b * t + 512 * b * t**2) == "512 bytes·B·T² + 16 KiB·B·T"
    assert formulas.flops(2_000_000 * b) == "2M·B"
    assert formulas.bytes(27 * 2**30) == "27 GiB"


@pytest.mark.parametrize("case", [2, 3])  # the MLP (peak in the optimizer step) and hand-written attention
def test_peak_within_ten_percent_of_a_real_cpu_step(case):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import bench_trace_cost as bench

    target_text, kwargs, spec, dims, make_input = bench.CASES[case]
    _, peak, _ = bench.predicted(target_text, kwargs, spec, dims)
    model = bench.real_model(target_text, kwargs)
    measured, _ = bench.measured(model, make_input)
    assert 0.9 <= peak / measured <= 1.1
