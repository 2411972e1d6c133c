"""`torchlint -` and `--stdin-filename PATH`: lint (or fix) a buffer piped in, as ruff does.

The name given with --stdin-filename decides the config file, `exclude`, `per-file-ignores`, the
project the imports resolve in, and whether the text is a notebook. With --fix the fixed source
goes to stdout and the findings that remain to stderr; an excluded name echoes the input unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from torchlint.config import ConfigError, Settings
from torchlint.static.discovery import excluded, relative_to_root


def read_stdin() -> str:
    """stdin as UTF-8 text; a closed or undecodable stdin is a one-line usage error."""
    stream = sys.stdin
    if stream is None:
        raise ConfigError("stdin is closed: pipe the source in, e.g. `torchlint - < train.py`")
    try:
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode("utf-8")
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read stdin: {getattr(error, 'strerror', None) or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"stdin is not valid UTF-8 ({error.reason} at byte {error.start})") from None


def check_stdin(args: argparse.Namespace, settings: Settings, emit: Callable[[str, Path | None], None],
                baseline: Counter | None = None) -> int:
    from torchlint.adopt import without_baseline
    from torchlint.report import FORMATS
    from torchlint.static.notebook_check import check_any, diff_any, fix_any

    name = args.stdin_filename or "-"
    text = read_stdin()
    fixing = args.fix or args.diff
    path = Path(name)
    if args.stdin_filename is not None and excluded(path, settings):
        if args.fix and not args.diff:
            sys.stdout.write(text)  # an editor replaces its buffer with this: never lose it
        return 0
    local = replace(settings, ignore=settings.ignore + settings.ignored_for(relative_to_root(path, settings)),
                    per_file_ignores={})
    if fixing:
        outcome = fix_any(text, name, local, unsafe=args.unsafe_fixes)
        if args.diff:
            sys.stdout.write(diff_any(name, text, outcome.source))
            return 1 if outcome.source != text else 0
        sys.stdout.write(outcome.source)
        sys.stdout.flush()
        findings, text = outcome.remaining, outcome.source
    else:
        file = path.resolve() if args.stdin_filename is not None and path.parent.is_dir() else None
        findings = check_any(text, name, local.enabled(), local.options, file=file)
    findings.sort(key=lambda f: f.sort_key)
    findings = without_baseline(args, baseline, findings, sources={name: text})
    report = FORMATS[args.output_format](
        findings, statistics=args.statistics, color=False, sources={name: text},
        root=str(settings.root if settings.source else Path.cwd()), files=[name],
    )
    if fixing and args.output_file is None:
        if findings or args.output_format != "text":  # "All checks passed!" would only be noise here
            sys.stderr.write(report)
    else:
        emit(report, args.output_file)
    return 1 if findings and not args.exit_zero else 0


__all__ = ["check_stdin", "read_stdin"]
