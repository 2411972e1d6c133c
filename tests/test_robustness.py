"""The engine survives real code: a sample of the installed torch package and the standard library."""

import os
import sysconfig
from pathlib import Path

import pytest

from torchlint.config import Settings
from torchlint.static.engine import check_text

ALL = Settings(select=["ALL"]).enabled()


def _sample(root: Path, every: int) -> list[Path]:
    files = sorted(root.rglob("*.py"))
    return files[::every]


def _check_all(files):
    crashed = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            check_text(text, str(path), ALL)
        except Exception as error:  # noqa: BLE001 - any crash is the failure we look for
            crashed.append(f"{path}: {type(error).__name__}: {error}")
    return crashed


def test_standard_library_sample():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in _sample(stdlib, 7) if "test" not in p.parts]
    assert len(files) > 100
    assert _check_all(files) == []


def test_torch_package_sample():
    torch_spec = pytest.importorskip("importlib.util").find_spec("torch")
    if torch_spec is None or not torch_spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    root = Path(list(torch_spec.submodule_search_locations)[0])
    every = 1 if os.environ.get("TORCHLINT_FULL_ROBUSTNESS") else 8
    files = _sample(root, every)
    assert len(files) > 200
    assert _check_all(files) == []


def test_own_source_reports_nothing():
    """`torchlint src/` on torchlint itself: nothing to report (a finding is fixed or carries a justified noqa)."""
    from torchlint.api import check_paths

    assert [f"{f.path}:{f.line}: {f.code}" for f in check_paths([Path(__file__).parents[1] / "src"])] == []


@pytest.mark.parametrize("literal, expected", [
    (r"'\x set: loss {:.4f}'", [("TL001", 4)]),  # CPython: truncated \xXX escape; LibCST parses it
    (r"'\u12 done'", [("TL001", 4)]),
    (r"r'\x set'", []),  # a raw string
    (r"'\\x set'", []),  # an escaped backslash
    (r"b'\u12'", []),  # no \u escape in bytes
])
def test_string_escapes_cpython_refuses_are_syntax_errors(literal, expected):
    source = f"import torch\n\n\nprint({literal}.format(torch.zeros(1).sum()))\n"
    findings = check_text(source, "m.py", Settings(select=["ALL"]).enabled())
    assert [(f.code, f.line) for f in findings] == expected
