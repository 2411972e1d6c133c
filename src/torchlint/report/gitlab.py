"""GitLab Code Quality: a JSON array of issues (`artifacts:reports:codequality` in .gitlab-ci.yml).

Each issue has the fields GitLab requires: description, check_name, fingerprint (stable across
runs and line shifts: see fingerprint.py), severity, location.path (relative to the project root)
and location.lines.begin. A notebook finding points at the raw .ipynb line and names its cell in
the description.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from torchlint.finding import Finding
from torchlint.report.fingerprint import code_keys
from torchlint.report.source import cell_location

SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def _relative(path: str, root: Path) -> str:
    try:
        return Path(os.path.realpath(path)).relative_to(root).as_posix()
    except ValueError:
        return Path(path).as_posix()


def render_gitlab(findings: list[Finding], *, root: str | None = None, sources: dict[str, str] | None = None,
                  **_: object) -> str:
    base = Path(os.path.realpath(root or os.getcwd()))
    issues = []
    for f, key in zip(findings, code_keys(findings, sources), strict=True):
        path = _relative(f.path, base)
        line, _, end_line, _ = f.file_span
        identity = "\0".join((path, f.code, key.digest, str(key.occurrence)))
        cell = f"{cell_location(f)}: " if f.cell is not None else ""
        issues.append({
            "description": f"{f.code} {cell}{f.message}",
            "check_name": f.code,
            "fingerprint": hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(),
            "severity": SEVERITY.get(f.severity, "major"),
            "categories": ["Bug Risk"],
            "location": {"path": path, "lines": {"begin": line, "end": max(end_line, line)}},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
