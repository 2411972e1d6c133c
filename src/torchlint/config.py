"""Settings from `[tool.torchlint]` in pyproject.toml and the command line."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from torchlint.catalog import ENGINE_RULES, all_rules
from torchlint.rule import RuleInfo

KNOWN_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "include",
              "extend-include"}
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pypackages__", "build", "dist",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".torchlint_cache", "site-packages", "*.egg-info",
)


class ConfigError(Exception):
    """A usage or configuration mistake: reported on one line, exit code 2."""


@dataclass
class Settings:
    root: Path = field(default_factory=Path.cwd)
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))  # files found in directories
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None  # the config file, when one was read

    def validate(self) -> None:
        for selectors in (self.select or [], self.extend_select, self.ignore,
                          *self.per_file_ignores.values()):
            unknown = [s for s in selectors if not _matches(s)]
            if unknown:
                raise ConfigError(f"unknown rule selector(s): {', '.join(unknown)}")

    def enabled(self) -> frozenset[str]:
        rules = all_rules()
        if self.select is None:
            chosen = {r.code for r in rules if r.default_enabled}
        else:
            chosen = {r.code for r in rules if _selected(r, self.select)}
        chosen |= {r.code for r in rules if _selected(r, self.extend_select)}
        chosen -= {r.code for r in rules if _selected(r, self.ignore)}
        # Syntax and read errors are always reported unless explicitly ignored.
        chosen |= {r.code for r in ENGINE_RULES if not _selected(r, self.ignore)}
        return frozenset(chosen)

    def ignored_for(self, relative: str) -> list[str]:
        found: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if path_matches(relative, pattern):
                found.extend(codes)
        return found

    def fingerprint(self) -> str:
        data = json.dumps([sorted(self.enabled()), self.per_file_ignores, self.options], sort_keys=True)
        return hashlib.blake2b(data.encode(), digest_size=8).hexdigest()


def _selected(rule: RuleInfo, selectors: list[str]) -> bool:
    return any(s == "ALL" or rule.code.startswith(s) for s in selectors)


def _matches(selector: str) -> bool:
    return selector == "ALL" or any(r.code.startswith(selector) for r in all_rules())


def path_matches(relative: str, pattern: str) -> bool:
    """Glob against the path relative to the config root, or against any one component."""
    relative = relative.replace("\\", "/")
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern + "/*"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatch(part, pattern) for part in relative.split("/"))
    return False


def find_config(start: Path) -> Path | None:
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "torchlint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(config: Path | None, start: Path) -> Settings:
    path = config if config is not None else find_config(start)
    if path is None:
        return Settings(root=Path.cwd())
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML in {path}: {error}") from None
    table = data.get("tool", {}).get("torchlint", {}) if path.name == "pyproject.toml" else data
    return settings_from_table(table, path)


def settings_from_table(table: dict[str, Any], path: Path | None = None) -> Settings:
    where = f" in {path}" if path else ""
    codes = {r.code: r for r in all_rules()}
    settings = Settings(root=path.parent.resolve() if path else Path.cwd(), source=path)
    for key, value in table.items():
        if key in codes:
            settings.options[key] = _rule_options(codes[key], value, where)
            continue
        if key not in KNOWN_KEYS:
            raise ConfigError(f"unknown key [tool.torchlint] {key}{where}")
        if key == "per-file-ignores":
            if not isinstance(value, dict) or not all(_str_list(v) for v in value.values()):
                raise ConfigError(f"per-file-ignores must map globs to lists of codes{where}")
            settings.per_file_ignores = {k: list(v) for k, v in value.items()}
            continue
        if not _str_list(value):
            raise ConfigError(f"[tool.torchlint] {key} must be a list of strings{where}")
        if key == "select":
            settings.select = list(value)
        elif key == "ignore":
            settings.ignore = list(value)
        elif key == "extend-select":
            settings.extend_select = list(value)
        elif key == "include":
            settings.include = list(value) + settings.include[len(DEFAULT_INCLUDE):]
        elif key == "extend-include":
            settings.include.extend(value)
        else:
            settings.exclude.extend(value)
    settings.validate()
    return settings


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _rule_options(rule: RuleInfo, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"[tool.torchlint.{rule.code}] must be a table{where}")
    for name, option in value.items():
        if name not in rule.options:
            known = ", ".join(sorted(rule.options)) or "none"
            raise ConfigError(f"unknown option {rule.code}.{name}{where} (known: {known})")
        default = rule.options[name]
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            if isinstance(option, bool) or not isinstance(option, (int, float)):
                raise ConfigError(f"option {rule.code}.{name} must be a number{where}")
        elif isinstance(default, str):
            choices = rule.options.get(f"{name}:choices")
            if not isinstance(option, str) or (choices and option not in choices):
                raise ConfigError(f"option {rule.code}.{name} must be one of {choices}{where}")
    return dict(value)
