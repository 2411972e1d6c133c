"""Output formats shared by every depth."""

from __future__ import annotations

from collections.abc import Callable

from torchlint.finding import Finding
from torchlint.report.concise import render_concise
from torchlint.report.github import render_github
from torchlint.report.gitlab import render_gitlab
from torchlint.report.json_format import render_json
from torchlint.report.junit import render_junit
from torchlint.report.pylint import render_pylint
from torchlint.report.sarif import render_sarif
from torchlint.report.text import render_text

Renderer = Callable[..., str]
FORMATS: dict[str, Renderer] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
    "gitlab": render_gitlab,
    "junit": render_junit,
    "pylint": render_pylint,
    "concise": render_concise,
}

__all__ = ["FORMATS", "Finding"]
