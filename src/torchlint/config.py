"""Settings from `[tool.torchlint]` in pyproject.toml and the command line."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
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
from torchlint.static.torch_support import CONFIG_KEY, PROJECT_OPTIONS, from_setting

KNOWN_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "include",
              "extend-include", "max-file-size", "torch-version"}
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
DEFAULT_MAX_FILE_SIZE = 5 * 1000**2  # generated files beyond this are skipped with a note (see README)
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
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes; bigger files are skipped with a note (0: no limit)

    def validate(self, where: str = "") -> None:
        """Unknown codes are an error; where: " in FILE at line N" when they come from a config file."""
        unknown = self.unknown_selectors()
        if unknown:
            raise ConfigError(f"unknown rule selector(s): {', '.join(unknown)}{where}")

    def unknown_selectors(self) -> list[str]:
        for selectors in (self.select or [], self.extend_select, self.ignore, *self.per_file_ignores.values()):
            unknown = [s for s in selectors if not _matches(s)]
            if unknown:
                return unknown
        return []

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


CONFIG_NAMES = ("torchlint.toml", "pyproject.toml")  # in one folder, torchlint.toml wins (as ruff.toml does)


def find_config(start: Path) -> Path | None:
    """The nearest torchlint.toml, or pyproject.toml with a [tool.torchlint] table, from start upwards.

    A config file on the way that cannot be read or parsed is an error, never skipped: skipping it
    would silently drop the user's settings for a parent's or the defaults."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        for name in CONFIG_NAMES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            if name == "torchlint.toml" or "torchlint" in _tool_table(_read_toml(candidate)[0], candidate):
                return candidate
    return None


def load_settings(config: Path | None, start: Path) -> Settings:
    if config is not None and config.is_dir():
        raise ConfigError(f"--config {config}: is a directory (give a pyproject.toml or torchlint.toml file)")
    path = config if config is not None else find_config(start)
    if path is None:
        return Settings(root=Path.cwd())
    data, text = _read_toml(path)
    if path.name == "pyproject.toml":
        table = _tool_table(data, path).get("torchlint", {})
        if not isinstance(table, dict):
            raise ConfigError(f"[tool.torchlint] must be a table{_where(path, text, 'torchlint')}")
    else:
        table = data
    return settings_from_table(table, path, text)


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed file and its text; every failure is a one-line error naming the file and position."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config {_shown(path)}: is a directory") from None
    except OSError as error:
        raise ConfigError(f"cannot read config {_shown(path)}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"cannot read config {_shown(path)}: not valid UTF-8 "
                          f"({error.reason} at byte {error.start})") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as error:
        reason, line, column = _toml_position(str(error), text)
        raise ConfigError(f"invalid TOML in {_shown(path)} at line {line}, column {column}: {reason}") from None


_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")


def _toml_position(message: str, text: str) -> tuple[str, int, int]:
    """tomllib's message without its "(at line L, column C)" tail, and that position."""
    match = _AT.search(message)
    if match is None:
        return message, 1, 1
    if match.group(1):
        return message[: match.start()], int(match.group(1)), int(match.group(2))
    lines = text.split("\n")  # "at end of document"
    return message[: match.start()], len(lines), len(lines[-1]) + 1


def _tool_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"[tool] must be a table in {_shown(path)}")
    return tool


def _shown(path: Path) -> str:
    """The path relative to the working folder when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def _where(path: Path | None, text: str | None, key: str, value: bool = False) -> str:
    """" in FILE at line N" for the line that sets key (or opens its table), or (value) holds the string
    key, when it can be found."""
    if path is None:
        return ""
    line = None
    if text is not None:
        quoted = re.escape(key)
        pattern = re.compile(rf"[\"']{quoted}[\"']" if value else
                             rf"^[ \t]*(?:\[[^\]]*\b{quoted}[ \t]*\]|[\"']?{quoted}[\"']?[ \t]*[=.])", re.M)
        match = pattern.search(text)
        if match is not None:
            line = text.count("\n", 0, match.start()) + 1
    return f" in {_shown(path)}" + (f" at line {line}" if line else "")


def settings_from_table(table: dict[str, Any], path: Path | None = None, text: str | None = None) -> Settings:
    codes = {r.code: r for r in all_rules()}
    settings = Settings(root=path.parent.resolve() if path else Path.cwd(), source=path)
    for key, value in table.items():
        where = _where(path, text, key)
        if key in codes:
            settings.options[key] = _rule_options(codes[key], value, where)
            continue
        if key not in KNOWN_KEYS:
            raise ConfigError(f"unknown key [tool.torchlint] {key}{where}")
        if key == "max-file-size":
            settings.max_file_size = parse_size(value, f" for max-file-size{where}")
            continue
        if key == "torch-version":
            if not isinstance(value, str) or from_setting(value) is None:
                raise ConfigError(f"torch-version must be a version or specifier such as \">=1.8\"{where}")
            settings.options[PROJECT_OPTIONS] = {CONFIG_KEY: value}
            continue
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
    unknown = settings.unknown_selectors()
    if unknown:
        settings.validate(_where(path, text, unknown[0], value=True))
    return settings


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?i?b?)\s*$", re.I)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


def parse_size(value: Any, what: str = "") -> int:
    """Bytes from 5000000, "5MB", "512KiB"...; 0 means no limit."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None or match.group(2).lower() not in _UNITS:
        raise ConfigError(f"invalid size {value!r}{what}: expected e.g. 5MB, 500KB, a number of bytes, "
                          "or 0 for no limit")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def human_size(size: int) -> str:
    for unit, scale in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


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
