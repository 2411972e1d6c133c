"""pylint's `parseable` format: `path:line: [CODE(name), object] message`, one line per finding,
for tools that read pylint reports (Jenkins warnings, IDE problem matchers).

pylint fills `object` with the enclosing function; torchlint leaves it empty for a file and puts a
notebook finding's place in its cell there (`cell N:line:col`), the line being the raw .ipynb one.
"""

from __future__ import annotations

from torchlint.finding import Finding
from torchlint.report.source import cell_location, one_line


def render_pylint(findings: list[Finding], **_: object) -> str:
    out = []
    for f in findings:
        line = f.file_span[0]
        out.append(f"{f.path}:{line}: [{f.code}({f.name}), {cell_location(f)}] {one_line(f.message)}")
    return "".join(line + "\n" for line in out)
