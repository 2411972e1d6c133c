"""The rule metadata type shared by every depth. It imports nothing of torchlint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DOCS_URL = "https://github.com/torchlint/torchlint/blob/main/rules/{code}.md"


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: str
    summary: str
    default_enabled: bool = True
    fixable: bool = False
    tags: tuple[str, ...] = ()
    precision: str = "high"  # SARIF/CodeQL precision: very-high | high | medium | low
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def help_uri(self) -> str:
        return DOCS_URL.format(code=self.code)
