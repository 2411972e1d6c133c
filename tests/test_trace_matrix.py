"""`torchlint trace hf:...` over real architectures built from tiny configs (nothing downloaded):
decoders, encoders and vision models trace, keep their symbolic dims, and carry costs."""

import json
import re

import pytest

from torchlint.cli import main

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

DECODER = {"num_hidden_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
           "vocab_size": 100}
TOKENS = "int64[B, T]"
IMAGES = "float32[B, 3, 32, 32]"
STAGES = {"depths": [1, 1], "hidden_sizes": [8, 16], "num_stages": 2}

# model type, config overrides, input, KV cache bytes per token (float32) or None for encoders
MATRIX = [
    ("gpt2", {"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 100, "n_positions": 64}, TOKENS, 2 * 32 * 4),
    ("llama", {**DECODER, "num_key_value_heads": 1}, TOKENS, 2 * 16 * 4),
    ("mistral", {**DECODER, "num_key_value_heads": 1}, TOKENS, 2 * 16 * 4),
    ("qwen2", {**DECODER, "num_key_value_heads": 2}, TOKENS, 2 * 32 * 4),
    ("gpt_neox", DECODER, TOKENS, 2 * 32 * 4),
    ("opt", {"num_hidden_layers": 1, "hidden_size": 32, "ffn_dim": 64, "num_attention_heads": 2,
             "vocab_size": 100, "word_embed_proj_dim": 32}, TOKENS, 2 * 32 * 4),
    ("bert", DECODER, TOKENS, 2 * 32 * 4),  # hf: takes BertLMHeadModel, the causal-LM head BERT has
    ("distilbert", {"n_layers": 1, "dim": 32, "hidden_dim": 64, "n_heads": 2, "vocab_size": 100}, TOKENS, None),
    ("vit", {"num_hidden_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
             "image_size": 32, "patch_size": 8}, IMAGES, None),
    ("convnext", STAGES, IMAGES, None),
    ("resnet", {**STAGES, "embedding_size": 8}, IMAGES, None),
]


@pytest.mark.parametrize("model_type, overrides, spec, kv", MATRIX, ids=[case[0] for case in MATRIX])
def test_architecture_traces_with_costs(capsys, model_type, overrides, spec, kv):
    code = main(["trace", f"hf:{model_type}", "--init-kwargs", json.dumps(overrides), "--input", spec,
                 "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    data = json.loads(out)
    assert not [f for f in data["findings"] if f["code"] == "TL601"]
    costs = data["costs"]
    assert costs["weights_bytes"] >= 4 * data["parameters"] > 0
    assert "B" in costs["forward_flops"] and "B" in costs["saved_activations_bytes"]
    if spec == TOKENS:
        assert "T" in costs["forward_flops"]
    assert costs["kv_cache_bytes_per_token"] == kv  # from the config; encoders do not generate: none
    assert any(row["module"] not in ("-", "") for row in data["layers"])
    assert not re.findall(r"\bs\d+\b", json.dumps(data, ensure_ascii=False))  # only the user's dims


def test_rotary_buffer_adds_no_symbol_and_dims_give_numbers(capsys):
    """Llama's `inv_freq` buffer had a symbolic size: saved bytes `... + 16*T*s93`, no number at --dims."""
    sympy = pytest.importorskip("sympy")
    args = ["trace", "hf:llama", "--init-kwargs", json.dumps(MATRIX[1][1]), "--output-format", "json"]
    assert main(args) == 0
    saved = sympy.sympify(json.loads(capsys.readouterr().out)["costs"]["saved_activations_bytes"].replace("^", "**"))
    b, t = sympy.symbols("B T")
    assert saved.free_symbols == {b, t}
    assert saved.subs(b, 0) == 128 * t  # the rotary cos and sin, [1, T, 16] float32 each, shared by the batch
    assert main([*args, "--dims", "B=2,T=16"]) == 0
    costs = json.loads(capsys.readouterr().out)["costs"]
    assert costs["saved_activations_bytes"] == saved.subs({b: 2, t: 16})
    assert costs["training_peak_bytes"] is not None
