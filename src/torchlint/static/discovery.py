"""Which files to lint: walk directories for `include` globs, skip VCS/venv/build folders and `exclude` globs."""

from __future__ import annotations

import os
from pathlib import Path

from torchlint.config import DEFAULT_EXCLUDE, Settings, path_matches


def relative_to_root(path: Path, settings: Settings) -> str:
    try:
        return Path(os.path.realpath(path)).relative_to(settings.root).as_posix()  # a loop: no RuntimeError
    except ValueError:
        return path.as_posix()


def _excluded(path: Path, settings: Settings) -> bool:
    relative = relative_to_root(path, settings)
    name = path.name
    for pattern in DEFAULT_EXCLUDE:
        if path_matches(name, pattern):
            return True
    return any(path_matches(relative, pattern) for pattern in settings.exclude)


def excluded(path: Path, settings: Settings) -> bool:
    """Whether a file is excluded by its name or by a folder it lies in (default excludes included)."""
    relative = relative_to_root(path, settings)
    parts = relative.split("/")[:-1]
    return _excluded(path, settings) or any(path_matches(part, p) for part in parts for p in DEFAULT_EXCLUDE)


def _included(path: Path, settings: Settings) -> bool:
    """A pattern without `/` matches the file name, one with `/` the path below the root."""
    relative = None
    for pattern in settings.include:
        if "/" not in pattern.rstrip("/"):
            if path_matches(path.name, pattern):
                return True
        else:
            relative = relative or relative_to_root(path, settings)
            if path_matches(relative, pattern):
                return True
    return False


def discover(paths: list[Path], settings: Settings, force_exclude: bool = False) -> list[Path]:
    """Files to check, in a deterministic order. Explicitly named files are kept unless force_exclude."""
    found: list[Path] = []
    seen: set[Path] = set()
    for root in paths:
        if root.is_dir():
            for folder, dirs, files in os.walk(root):
                base = Path(folder)
                dirs[:] = sorted(d for d in dirs if not _excluded(base / d, settings))
                for name in sorted(files):
                    file = base / name
                    if _included(file, settings) and not _excluded(file, settings) and file not in seen:
                        seen.add(file)
                        found.append(file)
        elif root not in seen and not (force_exclude and excluded(root, settings)):
            seen.add(root)
            found.append(root)
    return found
