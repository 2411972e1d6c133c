"""GitHub Actions workflow commands: `::error file=…,line=…::message`."""

from __future__ import annotations

from torchlint.finding import Finding

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], **_: object) -> str:
    lines = []
    for f in findings:
        line, column, end_line, end_column = f.file_span  # in a notebook: where the raw .ipynb holds it
        cell = f"cell {f.cell}: " if f.cell is not None else ""
        properties = ",".join([
            f"file={escape_property(f.path)}",
            f"line={line}",
            f"col={column}",
            f"endLine={end_line}",
            f"endColumn={end_column}",
            f"title={escape_property(f'{f.code} ({f.name})')}",
        ])
        lines.append(f"::{_LEVEL.get(f.severity, 'warning')} {properties}::{escape_data(f'{f.code} {cell}{f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
