"""Adopting torchlint on existing code, for the check command: `--add-noqa`, `--write-baseline`,
`--baseline` (the mechanisms are in add_noqa.py and baseline.py)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from torchlint.config import ConfigError
from torchlint.finding import FileResult, Finding

_EXCLUSIVE = {
    "add_noqa": ("--add-noqa", ("fix", "diff", "baseline", "write_baseline")),
    "write_baseline": ("--write-baseline", ("diff", "baseline")),
}
_FLAGS = {"fix": "--fix", "diff": "--diff", "baseline": "--baseline", "write_baseline": "--write-baseline"}


def prepare(args: argparse.Namespace, stdin: bool) -> Counter | None:
    """Reject combinations that make no sense; load --baseline before any work (exit 2 if it is bad)."""
    for name, (flag, others) in _EXCLUSIVE.items():
        if not getattr(args, name):
            continue
        if stdin:
            raise ConfigError(f"{flag} works on files; it cannot read stdin")
        clash = next((other for other in others if getattr(args, other)), None)
        if clash is not None:
            raise ConfigError(f"{flag} cannot be combined with {_FLAGS[clash]}")
    if args.baseline is None:
        return None
    from torchlint.baseline import load_baseline

    return load_baseline(args.baseline)


def add_noqa_comments(results: list[FileResult], exit_zero: bool = False) -> int:
    """Write the comments; say what was done and what was left. Exit 0, or 1 if findings stay unmarked."""
    from torchlint.add_noqa import add_noqa

    report = add_noqa(results)
    for line in report.skipped:
        print(f"torchlint: note: not marked: {line}", file=sys.stderr)
    lines, files = report.lines, report.files
    print(f"Added noqa comments to {lines} line{'s' if lines != 1 else ''} in {files} file{'s' if files != 1 else ''}.",
          file=sys.stderr)
    return 1 if report.skipped and not exit_zero else 0


def write_baseline(args: argparse.Namespace, findings: list[Finding]) -> int:
    from torchlint.baseline import write_baseline as write

    write(args.write_baseline, findings)
    count = len(findings)
    print(f"Wrote {count} finding{'s' if count != 1 else ''} to the baseline {args.write_baseline}.", file=sys.stderr)
    return 0


def without_baseline(args: argparse.Namespace, recorded: Counter | None, findings: list[Finding],
                     sources: dict[str, str] | None = None) -> list[Finding]:
    """The findings --baseline does not record; says on stderr how many it hid."""
    if recorded is None:
        return findings
    from torchlint.baseline import apply_baseline

    kept, hidden = apply_baseline(findings, recorded, args.baseline, sources)
    print(f"torchlint: the baseline {args.baseline} hid {hidden} finding{'s' if hidden != 1 else ''}.",
          file=sys.stderr)
    return kept
