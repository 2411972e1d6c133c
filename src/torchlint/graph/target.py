"""Load `model.py:Net`, `package.module:Net` or a factory, and build it without real memory."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from torchlint.graph.errors import TraceInputError, with_root_cause


@dataclass
class Target:
    model: torch.nn.Module
    name: str
    source: Path | None  # the file that defines the target, when known
    notes: list[str] = field(default_factory=list)
    device: str = "meta"
    inputs: list = field(default_factory=list)  # InputSpecs the target implies (hf: token ids)


def _import_module(spec: str) -> ModuleType:
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise TraceInputError(f"file not found: {spec}")
        name = f"_torchlint_target_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path.resolve())
        if module_spec is None or module_spec.loader is None:
            raise TraceInputError(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.resolve().parent))
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except SystemExit as error:
            raise TraceInputError(f"importing {spec} called sys.exit({error.code})") from None
        except Exception as error:
            raise TraceInputError(f"importing {spec} failed: {with_root_cause(error)}") from None
        finally:
            sys.path.remove(str(path.resolve().parent))
        return module
    try:
        return importlib.import_module(spec)
    except Exception as error:
        raise TraceInputError(f"cannot import module {spec!r}: {with_root_cause(error)}") from None


def _kwargs(init_kwargs: str | None) -> dict[str, Any]:
    if not init_kwargs:
        return {}
    try:
        value = json.loads(init_kwargs)
    except json.JSONDecodeError as error:
        raise TraceInputError(f"--init-kwargs is not valid JSON: {error.msg}") from None
    if not isinstance(value, dict):
        raise TraceInputError("--init-kwargs must be a JSON object, e.g. '{\"hidden\": 64}'")
    return value


def load_target(spec: str, init: str | None = None, init_kwargs: str | None = None, on_meta: bool = True) -> Target:
    """`spec` is FILE.py:NAME or package.module:NAME; NAME is an nn.Module class or a factory.
    Built on the meta device (no memory) unless on_meta is False (`run` needs real weights)."""
    if spec.startswith("hf:"):
        from torchlint.graph.hf_target import TOKENS, load_hf

        model, name, notes = load_hf(spec[3:], _kwargs(init_kwargs))
        return Target(model, name, None, notes, "meta", [TOKENS])
    if ":" not in spec:
        raise TraceInputError(f"target {spec!r} must look like model.py:Net, package.module:Net or hf:gpt2")
    module_part, _, name = spec.rpartition(":")
    module = _import_module(module_part)
    if not hasattr(module, name):
        available = sorted(n for n, v in vars(module).items()
                           if isinstance(v, type) and issubclass(v, torch.nn.Module) and not n.startswith("_"))
        hint = f" (nn.Module classes there: {', '.join(available)})" if available else ""
        raise TraceInputError(f"{module_part} has no {name!r}{hint}")
    factory = getattr(module, name)
    source = Path(module.__file__).resolve() if getattr(module, "__file__", None) else None

    def build() -> Any:
        if init:
            try:
                expression = ast.parse(init, mode="eval")
            except SyntaxError as error:
                raise TraceInputError(f"--init {init!r} is not a Python expression: {error.msg}") from None
            return eval(compile(expression, "<--init>", "eval"), vars(module))  # the user's own expression
        if not callable(factory):
            raise TraceInputError(f"{name} is not a class or factory function")
        return factory(**_kwargs(init_kwargs))

    notes: list[str] = []
    device = "meta" if on_meta else "cpu"
    try:
        if on_meta:
            with torch.device("meta"):
                model = build()
        else:
            model = build()
    except TraceInputError:
        raise
    except Exception as meta_error:
        try:
            model = build()
        except TraceInputError:
            raise
        except Exception as error:
            raise TraceInputError(f"constructing {name} failed: {with_root_cause(error)}") from None
        if on_meta:
            device = "cpu"
            notes.append(f"the constructor could not run on the meta device ({with_root_cause(meta_error)}); built on CPU")
    if not isinstance(model, torch.nn.Module):
        raise TraceInputError(f"{name}(...) returned {type(model).__name__}, not an nn.Module")
    model.eval()
    return Target(model, name, source, notes, device)
