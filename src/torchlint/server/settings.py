"""Settings for open documents: the nearest config file, the editor's overrides, reloaded on demand.

A config file that cannot be read is reported once (through ``on_error``) and the defaults are
used, so one bad edit to pyproject.toml never leaves the editor without diagnostics or stops
the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchlint.config import ConfigError, Settings, load_settings
from torchlint.static.discovery import excluded, relative_to_root

OVERRIDE_KEYS = {"select": "select", "extend-select": "extend_select", "extendSelect": "extend_select",
                 "ignore": "ignore"}


@dataclass
class Overrides:
    """Rule selection the editor passes (initializationOptions or workspace/didChangeConfiguration)."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    debounce_ms: float | None = None

    @classmethod
    def parse(cls, data: Any) -> tuple[Overrides, list[str]]:
        """The overrides in ``data`` (a dict, possibly under a "torchlint" key) and the problems found."""
        problems: list[str] = []
        if isinstance(data, dict) and isinstance(data.get("torchlint"), dict):
            data = data["torchlint"]
        if not isinstance(data, dict):
            return cls(), ([] if data is None else ["settings must be an object"])
        result = cls()
        for key, value in data.items():
            if key in OVERRIDE_KEYS:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    problems.append(f"setting {key} must be a list of rule codes")
                    continue
                setattr(result, OVERRIDE_KEYS[key], [v.strip().upper() for v in value if v.strip()])
            elif key in ("debounce", "debounceMs", "debounce-ms"):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10_000:
                    problems.append(f"setting {key} must be a number of milliseconds (0 to 10000)")
                    continue
                result.debounce_ms = float(value)
            else:
                problems.append(f"unknown setting {key}")
        check = Settings(select=result.select, extend_select=result.extend_select, ignore=result.ignore)
        unknown = check.unknown_selectors()
        if unknown:
            problems.append(f"unknown rule selector(s) in the editor settings: {', '.join(unknown)}")
            result.select, result.extend_select, result.ignore = None, [], []
        return result, problems

    def apply(self, settings: Settings) -> Settings:
        return replace(settings, select=self.select if self.select is not None else settings.select,
                       extend_select=settings.extend_select + self.extend_select,
                       ignore=settings.ignore + self.ignore)


class SettingsStore:
    """Settings per folder, read once until ``reload``; ``generation`` counts the reloads."""

    def __init__(self, on_error: Callable[[str], None]) -> None:
        self.on_error = on_error
        self.overrides = Overrides()
        self.roots: list[Path] = []  # workspace folders, longest first
        self.generation = 0
        self._by_folder: dict[Path, Settings] = {}
        self._reported: set[str] = set()

    def reload(self) -> None:
        self._by_folder.clear()
        self._reported.clear()
        self.generation += 1

    def for_file(self, file: Path | None) -> Settings:
        folder = file.parent if file is not None else (self.roots[0] if self.roots else Path.cwd())
        settings = self._by_folder.get(folder)
        if settings is None:
            settings = self._by_folder[folder] = self._load(folder)
        return settings

    def _load(self, folder: Path) -> Settings:
        try:
            settings = load_settings(None, folder if folder.is_dir() else Path.cwd())
        except ConfigError as error:
            self._report(f"{error}; using the default settings")
            settings = Settings()
        if settings.source is None:  # no config file: the workspace folder is the root
            settings = replace(settings, root=self._root_of(folder))
        return self.overrides.apply(settings)

    def _root_of(self, folder: Path) -> Path:
        resolved = folder.resolve()
        for root in self.roots:
            if resolved == root or root in resolved.parents:
                return root
        return resolved

    def _report(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self.on_error(message)


def for_document(settings: Settings, file: Path | None) -> Settings | None:
    """The settings one file is checked with (its per-file-ignores folded in); None when excluded."""
    if file is None:
        return settings
    inside = file.resolve().parent == settings.root or settings.root in file.resolve().parents
    if inside and excluded(file, settings):
        return None
    extra = settings.ignored_for(relative_to_root(file, settings))
    return replace(settings, ignore=settings.ignore + extra, per_file_ignores={}) if extra else settings
