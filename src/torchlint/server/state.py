"""The server's view of the open documents: what to check, what was published, what is current."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pygls.lsp.server import LanguageServer

from torchlint.config import Settings
from torchlint.server.comment_edit import CommentColumns, only_comments_differ
from torchlint.server.documents import (
    CODE_CELL,
    CellText,
    Checked,
    check_notebook_document,
    check_text_document,
    path_of,
)
from torchlint.server.settings import SettingsStore

PYTHON_SUFFIXES = (".py", ".pyi")
ENGINE_LOCK = threading.Lock()  # one check at a time: the engine pauses the process-wide GC while it runs

Key = tuple[str, str]  # ("text" | "notebook", uri)


def is_python(uri: str, language_id: str | None) -> bool:
    if language_id:
        return language_id == "python"
    return uri.lower().endswith(PYTHON_SUFFIXES)


def locked(job: Callable[[], Any]) -> Any:
    with ENGINE_LOCK:
        return job()


class Documents:
    """Open documents by key, their latest check, and the URIs each has diagnostics on."""

    def __init__(self, server: LanguageServer, store: SettingsStore) -> None:
        self.server = server
        self.store = store
        self.keys: dict[Key, None] = {}
        self.results: dict[Key, Checked] = {}
        self.shown: dict[Key, set[str]] = {}

    # -- which document, and its state now --------------------------------------------------
    def text_document(self, uri: str):
        """The open text document (or cell) at ``uri``; pygls keys them by the unquoted URI."""
        return self.server.workspace.text_documents.get(unquote(uri))

    def key_of(self, uri: str) -> Key | None:
        """The document a URI belongs to: a text document, or the notebook holding the cell."""
        if ("text", uri) in self.keys:
            return ("text", uri)
        notebook = self.server.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None and ("notebook", notebook.uri) in self.keys:
            return ("notebook", notebook.uri)
        return None

    def token(self, key: Key) -> tuple | None:
        kind, uri = key
        if key not in self.keys:
            return None
        workspace = self.server.workspace
        if kind == "text":
            document = self.text_document(uri)
            return None if document is None else (document.version, self.store.generation)
        notebook = workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = tuple((c.document, getattr(self.text_document(c.document), "version", None)) for c in notebook.cells)
        return (notebook.version, cells, self.store.generation)

    def settings_for(self, uri: str) -> Settings:
        return self.store.for_file(path_of(uri))

    def snapshot(self, key: Key, cold: bool = False):
        """(token, job) checking the document as it is now (``cold``: without a warm start); None
        when it is closed."""
        token = self.token(key)
        if token is None:
            return None
        kind, uri = key
        settings = self.settings_for(uri)
        workspace = self.server.workspace
        if kind == "text":
            text = self.text_document(uri).source
            return token, partial(locked, partial(check_text_document, uri, text, settings, token, cold))
        notebook = workspace.get_notebook_document(notebook_uri=uri)
        cells = []
        for cell in notebook.cells:
            document = self.text_document(cell.document)
            synced = document is not None and cell.kind == CODE_CELL
            cells.append(CellText(cell.document if synced else None, int(cell.kind),
                                  document.source if synced else ""))
        return token, partial(locked, partial(check_notebook_document, uri, cells, settings, token))

    def current(self, key: Key) -> Checked | None:
        """The latest check of the document if it was made for the document as it is now."""
        checked = self.results.get(key)
        if checked is None or checked.token != self.token(key):
            return None
        return checked

    def after_comment_edit(self, key: Key) -> Checked | None:
        """The last check, made current, when the text document changed since only inside comments
        (its findings are those of the new text); None when it needs a check."""
        kind, uri = key
        checked = self.results.get(key)
        token = self.token(key)
        if kind != "text" or checked is None or token is None or checked.token is None:
            return None
        old, document = checked.texts.get(uri), self.text_document(uri)
        if old is None or document is None or checked.token[1:] != token[1:]:  # the same settings
            return None
        if checked.comments is None:
            checked.comments = CommentColumns(old)
        new = document.source
        if not only_comments_differ(old, new, checked.comments):
            return None
        return Checked(token, checked.findings, {uri: new}, checked.deps, checked.comments)

    # -- bookkeeping --------------------------------------------------------------------------
    def record(self, key: Key, checked: Checked) -> set[str]:
        """Keep a check; the URIs it no longer has findings for (to clear) are returned."""
        self.results[key] = checked
        before = self.shown.get(key, set())
        self.shown[key] = set(checked.findings)
        return before - set(checked.findings)

    def close(self, key: Key) -> set[str]:
        """Forget a document; the URIs that showed its diagnostics are returned."""
        self.keys.pop(key, None)
        self.results.pop(key, None)
        return self.shown.pop(key, set())

    def depending_on(self, path: Path) -> list[Key]:
        """Open documents whose last check read ``path`` (a project module they import)."""
        target = str(path)
        resolved = str(path.resolve())
        return [key for key, checked in self.results.items() if target in checked.deps or resolved in checked.deps]
