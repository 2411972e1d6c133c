"""The Python API used by the CLI, the tests and the later depths."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from torchlint.catalog import UNREADABLE_FILE
from torchlint.config import Settings, human_size
from torchlint.finding import FileResult, Finding
from torchlint.source import SourceError, decode_source
from torchlint.static.cache import Cache, content_key
from torchlint.static.discovery import discover, relative_to_root
from torchlint.static.engine import might_have_findings
from torchlint.static.importers import MAX_IMPORTERS
from torchlint.static.notebook import is_notebook
from torchlint.static.notebook_check import check_any
from torchlint.static.project import PROCESS_PROJECT
from torchlint.static.suppress import is_ignored

POOL_THRESHOLD = 8  # fewer files than this to parse: a process pool costs more than it saves


def check_source(source: str, path: str = "<string>", settings: Settings | None = None) -> list[Finding]:
    """Lint one file's text; a path ending in .ipynb reads it as a notebook's JSON."""
    settings = settings or Settings()
    findings = check_any(source, path, settings.enabled(), settings.options)
    return _apply_per_file_ignores(findings, path, settings)


def check_paths(
    paths: Iterable[str | os.PathLike[str]],
    settings: Settings | None = None,
    jobs: int = 1,
    cache: bool = False,
) -> list[Finding]:
    return [f for result in check_files(paths, settings, jobs, cache) for f in result.findings]


def check_files(
    paths: Iterable[str | os.PathLike[str]],
    settings: Settings | None = None,
    jobs: int = 1,
    cache: bool = False,
    force_exclude: bool = False,
) -> list[FileResult]:
    """Lint files and directories; results come back in discovery order whatever the job count."""
    settings = settings or Settings()
    files = discover([Path(p) for p in paths], settings, force_exclude)
    enabled = settings.enabled()
    store = Cache(settings.root / ".torchlint_cache", settings.fingerprint(), _facts_of) if cache else None

    results: list[FileResult | None] = [None] * len(files)
    # index, display path, cache key, file: the text is read again when the file is checked (holding every
    # file's text until then costs as much memory as the sources: 50 MB for the torch package)
    todo: list[tuple[int, str, str | None, Path]] = []
    for index, file in enumerate(files):
        display = _display(file)
        try:
            size = file.stat().st_size
            if settings.max_file_size and size > settings.max_file_size:
                results[index] = FileResult(display, [], skipped=(
                    f"{human_size(size)} is over max-file-size ({human_size(settings.max_file_size)})"))
                continue
            data = file.read_bytes()
        except OSError as error:
            reason = "symlink loop" if error.errno == errno.ELOOP else error.strerror or str(error)
            results[index] = _unreadable(display, reason, enabled)
            continue
        # the key covers the path too: which project modules an import reaches depends on it
        key = content_key(data + b"\0" + str(file.resolve()).encode()) if store is not None else None
        if key is not None:
            hit = store.get(key)
            if hit is not None:
                results[index] = FileResult(display, [Finding.from_dict(f).with_path(display) for f in hit])
                continue
        try:
            text = decode_source(data).text
        except SourceError as error:
            results[index] = _unreadable(display, error.reason, enabled, error.line, error.column)
            continue
        if not is_notebook(display) and not might_have_findings(text):  # a notebook is read as JSON first
            results[index] = FileResult(display, [])
            if store is not None:
                store.put(key, [])
            continue
        todo.append((index, display, key, file))

    if len(todo) > 1:  # entry points first: the calls they make are then known when their modules are checked
        todo.sort(key=lambda job: _importer_count(job[3]))
    keep = store is not None  # the modules' fact fingerprints are only for the cache
    workers = min(jobs, len(todo)) if jobs > 1 and len(todo) >= POOL_THRESHOLD else 1
    if workers > 1:
        chunk = max(1, len(todo) // (workers * 8))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            outputs = list(pool.map(_check_one, [(t[1], enabled, settings.options, t[3], keep) for t in todo],
                                    chunksize=chunk))
    else:
        outputs = [_check_one((t[1], enabled, settings.options, t[3], keep)) for t in todo]

    for (index, display, key, _file), (findings, deps, modules) in zip(todo, outputs, strict=True):
        if store is not None:
            store.put(key, [f.to_dict() for f in findings], deps)
            store.note_modules(modules)
        results[index] = FileResult(display, findings)
    if store is not None:
        store.save()

    final = []
    for file, result in zip(files, results, strict=True):
        assert result is not None
        result.findings = _apply_per_file_ignores(result.findings, relative_to_root(file, settings), settings)
        final.append(result)
    return final


def _facts_of(path: str) -> tuple[str, dict[str, str]] | None:
    summary = PROCESS_PROJECT.summary(Path(path))
    return (summary.key, summary.fingerprints()) if summary is not None else None


_SENT: set[tuple[str, str]] = set()  # modules whose fingerprints this process already returned


def _importer_count(file: Path) -> int:
    if file.suffix != ".py":
        return 0
    try:
        importers = PROCESS_PROJECT.importers(file)
    except (OSError, RuntimeError, ValueError):
        return 0
    return len(importers) if importers is not None else MAX_IMPORTERS + 1


def _check_one(job):
    path, enabled, options, file, keep = job
    try:
        text = decode_source(file.read_bytes()).text
    except (OSError, SourceError) as error:  # changed since it was first read
        reason = error.reason if isinstance(error, SourceError) else error.strerror or str(error)
        return _unreadable(path, reason, enabled).findings, {}, {}
    deps: dict[str, str] = {}
    findings = check_any(text, path, enabled, options, file=file, deps=deps)
    modules = {}
    for dep, content in deps.items() if keep else ():
        summary = PROCESS_PROJECT.summary_at(dep)
        if summary is not None and (dep, content) not in _SENT and summary.key == content:
            _SENT.add((dep, content))
            modules[dep] = {"hash": content, "names": summary.fingerprints()}
    return findings, deps, modules


def _display(file: Path) -> str:
    text = file.as_posix()
    return text[2:] if text.startswith("./") else text


def _unreadable(path: str, reason: str, enabled: frozenset[str], line: int = 1, column: int = 1) -> FileResult:
    if UNREADABLE_FILE.code not in enabled:
        return FileResult(path, [])
    finding = Finding(
        code=UNREADABLE_FILE.code, name=UNREADABLE_FILE.name, severity=UNREADABLE_FILE.severity,
        message=f"cannot read file: {reason}", path=path, line=line, column=column, end_line=line,
        end_column=column, help=UNREADABLE_FILE.summary,
    )
    return FileResult(path, [finding])


def _apply_per_file_ignores(findings: list[Finding], relative: str, settings: Settings) -> list[Finding]:
    if not settings.per_file_ignores or not findings:
        return findings
    ignored = set(settings.ignored_for(relative))
    return [f for f in findings if not is_ignored(f.code, ignored)]
