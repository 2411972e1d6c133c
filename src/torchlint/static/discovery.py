"""Which files to lint: walk directories, skip VCS/venv/build folders and `exclude` globs."""

from __future__ import annotations

import os
from pathlib import Path

from torchlint.config import DEFAULT_EXCLUDE, Settings, path_matches

PYTHON_SUFFIXES = (".py", ".pyi")


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
                    if name.endswith(PYTHON_SUFFIXES) and not _excluded(file, settings) and file not in seen:
                        seen.add(file)
                        found.append(file)
        elif root not in seen and not (force_exclude and _excluded(root, settings)):
            seen.add(root)
            found.append(root)
    return found
