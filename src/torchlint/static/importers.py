"""Which project files import a module: the reverse of the import graph, read from import lines.

Each project file is read once per process and its `import` / `from ... import` statements are
resolved to project files (a regular expression over the text, no parse). A module's importers are
the files that import it directly, or import the package whose `__init__.py` re-exports it. The
answer is used to find the calls other files make to a module's functions, so it errs towards
"unknown": a module imported by more than ``MAX_IMPORTERS`` files, or any module of a project with
more than ``MAX_PROJECT_FILES`` Python files, is treated as library code whose callers cannot all be
seen (and reading them all would cost more than the check itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

MAX_IMPORTERS = 16
MAX_PROJECT_FILES = 500  # past this (a library such as torch itself) callers in other modules are not read
MAX_FILE_BYTES = 2_000_000

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([\w. \t,]+))",
    re.M)
_NAME = re.compile(rb"[A-Za-z_]\w*")

Resolve = Callable[[Path, "str | None", int], "Path | None"]


class ImportIndex:
    """Reverse imports of the Python files under one root."""

    def __init__(self, files: list[Path], resolve: Resolve) -> None:
        self.importers: dict[str, set[str]] = {}
        self.too_big = len(files) > MAX_PROJECT_FILES
        for file in [] if self.too_big else files:
            try:
                if file.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if b"import" not in data:
                continue
            for target in _imported(file, data, resolve):
                if target != file:
                    self.importers.setdefault(str(target), set()).add(str(file))

    def of(self, module: Path) -> list[str] | None:
        """The files importing ``module`` (through one package `__init__.py` too); None when more than
        ``MAX_IMPORTERS`` do (a library-like module: its callers are not all here)."""
        if self.too_big:
            return None
        direct = self.importers.get(str(module), set())
        found = set(direct)
        for importer in direct:
            if importer.endswith("__init__.py"):
                found |= self.importers.get(importer, set())
        if len(found) > MAX_IMPORTERS:
            return None
        return sorted(found - {str(module)})


def _imported(file: Path, data: bytes, resolve: Resolve) -> set[Path]:
    found: set[Path] = set()
    for match in _IMPORT.finditer(data):
        dots, module, names, plain = match.groups()
        if plain is not None:
            for part in plain.split(b","):
                words = part.split()
                if words:
                    _add(found, resolve(file, words[0].decode("ascii", "replace"), 0))
            continue
        level = len(dots)
        base = module.decode("ascii", "replace") or None
        target = resolve(file, base, level)
        _add(found, target)
        if (target is None and base is None) or (target is not None and target.name == "__init__.py"):
            # `from . import submodule`, `from pkg import submodule` (not `from torch import nn`)
            for name in _NAME.findall(names):
                if name != b"as":
                    sub = f"{base}.{name.decode('ascii', 'replace')}" if base else name.decode("ascii", "replace")
                    _add(found, resolve(file, sub, level))
    return found


def _add(found: set[Path], target: Path | None) -> None:
    if target is not None:
        found.add(Path(resolved(str(target))))


@lru_cache(maxsize=4096)
def resolved(path: str) -> str:
    """The absolute, symlink-free form of a path (the path itself inside a symlink loop)."""
    try:
        return str(Path(path).resolve()) if path else ""
    except (OSError, RuntimeError):
        return path
