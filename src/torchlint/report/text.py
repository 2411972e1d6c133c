"""Human output: `path:line:col: CODE message`, the source line with a caret, the help line."""

from __future__ import annotations

import os
from collections import Counter

from torchlint.finding import Finding
from torchlint.report.source import SourceLines, location


def display_path(path: str) -> str:
    """A path relative to the working directory when it lies below it, else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


def render_text(findings: list[Finding], *, statistics: bool = False, color: bool = False,
                sources: dict[str, str] | None = None, **_: object) -> str:
    bold, red, cyan, reset = ("\033[1m", "\033[31m", "\033[36m", "\033[0m") if color else ("",) * 4
    out: list[str] = []
    if statistics:
        counts = Counter((f.code, f.name) for f in findings)
        fixable = Counter(f.code for f in findings if f.fix is not None)
        for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            marker = "[*]" if fixable[code] else "   "
            out.append(f"{count:>5}\t{code}\t{marker} {name}")
        return "\n".join(out) + ("\n" if out else "")
    lines = SourceLines(sources)
    for finding in findings:
        marker = " [*]" if finding.fix is not None and finding.fix.applicability == "safe" else ""
        out.append(f"{bold}{location(finding)}:{reset} "
                   f"{red}{finding.code}{reset}{marker} {finding.message}")
        text = lines.line(finding)
        if text is not None and text.strip():
            number = str(finding.line)
            width = max(1, (finding.end_column - finding.column) if finding.end_line == finding.line
                        else len(text) - finding.column + 1)
            out.append(f"  {number} | {text}")
            out.append(f"  {' ' * len(number)} | {' ' * (finding.column - 1)}{red}^{'~' * (width - 1)}{reset}")
        for related in finding.related:
            out.append(f"  {cyan}= note:{reset} {related.message} "
                       f"({display_path(related.path)}:{related.line}:{related.column})")
        if finding.help:
            out.append(f"  {cyan}= help:{reset} {finding.help}")
        out.append("")
    total = len(findings)
    if total:
        safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
        files = len({f.path for f in findings})
        summary = f"Found {total} finding{'s' if total != 1 else ''} in {files} file{'s' if files != 1 else ''}"
        if safe:
            summary += f" ({safe} fixable with --fix)"
        out.append(summary + ".")
    else:
        out.append("All checks passed!")
    return "\n".join(out) + "\n"
