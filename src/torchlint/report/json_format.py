"""JSON: a list of findings (schema documented in README: stable field names)."""

from __future__ import annotations

import json

from torchlint.finding import Finding
from torchlint.rule import DOCS_URL


def finding_json(finding: Finding) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {
            "message": finding.fix.message,
            "applicability": finding.fix.applicability,
            "edits": [
                {
                    "content": edit.content,
                    "location": {"row": edit.line, "column": edit.column},
                    "end_location": {"row": edit.end_line, "column": edit.end_column},
                }
                for edit in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity,
        "message": finding.message,
        "filename": finding.path,
        "cell": finding.cell,
        "location": {"row": finding.line, "column": finding.column},
        "end_location": {"row": finding.end_line, "column": finding.end_column},
        "help": finding.help,
        "url": DOCS_URL.format(code=finding.code),
        "fix": fix,
        "depths": list(finding.depths),
        "related": [
            {"filename": r.path, "location": {"row": r.line, "column": r.column}, "message": r.message}
            for r in finding.related
        ],
    }


def render_json(findings: list[Finding], **_: object) -> str:
    return json.dumps([finding_json(f) for f in findings], indent=2, ensure_ascii=False) + "\n"
