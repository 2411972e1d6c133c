"""What is checked for an open document, and what a check found, by the URI it is shown on.

A text document is checked as the file its URI names (so the config file, per-file-ignores and
the project's own imports apply). A notebook document's cells are joined in order into notebook
JSON and checked as the .ipynb file, exactly as `torchlint check` reads one; its findings come
back in cell coordinates and are shown on the cells' own URIs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from torchlint.config import Settings
from torchlint.finding import Finding
from torchlint.server.settings import for_document
from torchlint.static.notebook_check import check_any
from torchlint.static.parsing import StatementCache, reusing

CODE_CELL = 2  # lsprotocol NotebookCellKind.Code


def path_of(uri: str) -> Path | None:
    """The file a file:// URI names; None for other schemes (untitled buffers, remote files)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = url2pathname(unquote(parsed.path))
    if parsed.netloc:  # a UNC path
        path = f"//{parsed.netloc}{path}"
    return Path(path)


def display_name(uri: str, notebook: bool) -> str:
    """The path a finding carries: the file's, else a name with the right suffix."""
    file = path_of(uri)
    if file is not None:
        return str(file)
    return "untitled.ipynb" if notebook else "untitled.py"


@dataclass(frozen=True)
class CellText:
    uri: str | None  # None for a cell the client does not sync (markdown, another language)
    kind: int
    text: str


@dataclass
class Checked:
    """One check's findings per shown URI, with the text each was computed on."""

    token: object
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    deps: frozenset[str] = frozenset()
    comments: object = None  # comment_edit.CommentColumns of a text document's text, made when first asked
    warm: bool = False  # started from the facts of the document's last check (see static.warm_start)


# per open document, its top-level statements already parsed: an edit re-parses only those it changed
_statements: dict[str, StatementCache] = {}
KEPT_DOCUMENTS = 16  # the statement caches of the documents checked last


def _statement_cache(uri: str) -> StatementCache:
    cache = _statements.pop(uri, None) or StatementCache()
    _statements[uri] = cache  # most recent last
    while len(_statements) > KEPT_DOCUMENTS:
        del _statements[next(iter(_statements))]
    return cache


def check_text_document(uri: str, text: str, settings: Settings, token: object, cold: bool = False) -> Checked:
    """The document's findings; its statements parsed before are reused, and its walk starts from
    the facts its last check settled on unless ``cold``."""
    file = path_of(uri)
    name = display_name(uri, notebook=False)
    cache = _statement_cache(uri)
    settled = cache.memos.setdefault("settled", {})
    if cold:
        settled.clear()
    settled["warm"] = False
    with reusing(cache):
        findings, deps = _check(text, name, file, settings, notebook=False)
    return Checked(token, {uri: findings}, {uri: text}, deps, warm=settled.get("warm", False))


def check_notebook_document(uri: str, cells: list[CellText], settings: Settings, token: object) -> Checked:
    file = path_of(uri)
    name = display_name(uri, notebook=True)
    if not name.lower().endswith(".ipynb"):
        name += ".ipynb"  # the engine reads a notebook by its suffix
    findings, deps = _check(notebook_json(cells), name, file, settings, notebook=True)
    by_uri: dict[str, list[Finding]] = {cell.uri: [] for cell in cells if cell.uri is not None}
    for finding in findings:
        index = (finding.cell or 1) - 1
        if 0 <= index < len(cells) and cells[index].uri is not None:
            by_uri[cells[index].uri].append(finding)
    texts = {cell.uri: cell.text for cell in cells if cell.uri is not None}
    return Checked(token, by_uri, texts, deps)


def notebook_json(cells: list[CellText]) -> str:
    """nbformat 4 JSON of the cells; unsynced cells are markdown so the numbering stays the editor's."""
    data = []
    for cell in cells:
        if cell.kind == CODE_CELL and cell.uri is not None:
            data.append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                         "source": cell.text})
        else:
            data.append({"cell_type": "markdown", "metadata": {}, "source": ""})
    return json.dumps({"cells": data, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _check(text: str, name: str, file: Path | None, settings: Settings, notebook: bool):
    local = for_document(settings, file)
    if local is None:  # excluded by the config
        return [], frozenset()
    if local.max_file_size and len(text.encode("utf-8", "surrogatepass")) > local.max_file_size:
        return [], frozenset()  # as `torchlint check` skips it (max-file-size)
    deps: dict[str, str] = {}
    where = file if file is not None and file.parent.is_dir() else None
    findings = check_any(text, name, local.enabled(), local.options, file=where, deps=deps)
    return findings, frozenset(deps)
