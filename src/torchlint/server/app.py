"""The language server: LSP features wired to the checks, actions and hovers of this package."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from torchlint import __version__
from torchlint.server import actions
from torchlint.server.diagnostics import to_diagnostics
from torchlint.server.documents import path_of
from torchlint.server.hover import hover
from torchlint.server.protocol import Protocol
from torchlint.server.scheduler import Scheduler
from torchlint.server.settings import Overrides, SettingsStore, for_document
from torchlint.server.state import Documents, Key, is_python, locked
from torchlint.static.project import PROCESS_PROJECT

CONFIG_NAMES = ("pyproject.toml", "torchlint.toml")
WATCHED = ("**/pyproject.toml", "**/torchlint.toml", "**/*.py")
DEFAULT_DEBOUNCE_MS = 30.0
SETTLE_AFTER_S = 1.0  # a document idle this long after a warm-started check is checked from scratch


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        notebooks = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithCells(
            cells=[types.NotebookCellLanguage("python")], notebook="*")])
        super().__init__("torchlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks, protocol_cls=Protocol)
        self.store = SettingsStore(on_error=self.show_error)
        self.documents = Documents(self, self.store)
        self.debounce = DEFAULT_DEBOUNCE_MS / 1000
        self._scheduler: Scheduler | None = None
        self.shutdown_received = False

    # -- checking and publishing --------------------------------------------------------------
    @property
    def scheduler(self) -> Scheduler:
        if self._scheduler is None:  # needs the running loop: made on the first document event
            self._scheduler = Scheduler(asyncio.get_running_loop(), self.documents.snapshot, self.documents.token,
                                        self.publish, self.check_failed, self.debounce)
        return self._scheduler

    def check_soon(self, key: Key, now: bool = False) -> None:
        self.scheduler.schedule(key, 0.0 if now else None)

    def check_all(self) -> None:
        for key in list(self.documents.keys):
            self.check_soon(key, now=True)

    def publish(self, key: Key, checked) -> None:
        before = self.documents.results.get(key)
        stale = self.documents.record(key, checked)
        if checked.warm:  # exact once the document rests: checked again from scratch (see warm_start)
            self.scheduler.schedule(key, SETTLE_AFTER_S, cold=True)
        elif before is not None and before.token == checked.token and before.findings == checked.findings:
            return  # the settling check found what the warm one published
        encoding = self.encoding
        for uri, findings in checked.findings.items():
            version = getattr(self.documents.text_document(uri), "version", None)
            diagnostics = to_diagnostics(findings, checked.texts[uri], uri, encoding)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, diagnostics, version))
        for uri in stale:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def clear(self, key: Key) -> None:
        if self._scheduler is not None:
            self._scheduler.forget(key)
        for uri in self.documents.close(key):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def wait_for_checks(self, timeout: float) -> bool:
        return self._scheduler is None or self._scheduler.join(timeout)

    def check_failed(self, key: Key, error: BaseException) -> None:
        self.log(f"checking {key[1]} failed: {type(error).__name__}: {error}", types.MessageType.Error)

    # -- messages to the user -------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        return str(getattr(self.workspace.position_encoding, "value", None) or "utf-16")

    def show_error(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"torchlint: {message}"))

    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_log_message(types.LogMessageParams(kind, f"torchlint: {message}"))

    def apply_overrides(self, data) -> None:
        overrides, problems = Overrides.parse(data)
        for problem in problems:
            self.show_error(problem)
        self.store.overrides = overrides
        self.debounce = (overrides.debounce_ms if overrides.debounce_ms is not None else DEFAULT_DEBOUNCE_MS) / 1000
        if self._scheduler is not None:
            self._scheduler.delay = self.debounce

    def set_roots(self, uris: list[str]) -> None:
        roots = [path for path in map(path_of, uris) if path is not None]
        self.store.roots = sorted((path.resolve() for path in roots), key=lambda path: -len(path.parts))

    def files_changed(self, paths: list[Path]) -> None:
        """Config files reload the settings (every document is checked again); modules re-check their importers."""
        PROCESS_PROJECT.forget_layout()
        if any(path.name in CONFIG_NAMES for path in paths):
            self.store.reload()
            self.check_all()
            return
        for path in paths:
            for key in self.documents.depending_on(path):
                self.check_soon(key, now=True)


def build_server() -> TorchlintServer:
    server = TorchlintServer()
    _register_lifecycle(server)
    _register_documents(server)
    _register_requests(server)
    return server


def _register_lifecycle(server: TorchlintServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
        uris = [folder.uri for folder in params.workspace_folders or []]
        ls.set_roots(uris or ([params.root_uri] if params.root_uri else []))
        ls.apply_overrides(params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders(ls: TorchlintServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        ls.set_roots(list(ls.workspace.folders))  # pygls has applied the change
        ls.store.reload()
        ls.check_all()

    @server.feature(types.INITIALIZED)
    def initialized(ls: TorchlintServer, params: types.InitializedParams) -> None:
        watch = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watch and watch.dynamic_registration:
            options = types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED])
            ls.client_register_capability(types.RegistrationParams([types.Registration(
                "torchlint-watch", types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)]))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TorchlintServer, *args) -> None:
        ls.shutdown_received = True

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration(ls: TorchlintServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("torchlint"), dict):  # others' keys: not ours
            ls.apply_overrides(settings["torchlint"])
        ls.store.reload()
        ls.check_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: TorchlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.files_changed([p for p in (path_of(change.uri) for change in params.changes) if p is not None])


def _register_documents(server: TorchlintServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        if is_python(document.uri, document.language_id):
            ls.documents.keys[("text", document.uri)] = None
            ls.check_soon(("text", document.uri), now=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        key = ("text", params.text_document.uri)
        if key not in ls.documents.keys:
            return
        reused = ls.documents.after_comment_edit(key)
        if reused is None:
            ls.check_soon(key)
            return
        ls.scheduler.settle(key)
        ls.publish(key, reused)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = path_of(uri)
        if path is not None:
            ls.files_changed([path])
        if ("text", uri) in ls.documents.keys:
            ls.check_soon(("text", uri), now=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.clear(("text", params.text_document.uri))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TorchlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        key = ("notebook", params.notebook_document.uri)
        ls.documents.keys[key] = None
        ls.check_soon(key, now=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TorchlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        key = ("notebook", params.notebook_document.uri)
        if key in ls.documents.keys:
            ls.check_soon(key)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TorchlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        key = ("notebook", params.notebook_document.uri)
        if key in ls.documents.keys:
            ls.check_soon(key, now=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TorchlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.clear(("notebook", params.notebook_document.uri))


def _register_requests(server: TorchlintServer) -> None:
    kinds = [actions.QUICK_FIX, actions.FIX_ALL]

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds))
    async def code_action(ls: TorchlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        key = ls.documents.key_of(uri)
        checked = ls.documents.current(key) if key is not None else None
        if checked is None or uri not in checked.findings:
            return []  # not checked yet for this version: no edits computed on other text
        only = list(params.context.only) if params.context.only else None
        text = checked.texts[uri]
        result = actions.quick_fixes(uri, text, checked.findings[uri], params.range, ls.encoding, only)
        if key[0] == "text" and actions.wants(only, actions.FIX_ALL) and any(
                f.fix is not None and f.fix.applicability == "safe" for f in checked.findings[uri]):
            fixed = await _fix_all(ls, uri, text)
            if fixed is not None and ls.documents.current(key) is checked:
                action = actions.fix_all_action(uri, text, *fixed)
                if action is not None:
                    result.append(action)
        return result

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: TorchlintServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        key = ls.documents.key_of(uri)
        checked = ls.documents.current(key) if key is not None else None
        if checked is None or uri not in checked.findings:
            return None
        return hover(checked.texts[uri], checked.findings[uri], params.position, ls.encoding)


async def _fix_all(ls: TorchlintServer, uri: str, text: str) -> tuple[str, int] | None:
    from torchlint.fix import fix_source

    local = for_document(ls.documents.settings_for(uri), path_of(uri))
    if local is None:
        return None
    name = str(path_of(uri) or "untitled.py")
    outcome = await asyncio.get_running_loop().run_in_executor(
        None, locked, lambda: fix_source(text, name, local, unsafe=False))
    return outcome.source, outcome.fixed
