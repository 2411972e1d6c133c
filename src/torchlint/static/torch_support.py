"""The oldest PyTorch a project says it supports, for rules whose advice depends on the version.

Read, in this order: ``[tool.torchlint] torch-version`` (a specifier such as ``">=1.8"``), then the
nearest folder, from the checked file up to its project root, holding a metadata file that names
torch: ``pyproject.toml`` (``[project]`` dependencies and optional dependencies, Poetry
dependencies), ``setup.cfg`` (``install_requires``), ``setup.py`` (requirement strings),
``requirements*.txt`` (also in a ``requirements/`` folder) and conda's ``environment.yml``
(``pytorch=1.7``). The oldest supported version is the lowest lower bound of those requirements
(``==``, ``>=``, ``~=``, ``>``, conda's ``=``). A requirement without a lower bound (plain
``torch``, ``torch<2``) says nothing about the oldest version: unknown, never "any".

What a project *installs* is another question: ``torch>=0.4`` admits 0.4 but gets today's release.
Only a pin or a cap (``==1.7.1``, conda's ``pytorch=0.4.1``, ``<1.9``) says an old version is what
runs; ``installs_before`` answers that, for rules about behaviour that changed (worker reseeding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tomllib

from torchlint.static.cache import content_key
from torchlint.static.project import find_root

# a torch/pytorch requirement: the name, then its version specifiers up to a marker or the line end
_REQUIREMENT = re.compile(
    r"""(?ix)(?<![\w.:/-])(?:pytorch::)?(?:py)?torch(?![\w.:-])[ \t]*(?:\[[^\]]*\])?[ \t]*
        (?P<spec>(?:(?:===|==|>=|<=|~=|!=|>|<|=)[ \t]*[0-9][0-9a-z.*+!]*[ \t]*,?[ \t]*)*)""")
_CLAUSE = re.compile(r"(===|==|>=|<=|~=|!=|>|<|=)\s*([0-9][0-9a-z.*+!]*)", re.I)
_STRING = re.compile(r"""(['"])([^'"\n]*torch[^'"\n]*)\1""")
_LOWER = frozenset({"===", "==", ">=", "~=", ">", "="})
METADATA = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml", "environment.yaml")
CONFIG_KEY = "torch-version"


@dataclass(frozen=True)
class TorchSupport:
    oldest: tuple[int, ...]  # (1, 9) for 1.9
    source: str  # where it was read: a file path, or "[tool.torchlint] torch-version"
    newest: tuple[int, ...] | None = None  # every version admitted is below this (None: no cap)

    def before(self, *version: int) -> bool:
        """The project supports some PyTorch older than `version`."""
        return self.oldest < version

    def installs_before(self, *version: int) -> bool:
        """An install of the project gets a PyTorch older than `version`: its requirements pin or cap
        torch below it. The config setting is the user's own statement of what runs, so it counts."""
        if self.source.startswith("["):
            return self.before(*version)
        return self.only_before(*version)

    def only_before(self, *version: int) -> bool:
        """Every PyTorch the project admits is older than `version` (a pin or a cap below it)."""
        return self.newest is not None and self.newest <= version

    @property
    def shown(self) -> str:
        return ".".join(str(part) for part in self.oldest)


def parse_version(text: str) -> tuple[int, ...] | None:
    """`2.6.0` -> (2, 6, 0), `1.13.1+cu117` -> (1, 13, 1), `2.*` -> (2,); None if it is not a version."""
    parts = []
    for piece in text.strip().split("+")[0].split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != piece:
            break
    return tuple(parts) or None


def lower_bound(spec: str) -> tuple[int, ...] | None:
    """The lowest version a specifier string admits (`>=1.8,<3` -> (1, 8)); None when unbounded below."""
    found = [v for op, text in _CLAUSE.findall(spec) if op in _LOWER and (v := parse_version(text)) is not None]
    return min(found) if found else None


def upper_bound(spec: str) -> tuple[int, ...] | None:
    """A version every version the specifier admits is below (`==1.7.1` -> (1, 7, 2), conda's `=1.7`
    -> (1, 8), `<1.9` -> (1, 9), `~=1.7.1` -> (1, 8)); None when nothing caps it."""
    caps = []
    for op, text in _CLAUSE.findall(spec):
        version = parse_version(text)
        if version is None:
            continue
        if op in ("==", "===", "=") or op == "<=":
            caps.append((*version[:-1], version[-1] + 1))  # a pin of 1.7 admits 1.7.x: below 1.8
        elif op == "<":
            caps.append(version)
        elif op == "~=" and len(version) > 1:
            caps.append((*version[:-2], version[-2] + 1))
    return min(caps) if caps else None


