"""The project a file belongs to: imports between its modules resolve to what those modules define.

A file's ``from .models import Net`` or ``from utils import AverageMeter`` is looked up among the
project's own files (relative to the importing file, the project root and ``root/src``). The
imported module is walked once, without rules, and its module-level names (classes with their
methods' return facts and training actions, functions with their returns, aliases) are what the
importer sees. Summaries are kept per process, keyed by path, size and modification time; every
module consulted for a file is recorded with its content hash so the findings cache can tell when
a dependency changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import libcst as cst

from torchlint.source import SourceError, decode_source
from torchlint.static.cache import content_key
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.fingerprint import SAVES_KEY, name_fingerprints, saves_fingerprint

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
MAX_MODULE_BYTES = 2_000_000  # generated files are not summarised


def find_root(file: Path) -> Path:
    """The nearest folder above ``file`` holding a project marker, else the file's folder."""
    return _root_of(file.resolve().parent)


@lru_cache(maxsize=1024)
def _root_of(start: Path) -> Path:
    """Cached per folder: every import of every file in it asks the same question."""
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return start


@dataclass
class Summary:
    path: Path
    key: str  # content hash
    env: dict[str, Value]
    deps: dict[str, str]  # every project module its summary read, with content hashes
    module: cst.Module | None = None  # its syntax tree: positions of related locations in it
    checkpoints: tuple = ()  # checkpoints.Saved: its torch.save calls of objects weights-only loads refuse
    _fingerprints: dict[str, str] | None = None

    def fingerprints(self) -> dict[str, str]:
        """Exported name -> fingerprint of its facts (computed once); its refused saves under one more key."""
        if self._fingerprints is None:
            self._fingerprints = name_fingerprints(self.env)
            if self.checkpoints:
                self._fingerprints[SAVES_KEY] = saves_fingerprint(self.checkpoints)
        return self._fingerprints


@dataclass
class Project:
    """Module summaries shared by every file checked in this process."""

    summaries: dict[tuple[str, int, int], Summary | None] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)  # summaries being computed (import cycles)
    latest: dict[str, Summary] = field(default_factory=dict)  # path -> its newest summary

    def resolve(self, importer: Path, module: str | None, level: int) -> Path | None:
        """The project file that `from <level dots><module> import ...` in ``importer`` names."""
        parts = module.split(".") if module else []
        if level:
            base = importer.resolve().parent
            for _ in range(level - 1):
                base = base.parent
            return _module_file(base, parts)
        if not parts:
            return None
        root = find_root(importer)
        for base in dict.fromkeys((importer.resolve().parent, root, root / "src")):
            found = _module_file(base, parts)
            if found is not None:
                return found
        return None

    def summary(self, path: Path) -> Summary | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        token = (str(path), stat.st_size, stat.st_mtime_ns)
        if token in self.summaries:
            return self.summaries[token]
        if str(path) in self.active or stat.st_size > MAX_MODULE_BYTES:
            return None  # an import cycle: the module in progress is unknown to its importer
        self.active.add(str(path))
        try:
            result = self._summarise(path)
        finally:
            self.active.discard(str(path))
        self.summaries[token] = result
        if result is not None:
            self.latest[str(path)] = result
        return result

    def _summarise(self, path: Path) -> Summary | None:
        from torchlint.static.interpret import checkpoints
        from torchlint.static.interpret.context import FileContext  # the walker imports this module
        from torchlint.static.interpret.walker import Walker

        try:
            data = path.read_bytes()
            text = decode_source(data).text
            module = cst.parse_module(text)
        except (OSError, SourceError, cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
            return None
        ctx = FileContext(path=str(path), source="", module=module, options={}, project=self, file=path)
        walker = Walker(ctx, ((), (), (), (), ()))
        try:
            walker.run(module)
            saved = checkpoints.summarise(ctx, module, path) if "save" in text else ()
        except Exception:  # a module we cannot summarise is unknown, not an error of the importer
            if os.environ.get("TORCHLINT_STRICT"):
                raise
            return None
        deps = dict(ctx.deps)
        deps[str(path)] = content_key(data)
        return Summary(path, deps[str(path)], dict(walker.frame.env), deps, module=module, checkpoints=saved)

    def module_of(self, path: str) -> cst.Module | None:
        """The syntax tree a summarised module was read from (for positions in it)."""
        summary = self.summary_at(path)
        return summary.module if summary is not None else None

    def summary_at(self, path: str) -> Summary | None:
        """The summary already computed in this process for the module at `path`, if any."""
        return self.latest.get(path)

    def names(self, importer: Path, module: str | None, level: int, names: list[str] | None,
              deps: dict[str, str]) -> dict[str, Value]:
        """What `from module import names` (None: `*`) binds, for the names the project defines."""
        path = self.resolve(importer, module, level)
        if path is None:
            return {}
        summary = self.summary(path)
        if summary is None:
            return {}
        deps.update(summary.deps)
        env = summary.env
        if names is None:
            return {k: v for k, v in env.items() if not k.startswith("_") and v is not NOTHING}
        bound = {}
        for name in names:
            value = env.get(name)
            if value is None and path.name == "__init__.py":  # `from pkg import submodule`
                continue
            if value is not None and value is not NOTHING:
                bound[name] = value
        return bound


def _module_file(base: Path, parts: list[str]) -> Path | None:
    target = base.joinpath(*parts) if parts else base
    for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


PROCESS_PROJECT = Project()
