"""SARIF 2.1.0 for GitHub code scanning (validated against the OASIS schema in the tests)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from torchlint import __version__
from torchlint.catalog import all_rules, doc_sections, rule_doc
from torchlint.finding import Finding
from torchlint.report.source import SourceLines
from torchlint.rule import RuleInfo

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str, root: Path) -> tuple[str, bool]:
    """A relative URI under %SRCROOT% when possible, else an absolute file URI."""
    absolute = Path(os.path.realpath(path))  # unlike Path.resolve(), no RuntimeError on a symlink loop
    try:
        return quote(absolute.relative_to(root).as_posix(), safe="/"), True
    except ValueError:
        return absolute.as_uri(), False


def _location(uri: str, relative: bool) -> dict:
    location: dict = {"uri": uri}
    if relative:
        location["uriBaseId"] = "%SRCROOT%"
    return location


def _rule(info: RuleInfo) -> dict:
    doc = rule_doc(info.code) or ""
    sections = doc_sections(doc)
    full = sections.get("What it does", info.summary)
    why = sections.get("Why is this bad?", "")
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": full},
        "help": {"text": f"{full}\n\n{why}".strip(), "markdown": doc or info.summary},
        "helpUri": info.help_uri,
        "defaultConfiguration": {"level": _LEVEL[info.severity], "enabled": info.default_enabled},
        "properties": {"tags": list(info.tags), "precision": info.precision},
    }


def _line_hash(finding: Finding, lines: SourceLines) -> str:
    """Of the source line without whitespace (in a notebook: the cell's line, not the JSON's)."""
    text = lines.line(finding) or ""
    return hashlib.blake2b("".join(text.split()).encode(), digest_size=8).hexdigest()


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": max(end_column, column)}


def render_sarif(findings: list[Finding], *, root: str | None = None, sources: dict[str, str] | None = None,
                 **_: object) -> str:
    base = Path(root or os.getcwd()).resolve()
    rules = all_rules()
    index = {info.code: i for i, info in enumerate(rules)}
    lines = SourceLines(sources)
    occurrences: Counter[tuple[str, str, str]] = Counter()
    results = []
    for f in findings:
        uri, relative = _uri(f.path, base)
        line_hash = _line_hash(f, lines)
        occurrences[(f.path, f.code, line_hash)] += 1
        result: dict = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "warning"),
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _location(uri, relative),
                    "region": _region(*f.file_span),  # in a notebook: the raw .ipynb text
                }
            }],
            "partialFingerprints": {
                "primaryLocationLineHash": f"{line_hash}:{occurrences[(f.path, f.code, line_hash)]}"
            },
            "properties": {"depths": list(f.depths)},
        }
        if f.related:
            result["relatedLocations"] = [{
                "id": number,
                "physicalLocation": {
                    "artifactLocation": _location(*_uri(r.path, base)),
                    "region": {"startLine": r.line, "startColumn": r.column},
                },
                "message": {"text": r.message},
            } for number, r in enumerate(f.related, 1)]
        if f.cell is not None:
            result["properties"].update(cell=f.cell, cellLine=f.line, cellColumn=f.column)
        if f.fix is not None and f.cell is None:  # a cell's edits are not edits of the JSON text
            result["fixes"] = [{
                "description": {"text": f"{f.fix.message} ({f.fix.applicability})"},
                "artifactChanges": [{
                    "artifactLocation": _location(uri, relative),
                    "replacements": [
                        {
                            "deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                            "insertedContent": {"text": e.content},
                        }
                        for e in f.fix.edits
                    ],
                }],
            }]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "torchlint",
                    "version": __version__,
                    "semanticVersion": __version__,
                    "informationUri": "https://github.com/torchlint/torchlint",
                    "rules": [_rule(info) for info in rules],
                }
            },
            "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
