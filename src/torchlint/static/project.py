"""The project a file belongs to: imports between its modules resolve to what those modules define.

A file's ``from .models import Net`` or ``from utils import AverageMeter`` is looked up among the
project's own files (relative to the importing file, the folder holding its package, the project
root and ``root/src``). The imported module is walked once, without rules, and its module-level
names (classes with their methods' return facts and training actions, functions with their
returns, aliases) are what the importer sees. Summaries are kept per process, keyed by path, size
and modification time; every module consulted for a file is recorded with its content hash so the
findings cache can tell when a dependency changed. A dataset's module can also ask which project
files build a DataLoader over one of its classes (``loaders_of``: the files mentioning the class,
summarised the same way).
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from torchlint.source import SourceError, decode_source
from torchlint.static.cache import content_key
from torchlint.static.compact import share_tokens
from torchlint.static.facts.values import NOTHING, Value
from torchlint.static.fingerprint import (
    CALLS_KEY,
    FP16_KEY,
    LOADERS_KEY,
    SAVES_KEY,
    TRAINS_KEY,
    calls_fingerprint,
    loaders_fingerprint,
    name_fingerprints,
    saves_fingerprint,
)
from torchlint.static.importers import ImportIndex, resolved
from torchlint.static.parsing import parse_module

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
MAX_MODULE_BYTES = 2_000_000  # generated files are not summarised
MAX_SUMMARIES = 256  # summaries kept per process: bounds memory on big trees (the torch package)
# past this many summaries every held tree's tokens are shared (compact.py), those held before included
# (the first ones, the closure of a package's ``__init__``, are used throughout): at ~40% of a parse per
# summary, a cost small projects do not pay
SHARE_AFTER = 64


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
    loaders: list = field(default_factory=list)  # loaders.LoaderUse: the DataLoaders it builds
    calls_out: dict = field(default_factory=dict)  # module path -> qualname -> the calls it makes there
    fp16: Any = None  # the call that autocasts to float16, builds a GradScaler or makes a model .half()
    seeding: Any = None  # seeding.SeedingUse: the global generators it seeds and draws from
    shared: bool = False  # its tree's tokens are shared (compact.share_tokens)
    aliases: dict[str, str] = field(default_factory=dict)  # its imports: local name -> module (`torch`)
    trains: bool = False  # its text calls backward/step/fit/train (grad_mode.TRAINS)
    _fingerprints: dict[str, str] | None = None

    def fingerprints(self) -> dict[str, str]:
        """Exported name -> fingerprint of its facts (computed once); its refused saves under one more key."""
        if self._fingerprints is None:
            self._fingerprints = name_fingerprints(self.env)
            if self.checkpoints:
                self._fingerprints[SAVES_KEY] = saves_fingerprint(self.checkpoints)
            if self.loaders:
                self._fingerprints[LOADERS_KEY] = loaders_fingerprint(self.loaders)
            if self.calls_out:
                self._fingerprints[CALLS_KEY] = calls_fingerprint(self.calls_out)
            if self.fp16 is not None:
                self._fingerprints[FP16_KEY] = "1"
            if self.trains:
                self._fingerprints[TRAINS_KEY] = "1"
        return self._fingerprints


@dataclass
class Project:
    """Module summaries shared by every file checked in this process."""

    # least recently used first: past MAX_SUMMARIES the oldest is dropped (and computed again if asked)
    summaries: OrderedDict[tuple[str, int, int], Summary | None] = field(default_factory=OrderedDict)
    active: set[str] = field(default_factory=set)  # summaries being computed (import cycles)
    latest: dict[str, Summary] = field(default_factory=dict)  # path -> its newest summary
    loader_files: dict[str, list[Path]] = field(default_factory=dict)  # root -> files that mention DataLoader
    imports: dict[str, ImportIndex] = field(default_factory=dict)  # root -> who imports which module
    resolved: dict[tuple, Path | None] = field(default_factory=dict)  # (folder, module, level) -> file
    # path -> (size, mtime) and the calls it makes to other modules, from its own check in this process
    calls_seen: OrderedDict[str, tuple[tuple[int, int], dict, dict]] = field(default_factory=OrderedDict)

    def forget_layout(self) -> None:
        """Files were added, removed or edited (a long-lived process: the language server): import
        resolutions and the reverse-import and DataLoader indexes are built again when next asked."""
        self.resolved.clear()
        self.imports.clear()
        self.loader_files.clear()

    def resolve(self, importer: Path, module: str | None, level: int) -> Path | None:
        """The project file that `from <level dots><module> import ...` in ``importer`` names
        (the answer depends on the importer's folder only: cached per folder)."""
        key = (os.path.abspath(importer.parent), module, level)
        found = self.resolved.get(key, False)
        if found is False:
            if len(self.resolved) > 100_000:
                self.resolved.clear()
            found = self.resolved[key] = self._resolve(importer, module, level)
        return found

    def _resolve(self, importer: Path, module: str | None, level: int) -> Path | None:
        parts = module.split(".") if module else []
        if level:
            base = importer.resolve().parent
            for _ in range(level - 1):
                base = base.parent
            return _module_file(base, parts)
        if not parts:
            return None
        root = find_root(importer)
        for base in dict.fromkeys((*_folders_up_to(importer.resolve().parent, root), root / "src")):
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
            self.summaries.move_to_end(token)
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
        if len(self.summaries) >= SHARE_AFTER:
            self._share_held()
        while len(self.summaries) > MAX_SUMMARIES:
            (old, _, _), dropped = self.summaries.popitem(last=False)
            if dropped is not None and self.latest.get(old) is dropped:
                del self.latest[old]
        return result

    def _share_held(self) -> None:
        """Share the tokens of the held trees not shared yet (tokens are never what the analysis
        points at: sharing them after the walk changes nothing it found)."""
        for summary in self.summaries.values():
            if summary is not None and not summary.shared and summary.module is not None:
                share_tokens(summary.module)
                summary.shared = True

    def _summarise(self, path: Path) -> Summary | None:
        from torchlint.static.interpret import checkpoints
        from torchlint.static.interpret.callsites import CallSites
        from torchlint.static.interpret.context import FileContext  # the walker imports this module
        from torchlint.static.interpret.grad_mode import TRAINS
        from torchlint.static.interpret.loaders import loader_uses
        from torchlint.static.interpret.mixed_precision import fp16_evidence
        from torchlint.static.interpret.seeding import seeding_use
        from torchlint.static.interpret.walker import Walker

        try:
            data = path.read_bytes()
            text = decode_source(data).text
            module = parse_module(text)
            shared = len(self.summaries) >= SHARE_AFTER  # held while the summary is: kept small on big trees
            if shared:
                module = share_tokens(module)
        except (OSError, SourceError, cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
            return None
        sites = CallSites(str(path))
        ctx = FileContext(path=str(path), source="", module=module, options={}, project=self, file=path,
                          call_sites=sites)
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
        return Summary(path, deps[str(path)], dict(walker.frame.env), deps, module=module, checkpoints=saved,
                       loaders=loader_uses(ctx), calls_out=sites.foreign, fp16=fp16_evidence(ctx),
                       seeding=seeding_use(ctx), shared=shared, aliases=dict(ctx.aliases),
                       trains=TRAINS.search(data) is not None)

    def module_of(self, path: str) -> cst.Module | None:
        """The syntax tree a summarised module was read from (for positions in it)."""
        summary = self.summary_at(path)
        return summary.module if summary is not None else None

    def summary_at(self, path: str) -> Summary | None:
        """The summary already computed in this process for the module at `path`, if any."""
        return self.latest.get(path)

    def loaders_of(self, file: Path, class_name: str, deps: dict[str, str]) -> list:
        """The DataLoaders other project files build over the class ``class_name`` that ``file``
        defines (or a subclass of it), found through their imports. The files that mention the class
        are recorded in ``deps``; a file added later is not seen by a cached result."""
        target = (str(file.resolve()), class_name)
        found = []
        needle = class_name.encode()
        for path in self._loader_files(find_root(file)):
            if path == file.resolve():
                continue
            try:
                if needle not in path.read_bytes():
                    continue
            except OSError:
                continue
            summary = self.summary(path)
            if summary is None:
                continue
            deps.update(summary.deps)  # a change there (num_workers, worker_init_fn) re-checks ``file``
            for use in summary.loaders:
                if any((resolved(info.module), info.name) == target for cls in use.datasets for info in cls.lineage()):
                    found.append(use)
        return found

    def importers(self, file: Path) -> list[str] | None:
        """The project files importing ``file`` (see importers.ImportIndex.of)."""
        root = find_root(file)
        index = self.imports.get(str(root))
        if index is None:
            index = self.imports[str(root)] = ImportIndex(_python_files(root), self.resolve)
        return index.of(file.resolve())

    def importer_where(self, file: Path, deps: dict[str, str], test, levels: int = 3) -> Path | None:
        """The nearest project file importing ``file`` (through at most ``levels`` imports) whose
        summary passes ``test``; the files read are recorded in ``deps``."""
        frontier, seen = [str(file.resolve())], {str(file.resolve())}
        for _ in range(levels):
            following = []
            for module in frontier:
                for importer in self.importers(Path(module)) or ():
                    if importer in seen:
                        continue
                    seen.add(importer)
                    summary = self.summary(Path(importer))
                    if summary is None:
                        continue
                    deps[importer] = summary.key
                    if test(summary):
                        return Path(importer)
                    following.append(importer)
            frontier = following
        return None

    def note_calls(self, file: Path, calls_out: dict, deps: dict[str, str]) -> None:
        """The calls a checked file makes to other modules (from a walk without parameter facts, the
        one its summary would make): its importees' checks read them instead of summarising it."""
        try:
            stat = file.stat()
        except OSError:
            return
        key = resolved(str(file))
        self.calls_seen[key] = ((stat.st_size, stat.st_mtime_ns), calls_out, dict(deps))
        self.calls_seen.move_to_end(key)
        while len(self.calls_seen) > 2 * MAX_SUMMARIES:
            self.calls_seen.popitem(last=False)

    def _calls_out(self, path: Path, data: bytes, deps: dict[str, str]) -> dict | None:
        """What the project file ``path`` (content ``data``) passes to other modules' functions."""
        try:
            stat = path.stat()
        except OSError:
            return None
        seen = self.calls_seen.get(str(path))
        if seen is not None and seen[0] == (stat.st_size, stat.st_mtime_ns):
            deps.update(seen[2])
            deps[str(path)] = content_key(data)
            return seen[1]
        summary = self.summary(path)
        if summary is None:
            return None
        deps.update(summary.deps)
        return summary.calls_out

    def callers_of(self, file: Path, names: list[str], deps: dict[str, str],
                   methods: dict[str, str] | None = None) -> dict[str, list] | None:
        """The calls other project files make to the functions and methods ``file`` defines, by
        qualified name (callsites.Record); None when they cannot all be seen (too many importers).
        Only importers that mention one of ``names`` (what the file defines) are summarised; each
        one read is recorded in ``deps``. A method of ``methods`` (qualified name -> method name)
        that no importer calls through a known receiver gets the importers' calls of a method of
        that name on a receiver they do not know (`unit.load_from(w)` under `torch.no_grad()`)."""
        from torchlint.static.interpret.callsites import BY_NAME

        module = file.resolve()
        importers = self.importers(file)
        if importers is None:
            return None
        needles = [name.encode() for name in names]
        found: dict[str, list] = {}
        by_name: dict[str, list] = {}
        for importer in importers:
            path = Path(importer)
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if not any(needle in data for needle in needles):
                continue
            calls_out = self._calls_out(path, data, deps)
            if calls_out is None:
                return None  # a caller we cannot read: its calls are unknown
            for qualname, records in calls_out.get(str(module), {}).items():
                found.setdefault(qualname, []).extend(_written_in(record, importer) for record in records)
            for qualname, name in (methods or {}).items():
                unknown = calls_out.get(BY_NAME, {}).get(name)
                if unknown:
                    by_name.setdefault(qualname, []).extend(unknown)
        for qualname, records in by_name.items():
            if qualname not in found:
                found[qualname] = records
        return found

    def _loader_files(self, root: Path) -> list[Path]:
        key = str(root)
        if key not in self.loader_files:
            files = []
            for path in _python_files(root):
                try:
                    if path.stat().st_size <= MAX_MODULE_BYTES and b"DataLoader" in path.read_bytes():
                        files.append(path)
                except OSError:
                    continue
            self.loader_files[key] = files
        return self.loader_files[key]

    def names(self, importer: Path, module: str | None, level: int, names: list[str] | None,
              deps: dict[str, str]) -> dict[str, Value]:
        """What `from module import names` (None: `*`) binds, for the names the project defines."""
        path = self.resolve(importer, module, level)
        if path is None:
            return {}
        summary = self.summary(path)
        if summary is None:
            if str(path) in self.active and path.name == "__init__.py" and names:
                return self._reexported(path, names, deps)
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


    def star_aliases(self, importer: Path, module: str | None, level: int, deps: dict[str, str]) -> dict[str, str]:
        """The imports `from module import *` re-binds: the module's own `import torch` and the like."""
        path = self.resolve(importer, module, level)
        summary = self.summary(path) if path is not None else None
        if summary is None:
            return {}
        deps.update(summary.deps)
        return {k: v for k, v in summary.aliases.items() if not k.startswith("_")}

    def _reexported(self, package: Path, names: list[str], deps: dict[str, str]) -> dict[str, Value]:
        """`from pkg import Name` in a module that `pkg/__init__.py` is importing (an import cycle, as
        Python runs it): the names the package had bound from its other modules (`from .base import
        Name`), read from those modules directly."""
        try:
            stat = package.stat()
        except OSError:
            return {}
        bound: dict[str, Value] = {}
        for module, level, name, local in _import_froms(str(package), stat.st_size, stat.st_mtime_ns):
            if local in names and local not in bound:
                found = self.names(package, module, level, [name], deps)
                if name in found:
                    bound[local] = found[name]
        return bound


@lru_cache(maxsize=256)
def _import_froms(path: str, size: int, mtime_ns: int) -> tuple[tuple[str | None, int, str, str], ...]:
    """(module, level, name, local name) of each module-level `from module import name [as local]`
    of a file, read once per version of it (size and mtime are the cache key)."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((statement.module, statement.level, alias.name, alias.asname or alias.name)
                 for statement in tree.body if isinstance(statement, ast.ImportFrom) for alias in statement.names)


def _folders_up_to(folder: Path, root: Path) -> list[Path]:
    """``folder``, and the folder that holds the package ``folder`` belongs to when it is inside
    ``root``: a script there imports the package's siblings (``datasets/hdf5.py`` doing
    ``from augment import ...`` runs from a ``train.py`` beside ``datasets/``). Installed packages
    (site-packages) are never searched."""
    found = [folder]
    top = folder
    while (top / "__init__.py").is_file() and top != root and root in top.parents:
        top = top.parent
    if top != folder and top != root and top.name not in ("site-packages", "dist-packages"):
        found.append(top)
    found.append(root)
    return found


MAX_PROJECT_FILES = 5000
_SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env", "build", "dist"})


def _python_files(root: Path) -> list[Path]:
    """The project's Python files (hidden folders, environments and build outputs left out), capped."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        for name in sorted(names):
            if name.endswith(".py"):
                try:
                    found.append(Path(folder, name).resolve())
                except (OSError, RuntimeError):  # a symlink loop
                    continue
        if len(found) >= MAX_PROJECT_FILES:
            return found[:MAX_PROJECT_FILES]
    return found


def _module_file(base: Path, parts: list[str]) -> Path | None:
    target = base.joinpath(*parts) if parts else base
    for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


PROCESS_PROJECT = Project()


def _written_in(record: tuple, path: str) -> tuple:
    """A call record of another file, its argument values marked with that file (where their
    nodes are): a finding can then point at the caller's expression."""
    bound, args, kwargs, *rest = record

    def mark(value: Value) -> Value:
        return value.but(origin=path) if value.node is not None and not value.origin and not value.kind else value

    return (bound, tuple(mark(v) for v in args), {k: mark(v) for k, v in kwargs.items()}, *rest)
