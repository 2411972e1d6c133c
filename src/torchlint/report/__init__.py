"""Output formats shared by every depth."""

from __future__ import annotations

from collections.abc import Callable

from torchlint.finding import Finding
from torchlint.report.github import render_github
from torchlint.report.json_format import render_json
from torchlint.report.sarif import render_sarif
from torchlint.report.text import render_text

Renderer = Callable[..., str]
FORMATS: dict[str, Renderer] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}

__all__ = ["FORMATS", "Finding"]
