"""`torchlint trace hf:...`: Hugging Face architectures from their configs, without weights or downloads."""

from __future__ import annotations

import json

import pytest

from torchlint.cli import main

pytest.importorskip("torch")
pytest.importorskip("transformers")

SMALL_GPT2 = '{"n_layer": 1, "n_embd": 32, "n_head": 2, "vocab_size": 100, "n_positions": 64}'


def _trace_json(capsys, *args) -> dict:
    code = main(["trace", *args, "--output-format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_model_type_traces_with_token_ids_and_module_paths(capsys):
    report = _trace_json(capsys, "hf:gpt2", "--init-kwargs", SMALL_GPT2)
    assert report["target"] == "GPT2LMHeadModel"
    assert report["inputs"] == ["int64[B, T]"]
    assert any("without weights" in note and "use_cache=False" in note for note in report["notes"])
    layers = report["layers"]
    token_embedding = next(r for r in layers if r["module"] == "transformer.wte" and r["op"] == "aten.embedding")
    assert token_embedding["shape"] == "[B, T, 32]"
    head = [r for r in layers if r["module"] == "lm_head"]
    assert head and head[-1]["shape"] == "[B, T, 100]"
    attention = [r for r in layers if r["module"].startswith("transformer.h.0.attn")]
    assert attention and all(r["file"] and r["file"].endswith(".py") for r in attention)
    assert report["parameters"] > 0


def test_local_config_file_with_overrides(tmp_path, capsys):
    config = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = _trace_json(capsys, f"hf:{tmp_path}", "--init-kwargs", '{"num_hidden_layers": 1}')
    modules = {r["module"] for r in report["layers"]}
    assert "model.layers.0.self_attn.q_proj" in modules
    assert not any(m.startswith("model.layers.1") for m in modules)  # the override took effect
    logits = [r for r in report["layers"] if r["module"] == "lm_head"]
    assert logits[-1]["shape"] == "[B, T, 128]"


@pytest.mark.parametrize("target, message", [
    ("hf:gtp2", "hf:gtp2 is not a transformers model type, a config file or a cached Hub id (did you mean gpt2"),
    ("hf:no-such-org/no-such-model", "its config is not in the local cache and nothing is downloaded"),
])
def test_unknown_names_get_one_line_and_exit_2(capsys, target, message):
    assert main(["trace", target]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_config_without_model_type(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"hidden_size": 8}')
    assert main(["trace", f"hf:{tmp_path / 'config.json'}"]) == 2
    assert 'has no "model_type"' in capsys.readouterr().err


def test_import_failure_names_the_chained_root_cause(tmp_path, capsys):
    (tmp_path / "lazy.py").write_text(
        "try:\n    import no_such_vision_lib\nexcept ImportError as error:\n"
        "    raise RuntimeError(\"Could not import module 'GPT2LMHeadModel'\") from error\n")
    assert main(["trace", f"{tmp_path / 'lazy.py'}:Net"]) == 2
    err = capsys.readouterr().err
    assert "Could not import module 'GPT2LMHeadModel'" in err
    assert "root cause: ModuleNotFoundError: No module named 'no_such_vision_lib'" in err


@pytest.mark.parametrize("text, limit, expected", [
    ("short message", 40, "short message"),
    ("Found <class 'transformers.cache_utils.DynamicCache'> in output", 30, "Found <class …"),
    ("a" * 50, 20, "a" * 20 + " …"),  # one long word: cut at the limit, marked
])
def test_clip_words_never_cuts_mid_word(text, limit, expected):
    from torchlint.graph.errors import clip_words

    assert clip_words(text, limit) == expected
