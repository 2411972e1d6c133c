"""Content-hash cache: unchanged files cost one read and one hash on the next run."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from torchlint import __version__

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by torchlint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
MAX_ENTRIES = 50_000


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """A stamp of torchlint's own modules (names, sizes, modification times): an edited checkout
    with the same version number does not reuse findings of the code before the edit."""
    package = Path(__file__).resolve().parents[1]
    parts = []
    for file in sorted(package.rglob("*.py")):
        try:
            stat = file.stat()
        except OSError:
            continue
        parts.append(f"{file.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return content_key("\n".join(parts).encode())[:12]


MODULES = "__modules__"  # the section holding each project module's fact fingerprints


class Cache:
    """One JSON file per (torchlint version, settings fingerprint):
    {hash of content and path: {"findings": [...], "deps": {module path: content hash}},
     "__modules__": {module path: {"hash": content hash, "names": {name: fact fingerprint}}}}.
    An entry is used while every project module it read still has the recorded content, or has new
    content whose summary gives every recorded name the same facts (an edit importers cannot see)."""

    def __init__(self, folder: Path, fingerprint: str,
                 facts_of: Callable[[str], tuple[str, dict[str, str]] | None] | None = None) -> None:
        """`facts_of(path)`: a module's current (content hash, name fingerprints), summarised anew."""
        self.facts_of = facts_of
        self.folder = folder
        self.fingerprint = fingerprint
        self.file = folder / f"v{__version__}-{code_stamp()}-{fingerprint}.json"
        self.entries: dict[str, dict] = {}
        self.dirty = False
        self.hashes: dict[str, str | None] = {}  # dependency path -> current content hash, this run
        self.same_facts: dict[str, bool] = {}  # changed dependency -> its recorded names kept their facts
        try:
            self.entries = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}
        modules = self.entries.pop(MODULES, None) if isinstance(self.entries, dict) else None
        if not isinstance(self.entries, dict):
            self.entries = {}
        self.modules: dict[str, dict] = modules if isinstance(modules, dict) else {}

    def get(self, key: str) -> list[dict] | None:
        entry = self.entries.get(key)
        if not isinstance(entry, dict):
            return None
        deps = entry.get("deps", {})
        for path, recorded in deps.items():
            current = self._hash(path)
            if current != recorded:
                if current is None or not self._same_facts(path):
                    return None  # a module it imports changed what it exports: analyse again
                deps[path] = current  # the next run takes the fast path
                self.dirty = True
        return entry.get("findings")

    def note_modules(self, modules: dict[str, dict]) -> None:
        """Record the fact fingerprints of the project modules an analysis read."""
        for path, record in modules.items():
            if self.modules.get(path) != record:
                self.modules[path] = record
                self.dirty = True

    def _same_facts(self, path: str) -> bool:
        """`path` changed since its facts were recorded: summarise it again and compare every name
        recorded then (a name added since cannot be what an importer used)."""
        if path not in self.same_facts:
            self.same_facts[path] = self._compare(path)
        return self.same_facts[path]

    def _compare(self, path: str) -> bool:
        record = self.modules.get(path)
        if self.facts_of is None or not isinstance(record, dict) or not isinstance(record.get("names"), dict):
            return False
        current = self.facts_of(path)
        if current is None or current[0] != self._hash(path):
            return False
        key, now = current
        if any(now.get(name) != fingerprint for name, fingerprint in record["names"].items()):
            return False
        if any(name.startswith("<") and name not in record["names"] for name in now):
            return False  # it now builds a DataLoader or saves a checkpoint: other files may care
        self.modules[path] = {"hash": key, "names": now}
        self.dirty = True
        return True

    def put(self, key: str, findings: list[dict], deps: dict[str, str] | None = None) -> None:
        self.entries[key] = {"findings": findings, "deps": deps or {}}
        self.dirty = True

    def _hash(self, path: str) -> str | None:
        if path not in self.hashes:
            try:
                self.hashes[path] = content_key(Path(path).read_bytes())
            except OSError:
                self.hashes[path] = None
        return self.hashes[path]

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tag = self.folder / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(CACHEDIR_TAG, encoding="utf-8")
            gitignore = self.folder / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n", encoding="utf-8")
            if len(self.entries) > MAX_ENTRIES:
                self.entries = dict(list(self.entries.items())[-MAX_ENTRIES:])
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({**self.entries, MODULES: self.modules}, out, separators=(",", ":"))
            os.replace(temporary, self.file)
            for stale in self.folder.glob(f"v*-{self.fingerprint}.json"):
                if stale != self.file:  # the same settings under an older torchlint
                    stale.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only tree still gets its findings, just no cache
