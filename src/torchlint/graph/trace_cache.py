"""A second `torchlint trace` of an unchanged model answers from a cache, without building it.

An entry is keyed by what the command was asked (target, inputs, constructor arguments, dims,
optimizer, output format, working folder) and by the versions of torchlint, torch and transformers.
It records every file the first trace read while importing, building and tracing the model: the
Python modules it imported (``sys.modules``) and any other file it opened (a ``config.json``, a
YAML file the factory reads; seen through an audit hook). The entry is used only while each of
those files has the same content (files outside the interpreter's own folders: the user's
project) or the same size and modification time (the installed packages). Entries live in
``.torchlint_cache/trace/`` of the working folder; ``--no-cache`` neither reads nor writes them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from torchlint import __version__
from torchlint.static.cache import CACHEDIR_TAG, code_stamp, content_key

FOLDER = Path(".torchlint_cache") / "trace"
_INTERPRETER = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def entry_key(request: dict) -> str:
    """The key of one trace request (a dict of the options that shape its output)."""
    stamp = {"request": request, "cwd": os.getcwd(), "torchlint": f"{__version__}-{code_stamp()}",
             "torch": _version("torch"), "transformers": _version("transformers")}
    return hashlib.blake2b(json.dumps(stamp, sort_keys=True).encode(), digest_size=16).hexdigest()


class Reads:
    """The files read while the block of ``recording()`` ran: modules imported and files opened."""

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.before: set[str] = set()

    @contextmanager
    def recording(self):
        global _recording
        self.before = set(sys.modules)
        if not _hooked:
            _hook()
        _recording = self
        try:
            yield self
        finally:
            _recording = None

    def files(self) -> list[str]:
        found = set(self.opened)
        for name in set(sys.modules) - self.before:
            path = getattr(sys.modules.get(name), "__file__", None)
            if isinstance(path, str):
                found.add(path)
        real = {os.path.realpath(p) for p in found}
        return sorted(p for p in real if not p.startswith(_VOLATILE) and os.path.isfile(p))


_recording: Reads | None = None  # the recorder the audit hook feeds, while one records
_hooked = False
_VOLATILE = ("/proc/", "/sys/", "/dev/")  # their sizes and times change on every read


def _hook() -> None:
    """One audit hook per process (hooks cannot be removed); it feeds whichever recorder is recording."""
    global _hooked

    def hook(event: str, args: tuple) -> None:
        reads = _recording
        if event == "open" and reads is not None:
            path, mode, flags = args
            reading = "r" in mode and "+" not in mode if isinstance(mode, str) else \
                not (flags or 0) & (os.O_WRONLY | os.O_RDWR)
            if reading and isinstance(path, (str, bytes, os.PathLike)):
                reads.opened.add(os.fsdecode(path))

    sys.addaudithook(hook)
    _hooked = True


def _own(path: str) -> bool:
    """A file of the user's (not of the interpreter's installation): checked by content."""
    return not path.startswith(_INTERPRETER)


def _fingerprint(path: str) -> list | None:
    try:
        stat = os.stat(path)
        digest = content_key(Path(path).read_bytes()) if _own(path) else None
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, digest]


def _unchanged(path: str, recorded: list) -> bool:
    size, mtime, digest = recorded
    try:
        if digest is not None:  # the user's file: its content decides (an edit can keep size and time)
            return content_key(Path(path).read_bytes()) == digest
        stat = os.stat(path)
        return stat.st_size == size and stat.st_mtime_ns == mtime
    except OSError:
        return False


def load(key: str) -> tuple[str, int] | None:
    """The cached (report text, exit status) of ``key``, when every file it read is unchanged."""
    try:
        entry = json.loads((FOLDER / f"{key}.json").read_text(encoding="utf-8"))
        files, text, status = entry["files"], entry["text"], entry["status"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(_unchanged(path, recorded) for path, recorded in files.items()):
        return None
    return text, status


def store(key: str, reads: Reads, text: str, status: int) -> None:
    """Write the entry (best effort: a folder that cannot be written only means no cache)."""
    files = {}
    for path in reads.files():
        recorded = _fingerprint(path)
        if recorded is None:
            return  # a file that vanished: nothing reliable to key on
        files[path] = recorded
    try:
        FOLDER.mkdir(parents=True, exist_ok=True)
        tag = FOLDER.parent / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(CACHEDIR_TAG, encoding="utf-8")
        with tempfile.NamedTemporaryFile("w", dir=FOLDER, suffix=".tmp", delete=False, encoding="utf-8") as handle:
            json.dump({"files": files, "text": text, "status": status}, handle)
        os.replace(handle.name, FOLDER / f"{key}.json")
    except OSError:
        return
