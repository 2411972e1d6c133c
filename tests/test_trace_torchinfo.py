"""Per-layer parameters of `torchlint trace` against torchinfo's, on real architectures built from
tiny configs (transformers) and on fx-traced fixtures. torchinfo shows a tied weight (GPT-2's
`lm_head`) at each module that uses it; the trace shows it once, at its first use."""

import json

import pytest
from conftest import FIXTURES
from test_trace_matrix import MATRIX

from torchlint.cli import main

torch = pytest.importorskip("torch")
torchinfo = pytest.importorskip("torchinfo")
transformers = pytest.importorskip("transformers")

CASES = [case for case in MATRIX if case[0] in ("gpt2", "llama", "bert", "distilbert", "opt", "vit", "convnext",
                                                  "resnet")]
FX = [("mlp.py:MLP", "float32[B, 10]", (2, 10)), ("attention.py:Attention", "float32[B, T, 64]", (2, 5, 64))]


def ours(capsys, target, spec, *extra) -> tuple[dict[str, int], int]:
    code = main(["trace", target, "--input", spec, "--output-format", "json", "--no-cache", *extra])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    data = json.loads(out)
    per_module: dict[str, int] = {}
    for row in data["layers"]:
        if row["params"]:
            per_module[row["module"]] = per_module.get(row["module"], 0) + row["params"]
    return per_module, data["parameters"]


def theirs(model, example) -> tuple[dict[str, int], int]:
    """torchinfo's parameters per module (those it holds itself, or all of a leaf's), a tied weight
    counted only where it is first used, as the trace does."""
    names = {id(module): name for name, module in model.named_modules()}
    summary = torchinfo.summary(model, input_data=[example], depth=100, verbose=0)
    seen: set[int] = set()
    per_module: dict[str, int] = {}
    tied = 0
    for layer in summary.summary_list:
        held = list(layer.module.parameters(recurse=layer.is_leaf_layer))
        count = layer.num_params if layer.is_leaf_layer else layer.leftover_params()
        if not layer.executed or count <= 0:
            continue
        again = sum(p.numel() for p in held if id(p) in seen)  # torchinfo's second count of a tied weight
        assert count - again == sum(p.numel() for p in held if id(p) not in seen)
        tied += again
        seen.update(map(id, held))
        if count > again:
            per_module[names[id(layer.module)]] = count - again
    return per_module, summary.total_params - tied


def compare(capsys, model_type: str, overrides: dict, spec: str, example) -> None:
    from torchlint.graph import hf_target

    config = hf_target._config(transformers, transformers.AutoConfig, model_type, overrides)
    config.use_cache = False
    torch.manual_seed(0)
    model = hf_target._model_class(transformers, config).from_config(config, attn_implementation="eager").eval()
    extra = ["--init-kwargs", json.dumps(overrides)] if overrides else []
    mine, total = ours(capsys, f"hf:{model_type}", spec, *extra)
    expected, their_total = theirs(model, example)
    assert mine == expected
    assert sum(mine.values()) == total == their_total


@pytest.mark.parametrize("model_type, overrides, spec, kv", CASES, ids=[case[0] for case in CASES])
def test_hugging_face_layers_match_torchinfo(capsys, model_type, overrides, spec, kv):
    example = torch.randint(0, 100, (2, 8)) if spec.startswith("int64") else torch.randn(2, 3, 32, 32)
    compare(capsys, model_type, overrides, spec, example)


# the default configs: GPT-2 (124M), BERT-base with its LM head (110M), ViT-B/16, ConvNeXt-T, ResNet-50
FULL = [("gpt2", "int64[B, T]"), ("bert", "int64[B, T]"), ("vit", "float32[B, 3, 224, 224]"),
        ("convnext", "float32[B, 3, 224, 224]"), ("resnet", "float32[B, 3, 224, 224]")]


@pytest.mark.slow
@pytest.mark.parametrize("model_type, spec", FULL, ids=[case[0] for case in FULL])
def test_full_size_layers_match_torchinfo(capsys, model_type, spec):
    example = torch.randint(0, 1000, (1, 16)) if spec.startswith("int64") else torch.randn(1, 3, 224, 224)
    compare(capsys, model_type, {}, spec, example)


@pytest.mark.parametrize("target, spec, shape", FX, ids=[case[0] for case in FX])
def test_fx_traced_layers_match_torchinfo(capsys, target, spec, shape):
    from torchlint.graph.target import load_target

    model = load_target(f"{FIXTURES / 'models' / target}", on_meta=False).model
    mine, total = ours(capsys, f"{FIXTURES / 'models' / target}", spec)
    expected, their_total = theirs(model, torch.randn(*shape))
    assert mine == expected
    assert sum(mine.values()) == total == their_total
