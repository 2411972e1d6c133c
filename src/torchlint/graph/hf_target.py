"""`hf:gpt2`, `hf:path/to/config.json`: a Hugging Face architecture built from its config, without weights.

Nothing is downloaded: the name is a `transformers` model type (its default config), a local
config file or folder, or a Hub id whose config is already in the local cache. The model is built
on the meta device with the KV cache off (a cache object in the output stops `torch.export`) and
eager attention, and traced with `int64[B, T]` token ids unless ``--input`` says otherwise.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import torch

from torchlint.graph.errors import TraceInputError, with_root_cause
from torchlint.graph.inputs import InputSpec

TOKENS = InputSpec("int64", ("B", "T"))


def load_hf(name: str, overrides: dict[str, Any]):
    """The model for `hf:<name>` on the meta device, and notes on what was assumed."""
    try:
        import transformers
        from transformers import AutoConfig
    except ImportError:
        raise TraceInputError(f"hf:{name} needs transformers: pip install transformers") from None
    config = _config(transformers, AutoConfig, name, overrides)
    config.use_cache = False
    model_class = _model_class(transformers, config)
    try:
        with torch.device("meta"):
            model = model_class.from_config(config, attn_implementation="eager")
    except Exception as error:
        raise TraceInputError(f"building {model_class.__name__} from the hf:{name} config failed: "
                              f"{with_root_cause(error)}") from None
    model.eval()
    notes = [f"built {type(model).__name__} from the {config.model_type} config without weights (meta device), "
             "use_cache=False, eager attention"]
    return model, type(model).__name__, notes


def _config(transformers, auto_config, name: str, overrides: dict[str, Any]):
    path = Path(name)
    try:
        if path.is_file() or (path.is_dir() and (path / "config.json").is_file()):
            file = path if path.is_file() else path / "config.json"
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise TraceInputError(f"hf:{name}: cannot read {file}: {error}") from None
            if not isinstance(data, dict) or "model_type" not in data:
                raise TraceInputError(f"hf:{name}: {file} has no \"model_type\"")
            model_type = data.pop("model_type")
            return auto_config.for_model(model_type, **{**data, **overrides})
        known = transformers.CONFIG_MAPPING
        if name in known:
            return auto_config.for_model(name, **overrides)
        if "/" in name:
            try:
                return auto_config.from_pretrained(name, local_files_only=True, **overrides)
            except (OSError, ValueError):
                raise TraceInputError(
                    f"hf:{name}: its config is not in the local cache and nothing is downloaded; pass "
                    "hf:path/to/config.json (or the folder holding it)") from None
    except TraceInputError:
        raise
    except Exception as error:  # a config that rejects the overrides, an unknown model type in a file
        raise TraceInputError(f"hf:{name}: the config cannot be built: {with_root_cause(error)}") from None
    close = difflib.get_close_matches(name, list(known.keys()), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise TraceInputError(f"hf:{name} is not a transformers model type, a config file or a cached Hub id{hint}")


def _model_class(transformers, config):
    """The causal-LM head when the architecture has one (what people size for training), else the base model."""
    for mapping, auto in (("MODEL_FOR_CAUSAL_LM_MAPPING", "AutoModelForCausalLM"), ("MODEL_MAPPING", "AutoModel")):
        table = getattr(transformers, mapping, None)
        if table is not None and type(config) in table:
            return getattr(transformers, auto)
    return transformers.AutoModel
