"""One line per finding, `path:line:col: CODE message`, for grep and editors' error formats.

A notebook finding points at the raw .ipynb line and column (where the text of that source line is
stored) and starts its message with `cell N:line:col:`, its place in the cell.
"""

from __future__ import annotations

from torchlint.finding import Finding
from torchlint.report.source import cell_location, one_line


def render_concise(findings: list[Finding], **_: object) -> str:
    out = []
    for f in findings:
        line, column, _, _ = f.file_span
        cell = f"{cell_location(f)}: " if f.cell is not None else ""
        out.append(f"{f.path}:{line}:{column}: {f.code} {cell}{one_line(f.message)}")
    return "".join(line + "\n" for line in out)
