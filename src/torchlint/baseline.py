"""`--write-baseline FILE` records the current findings; `--baseline FILE` reports only new ones.

A finding matches a recorded one by rule code, path (relative to the baseline file's folder, so
the baseline works from any working directory) and code key (see report/fingerprint.py), never by
line number.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from torchlint.config import ConfigError
from torchlint.finding import Finding
from torchlint.report.fingerprint import code_keys

VERSION = 1
_Key = tuple[str, str, str, int]  # code, path, digest, occurrence


def _relative(path: str, folder: Path) -> str:
    if path == "-":
        return path
    try:
        return Path(os.path.relpath(os.path.abspath(path), folder)).as_posix()
    except ValueError:  # another drive
        return Path(os.path.abspath(path)).as_posix()


def _folder(baseline: Path) -> Path:
    return Path(os.path.abspath(baseline)).parent


def _keys(findings: list[Finding], baseline: Path, sources: dict[str, str] | None) -> list[_Key]:
    folder = _folder(baseline)
    return [(f.code, _relative(f.path, folder), key.digest, key.occurrence)
            for f, key in zip(findings, code_keys(findings, sources), strict=True)]


def write_baseline(baseline: Path, findings: list[Finding], sources: dict[str, str] | None = None) -> None:
    entries = []
    for finding, (code, path, digest, occurrence) in zip(findings, _keys(findings, baseline, sources), strict=True):
        entry = {"code": code, "path": path, "fingerprint": digest, "occurrence": occurrence,
                 "line": finding.line, "message": finding.message}  # line and message: for people only
        if finding.cell is not None:
            entry["cell"] = finding.cell
        entries.append(entry)
    entries.sort(key=lambda e: (e["path"], e.get("cell", 0), e["line"], e["code"]))
    text = json.dumps({"torchlint-baseline": VERSION, "findings": entries}, indent=2, ensure_ascii=False) + "\n"
    try:
        baseline.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write baseline {baseline}: {error.strerror}") from None


def load_baseline(baseline: Path) -> Counter[_Key]:
    """The recorded keys; a ConfigError (one line, exit 2) for a file that is missing or malformed."""
    where = f"baseline {baseline}"
    try:
        text = baseline.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: not found (create it with --write-baseline {baseline})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("torchlint-baseline") != VERSION:
        raise ConfigError(f'{where}: not a torchlint baseline (expected {{"torchlint-baseline": {VERSION}, '
                          '"findings": [...]}; write one with --write-baseline)')
    entries = data.get("findings")
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: `findings` must be a list")
    keys: Counter[_Key] = Counter()
    for number, entry in enumerate(entries, start=1):
        keys[_entry_key(entry, f"{where}: finding {number}")] += 1
    return keys


def _entry_key(entry: object, where: str) -> _Key:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} is not an object")
    for name in ("code", "path", "fingerprint"):
        if not isinstance(entry.get(name), str):
            raise ConfigError(f"{where} has no text `{name}`")
    occurrence = entry.get("occurrence")
    if isinstance(occurrence, bool) or not isinstance(occurrence, int) or occurrence < 1:
        raise ConfigError(f"{where}: `occurrence` must be a whole number from 1")
    return entry["code"], entry["path"], entry["fingerprint"], occurrence


def apply_baseline(findings: list[Finding], recorded: Counter[_Key], baseline: Path,
                   sources: dict[str, str] | None = None) -> tuple[list[Finding], int]:
    """The findings ``recorded`` (loaded from ``baseline``) does not hold, and how many it hid."""
    recorded = Counter(recorded)
    kept = []
    for finding, key in zip(findings, _keys(findings, baseline, sources), strict=True):
        if recorded[key] > 0:
            recorded[key] -= 1
        else:
            kept.append(finding)
    return kept, len(findings) - len(kept)
