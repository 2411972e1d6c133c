import os
import textwrap
from pathlib import Path

import pytest

from torchlint import check_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

os.environ["TORCHLINT_STRICT"] = "1"  # internal errors fail the tests instead of being skipped


def findings_of(source: str, **kwargs):
    return check_source(textwrap.dedent(source), **kwargs)


def codes_lines(source: str, **kwargs) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in findings_of(source, **kwargs)}


def codes_lines_after(prefix: str, body: str) -> set[tuple[str, int]]:
    """Findings of `prefix` followed by the dedented `body`, with lines counted in the body (its
    first line is the one after the opening quotes)."""
    offset = prefix.count("\n") + 1
    return {(code, line - offset) for code, line in codes_lines(prefix + textwrap.dedent(body))}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project directory as the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def _private_trace_cache(tmp_path, monkeypatch):
    """Each test starts with an empty trace cache of its own (never the checkout's)."""
    from torchlint.graph import trace_cache

    monkeypatch.setattr(trace_cache, "FOLDER", tmp_path / ".trace-cache")


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` run only where a CUDA device is present; elsewhere they skip, saying why."""
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if available:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
