"""Content-hash cache: unchanged files cost one read and one hash on the next run."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
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


class Cache:
    """One JSON file per (torchlint version, settings fingerprint): {content hash: findings}."""

    def __init__(self, folder: Path, fingerprint: str) -> None:
        self.folder = folder
        self.file = folder / f"v{__version__}-{fingerprint}.json"
        self.entries: dict[str, list[dict]] = {}
        self.dirty = False
        try:
            self.entries = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}

    def get(self, key: str) -> list[dict] | None:
        return self.entries.get(key)

    def put(self, key: str, findings: list[dict]) -> None:
        self.entries[key] = findings
        self.dirty = True

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
                json.dump(self.entries, out, separators=(",", ":"))
            os.replace(temporary, self.file)
        except OSError:
            pass  # a read-only tree still gets its findings, just no cache