def newest_in_text(text: str) -> tuple[int, ...] | None:
    """A version every torch the requirement lines admit is below; None if one requirement is uncapped."""
    caps = []
    for match in _REQUIREMENT.finditer(text):
        cap = upper_bound(match.group("spec"))
        if cap is None:
            return None
        caps.append(cap)
    return max(caps) if caps else None


def oldest_in_text(text: str) -> tuple[int, ...] | None:
    """The oldest torch the requirement lines of a text admit; None if torch is absent or unbounded."""
    bounds = []
    for match in _REQUIREMENT.finditer(text):
        bound = lower_bound(match.group("spec"))
        if bound is None:
            return None  # one requirement without a lower bound: the oldest version is unknown
        bounds.append(bound)
    return min(bounds) if bounds else None


def from_setting(spec: str | None) -> TorchSupport | None:
    if not spec:
        return None
    spec = spec if _CLAUSE.search(spec) else f"=={spec}"
    bound = lower_bound(spec)
    return TorchSupport(bound, f"[tool.torchlint] {CONFIG_KEY}", upper_bound(spec)) if bound else None


def torch_support(file: str | Path | None, setting: str | None = None) -> TorchSupport | None:
    """What the project of `file` supports; None when nothing says (a lone file, no bound)."""
    configured = from_setting(setting)
    if configured is not None or file is None:
        return configured
    path = Path(file)
    root = find_root(path)
    folder = path.resolve().parent
    for current in (folder, *folder.parents):
        found = _folder_support(current)
        if found is not None:
            return found
        if current == root or root not in current.parents:
            return None
    return None


def _folder_support(folder: Path) -> TorchSupport | None:
    """The first metadata file in `folder` that names torch with a lower bound (re-read when one of
    the files changes: a language server lives longer than a requirements file)."""
    files = _metadata_files(folder)
    if not files:
        return None
    stamps = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((path, stat.st_mtime_ns, stat.st_size))
    return _read_support(tuple(stamps))


@lru_cache(maxsize=256)
def _read_support(stamps: tuple[tuple[Path, int, int], ...]) -> TorchSupport | None:
    for path, *_ in stamps:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "torch" not in text:
            continue
        if path.name == "pyproject.toml":
            lines = _pyproject_lines(text)
        elif path.name == "setup.py":  # requirement strings only, not `import torch`
            lines = "\n".join(m.group(2) for m in _STRING.finditer(text))
        elif path.suffix in (".yml", ".yaml"):  # conda: the `pytorch` channel is not a requirement
            lines = _requirements(_without_channels(text))
        else:
            lines = _requirements(text)
        oldest = oldest_in_text(lines)
        if oldest is not None:
            return TorchSupport(oldest, str(path), newest_in_text(lines))
    return None


def _metadata_files(folder: Path) -> list[Path]:
    files = [folder / name for name in METADATA if (folder / name).is_file()]
    files += sorted(folder.glob("requirements*.txt"))
    nested = folder / "requirements"
    if nested.is_dir():
        files += sorted(nested.glob("*.txt"))
    return files


def _without_channels(text: str) -> str:
    """An environment.yml without its `channels:` list."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line[:1] not in (" ", "\t", "-", ""):
            skipping = line.split("#", 1)[0].strip() == "channels:"
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def _requirements(text: str) -> str:
    """Requirement text without comments (`# torch==1.4 was too old` is not a requirement)."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def _pyproject_lines(text: str) -> str:
    """The requirement strings of a pyproject.toml, one a line (Poetry's written as pip's)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return ""
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    lines = [str(item) for item in project.get("dependencies", []) or []]
    extras = project.get("optional-dependencies", {})
    if isinstance(extras, dict):
        lines += [str(item) for group in extras.values() if isinstance(group, list) for item in group]
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) if isinstance(data.get("tool"), dict) \
        else {}
    if isinstance(poetry, dict) and "torch" in poetry:
        spec = poetry["torch"]
        spec = spec.get("version", "") if isinstance(spec, dict) else str(spec)
        lines.append("torch" + spec.replace("^", ">=").replace("~", ">=") if spec and spec[0] in "^~" else
                     "torch" + (spec if spec[:1] in "<>=!" else f"=={spec}"))
    return "\n".join(lines)


PROJECT_OPTIONS = "project"  # the key of project-wide settings in the options rules receive


def of_file(ctx) -> TorchSupport | None:
    """`torch_support` for the checked file, once per file; the metadata file read becomes a
    dependency of the file's cached result (editing the requirements re-checks it)."""
    if "torch_support" not in ctx.memo:
        setting = ctx.options.get(PROJECT_OPTIONS, {}).get(CONFIG_KEY)
        found = ctx.memo["torch_support"] = torch_support(ctx.file, setting)
        if found is not None and ctx.file is not None and not found.source.startswith("["):
            try:
                ctx.deps[found.source] = content_key(Path(found.source).read_bytes())
            except OSError:
                pass
    return ctx.memo["torch_support"]
