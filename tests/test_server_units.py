"""The language server's pieces on their own: positions, noqa edits, settings, scheduling."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from torchlint.config import Settings  # noqa: E402
from torchlint.server.actions import noqa_edit, wants  # noqa: E402
from torchlint.server.documents import CellText, check_notebook_document, notebook_json, path_of  # noqa: E402
from torchlint.server.positions import UTF8, UTF16, UTF32, lines_of, to_client  # noqa: E402
from torchlint.server.scheduler import Scheduler  # noqa: E402
from torchlint.server.settings import Overrides, for_document  # noqa: E402


@pytest.mark.parametrize(("encoding", "character"), [(UTF16, 11), (UTF8, 14), (UTF32, 10)])
def test_columns_in_each_position_encoding(encoding, character):
    lines = lines_of("import torch\r\nx = ('😀é', torch.log(p))\rnext\n")
    assert lines[1] == "x = ('😀é', torch.log(p))" and lines[2] == "next"
    # column 11 (1-based, code points) is the space after the comma; before it: x = ('😀é',
    assert to_client(lines, 2, 11, encoding) == (1, character)
    assert to_client(lines, 9, 1, encoding) == (3, 0)  # past the end: clamped


NOQA_CASES = {
    "y = torch.log(x)\n": ("y = torch.log(x)  # noqa: TL101\n"),
    "y = torch.log(x)   \n": ("y = torch.log(x)  # noqa: TL101\n"),
    "y = torch.log(x)  # why\n": ("y = torch.log(x)  # why  # noqa: TL101\n"),
    "y = torch.log(x)  # noqa: TL102\n": ("y = torch.log(x)  # noqa: TL102, TL101\n"),
    "y = torch.log(x)  # noqa:TL102 TL103 -- reason\n": ("y = torch.log(x)  # noqa:TL102 TL103, TL101 -- reason\n"),
    "y = torch.log(x)  # NOQA\n": None,  # already silenced (the finding would not exist)
    "y = torch.log(x) + \\\n    1\n": None,  # a comment after a backslash is a syntax error
    'y = (torch.log(x), """\nstill a string\n""")\n': None,  # the line ends inside a string
    'y = (torch.log(x), f"""{a}\nstill a string\n""")\n': None,
}


@pytest.mark.parametrize("before", list(NOQA_CASES))
def test_noqa_edit(before):
    edit = noqa_edit(before, 1, "TL101")
    expected = NOQA_CASES[before]
    if expected is None:
        assert edit is None
        return
    line, start, end, content = edit
    first, rest = before.split("\n", 1)
    assert line == 1 and first[:start - 1] + content + first[end - 1:] + "\n" + rest == expected


def test_noqa_edit_for_a_code_already_listed_or_a_line_out_of_range():
    assert noqa_edit("y = 1  # noqa: TL101\n", 1, "TL101") is None
    assert noqa_edit("y = 1\n", 5, "TL101") is None


def test_code_action_kind_filter():
    assert wants(None, "quickfix") and wants(["source"], "source.fixAll.torchlint")
    assert wants(["source.fixAll"], "source.fixAll.torchlint") and not wants(["quickfix"], "source.fixAll.torchlint")
    assert not wants(["source.fix"], "source.fixAll.torchlint")


def test_editor_settings_are_checked():
    overrides, problems = Overrides.parse({"torchlint": {"ignore": ["tl102"], "debounceMs": 5}})
    assert overrides.ignore == ["TL102"] and overrides.debounce_ms == 5 and problems == []
    _, problems = Overrides.parse({"ignore": "TL102", "debounce": -1, "colour": "red"})
    assert problems == ["setting ignore must be a list of rule codes",
                        "setting debounce must be a number of milliseconds (0 to 10000)", "unknown setting colour"]
    overrides, problems = Overrides.parse({"select": ["TL9999"]})
    assert overrides.select is None and problems == ["unknown rule selector(s) in the editor settings: TL9999"]
    assert Overrides.parse(None) == (Overrides(), [])


def test_exclude_and_per_file_ignores_apply_to_open_files(tmp_path):
    settings = Settings(root=tmp_path, exclude=["generated"], per_file_ignores={"tests/*": ["TL102"]})
    assert for_document(settings, tmp_path / "generated" / "a.py") is None
    assert for_document(settings, tmp_path / ".venv" / "lib" / "a.py") is None
    assert for_document(settings, tmp_path / "tests" / "t.py").ignore == ["TL102"]
    assert for_document(settings, tmp_path / "src" / "t.py") is settings
    outside = Path("/elsewhere/generated/a.py")  # not below the config's folder: not excluded by it
    assert for_document(settings, outside) is settings


def test_uris():
    assert path_of("file:///tmp/a%20b/train.py") == Path("/tmp/a b/train.py")
    assert path_of("untitled:Untitled-1") is None and path_of("vscode-notebook-cell:/x.ipynb#W1") is None


def test_notebook_cells_keep_their_numbers(tmp_path):
    cells = [CellText("c1", 2, "import torch\n"), CellText(None, 1, ""),
             CellText("c3", 2, "p = torch.softmax(torch.randn(3), 0)\nh = torch.log(p)\n")]
    assert '"cell_type": "markdown"' in notebook_json(cells)
    checked = check_notebook_document((tmp_path / "n.ipynb").as_uri(), cells, Settings(root=tmp_path), token=7)
    assert {uri: [(f.code, f.line, f.cell) for f in found] for uri, found in checked.findings.items()} == {
        "c1": [], "c3": [("TL102", 2, 3)]}
    assert checked.token == 7 and checked.texts["c3"] == cells[2].text


class FakeDocs:
    """Versions by key; a job that runs Python until ``release`` is set, so an edit lands while it runs."""

    def __init__(self) -> None:
        self.version = {"a": 1}
        self.release = threading.Event()
        self.started: list[int] = []
        self.published: list[tuple[str, int]] = []
        self.cold: list[bool] = []  # per snapshot taken, whether a cold check was asked for

    def snapshot(self, key, cold=False):
        self.cold.append(cold)
        version = self.version.get(key)
        if version is None:
            return None

        def job():
            self.started.append(version)
            while not self.release.is_set():
                time.sleep(0.001)
            return version
        return version, job

    def scheduler(self, loop) -> Scheduler:
        return Scheduler(loop, self.snapshot, self.version.get, lambda k, r: self.published.append((k, r)),
                         lambda k, e: None, delay=0.001)


async def settle(scheduler: Scheduler) -> None:
    while not scheduler.idle():
        await asyncio.sleep(0.001)


def test_an_edit_abandons_the_check_of_the_text_it_replaced():
    async def scenario(docs: FakeDocs) -> Scheduler:
        scheduler = docs.scheduler(asyncio.get_running_loop())
        scheduler.schedule("a")
        while not docs.started:
            await asyncio.sleep(0.001)
        docs.version["a"] = 2  # edited while version 1 is being checked: that check stops
        scheduler.schedule("a")
        docs.version["a"] = 3
        scheduler.schedule("a")  # the timer restarts: one check for versions 2 and 3
        while len(docs.started) < 2:
            await asyncio.sleep(0.001)
        docs.release.set()
        await settle(scheduler)
        return scheduler

    docs = FakeDocs()
    scheduler = asyncio.run(scenario(docs))
    assert docs.started == [1, 3] and docs.published == [("a", 3)]
    assert scheduler.cancelled == 1 and scheduler.dropped == 0


def test_a_result_for_an_outdated_token_is_dropped():
    async def scenario(docs: FakeDocs) -> Scheduler:
        scheduler = docs.scheduler(asyncio.get_running_loop())
        scheduler.schedule("a")
        while not docs.started:
            await asyncio.sleep(0.001)
        docs.version["a"] = 2  # changed without a schedule() (as a settings reload could)
        docs.release.set()
        await settle(scheduler)
        return scheduler

    docs = FakeDocs()
    scheduler = asyncio.run(scenario(docs))
    assert docs.published == [] and scheduler.dropped == 1 and scheduler.cancelled == 0


def test_a_closed_document_is_not_checked_and_errors_are_reported():
    async def scenario() -> list:
        errors: list = []
        docs = FakeDocs()
        docs.release.set()
        loop = asyncio.get_running_loop()

        def snapshot(key, cold=False):
            if key == "boom":
                return 1, lambda: 1 / 0
            return docs.snapshot(key, cold)

        scheduler = Scheduler(loop, snapshot, lambda k: 1, lambda k, r: docs.published.append(k),
                              lambda k, e: errors.append((k, type(e).__name__)), delay=0)
        scheduler.schedule("closed")
        scheduler.schedule("boom")
        scheduler.schedule("a")
        scheduler.forget("a")
        await settle(scheduler)
        return errors + docs.published

    assert asyncio.run(scenario()) == [("boom", "ZeroDivisionError")]


def test_notifications_leave_no_bookkeeping_behind():
    from lsprotocol import types

    from torchlint.server.app import build_server

    server = build_server()
    protocol = server.protocol
    protocol._workspace = None
    list(protocol.lsp_initialize(types.InitializeParams(capabilities=types.ClientCapabilities())))
    item = types.TextDocumentItem("untitled:a", "plaintext", 1, "x = 1\n")  # not Python: nothing to check
    protocol._handle_notification(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(item))
    for version in range(2, 50):
        change = types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri="untitled:a"),
                                                   [types.TextDocumentContentChangeWholeDocument(f"x = {version}\n")])
        protocol._handle_notification(types.TEXT_DOCUMENT_DID_CHANGE, change)
    assert server.workspace.get_text_document("untitled:a").source == "x = 49\n"
    assert protocol._request_futures == {}


OLD = "import torch\nx = torch.log(y)  # a note\n# alone\ns = 'not # a comment'\n"


@pytest.mark.parametrize("new, same", [
    (OLD.replace("# a note", "# a longer note"), True),
    (OLD.replace("# alone", "#"), True),
    (OLD.replace("# a note", "# noqa: TL101"), False),  # suppression comments are read
    (OLD.replace("# alone", "# torchlint: file-ignore"), False),
    (OLD.replace("torch.log(y)  # a note", "torch.log(y) # a note"), False),  # code columns move
    (OLD.replace("# alone", "# al\n# one"), False),  # lines move
    (OLD.replace("not # a comment", "not # a remark"), False),  # a `#` inside a string
    (OLD.replace("# alone", "z = 1"), False),
    (OLD.replace("torch", "numpy"), False),
])
def test_only_comments_differ(new, same):
    from torchlint.server.comment_edit import CommentColumns, only_comments_differ

    assert only_comments_differ(OLD, new, CommentColumns(OLD)) is same


def test_only_comments_differ_needs_the_engine_to_check_the_same_text():
    from torchlint.server.comment_edit import CommentColumns, only_comments_differ

    old = "x = 1  # mentions torch\n"  # the only mention of torch: without it the engine skips the file
    assert not only_comments_differ(old, "x = 1  # mentions nothing\n", CommentColumns(old))
    assert not only_comments_differ("x = (\n", "x = (\n  # c\n", CommentColumns("x = (\n"))  # no tokens
