"""Rule metadata shared by every depth: codes, names, severities, options, docs."""

from __future__ import annotations

import re
from pathlib import Path

from torchlint.rule import RuleInfo

# Engine-level findings: not produced by a rule module.
SYNTAX_ERROR = RuleInfo(
    "TL001", "syntax-error", "error", "The file could not be parsed.", tags=("engine",),
    precision="very-high",
)
UNREADABLE_FILE = RuleInfo(
    "TL002", "unreadable-file", "error",
    "The file could not be read, or decoded as Python decodes source (UTF-8 unless a BOM or coding line "
    "says otherwise).",
    tags=("engine",), precision="very-high",
)
ENGINE_RULES = (SYNTAX_ERROR, UNREADABLE_FILE)


def all_rules() -> list[RuleInfo]:
    """Every rule of every depth, sorted by code."""
    from torchlint.graph.catalog import GRAPH_RULES
    from torchlint.runtime.catalog import RUNTIME_RULES
    from torchlint.static.rules import STATIC_RULES

    infos = list(ENGINE_RULES) + [rule.info for rule in STATIC_RULES] + list(GRAPH_RULES) + list(RUNTIME_RULES)
    return sorted(infos, key=lambda r: r.code)


def rules_by_code() -> dict[str, RuleInfo]:
    return {r.code: r for r in all_rules()}


def _docs_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here / "_rule_docs", here.parents[1] / "rules"]


def rule_doc(code: str) -> str | None:
    for folder in _docs_dirs():
        path = folder / f"{code}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def rule_text(code: str) -> str:
    """The documentation `torchlint rule CODE` prints: the rule's doc, else its one-line summary.
    CODE may also be the rule's name; KeyError for an unknown rule."""
    by_code = rules_by_code()
    key = code.upper()
    if key not in by_code:
        by_name = {info.name: info.code for info in by_code.values()}
        if code.lower() not in by_name:
            raise KeyError(code)
        key = by_name[code.lower()]
    doc = rule_doc(key)
    info = by_code[key]
    return doc if doc is not None else f"# {info.code} {info.name}\n\n{info.summary}"


_SECTION = re.compile(r"^## (.+?)\s*$", re.M)


def doc_sections(text: str) -> dict[str, str]:
    """Split a rule doc into its `## Section` bodies."""
    parts = _SECTION.split(text)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}

