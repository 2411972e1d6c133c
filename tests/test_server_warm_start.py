"""The language server's warm start: a document's next check starts from the facts its last check
settled on (``static/warm_start.py``), walks once where it would walk twice, finds what a check
from scratch finds, and is checked again from scratch once the document rests."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("libcst")

from torchlint.config import Settings  # noqa: E402
from torchlint.server import documents  # noqa: E402
from torchlint.server.scheduler import Scheduler  # noqa: E402
from torchlint.static.interpret import walker  # noqa: E402

SOURCE = '''import torch


def nll(p):
    return -torch.log(p).mean()


def train(model, x):
    probs = torch.softmax(model(x), 1)
    return nll(probs)


def evaluate(model, x):
    with torch.no_grad():
        return model(x).argmax(1)
'''


@pytest.fixture
def walks(monkeypatch):
    counted: list[int] = []
    run = walker.Walker.run

    def counting(self, module):
        counted.append(1)
        return run(self, module)

    monkeypatch.setattr(walker.Walker, "run", counting)
    return counted


def check(uri: str, text: str, cold: bool = False):
    checked = documents.check_text_document(uri, text, Settings(), None, cold)
    return [(f.code, f.line, f.message) for f in checked.findings[uri]], checked.warm


def from_scratch(tmp_path, text: str):
    uri = (tmp_path / "scratch" / "train.py").as_uri()
    documents._statements.pop(uri, None)
    return check(uri, text)[0]


def test_an_edit_elsewhere_walks_once_and_finds_the_same(tmp_path, walks):
    uri = (tmp_path / "train.py").as_uri()
    first, warm = check(uri, SOURCE)
    assert [(code, line) for code, line, _ in first] == [("TL102", 5)] and not warm
    assert len(walks) == 2  # the call `nll(probs)` teaches `p`: a second walk
    walks.clear()
    edited = SOURCE.replace("argmax(1)", "argmax(-1)")
    found, warm = check(uri, edited)
    assert warm and len(walks) == 1
    assert found == from_scratch(tmp_path, edited)


def test_an_edit_of_what_a_fact_came_from_drops_that_fact(tmp_path, walks):
    uri = (tmp_path / "train.py").as_uri()
    check(uri, SOURCE)
    edited = SOURCE.replace("torch.softmax(model(x), 1)", "torch.sigmoid(model(x)).clamp(1e-6, 1)")
    walks.clear()
    found, _warm = check(uri, edited)
    assert len(walks) == 2  # the fact about `p` was made in the replaced statement: learned again
    assert found == [] == from_scratch(tmp_path, edited)
    found, _warm = check(uri, SOURCE)  # and back
    assert [(code, line) for code, line, _ in found] == [("TL102", 5)]


def test_an_edited_function_loses_its_facts(tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    check(uri, SOURCE)
    edited = SOURCE.replace("return -torch.log(p).mean()", "return -torch.log(p.clamp_min(1e-6)).mean()")
    assert check(uri, edited)[0] == [] == from_scratch(tmp_path, edited)


def test_cold_drops_the_warm_start(tmp_path, walks):
    uri = (tmp_path / "train.py").as_uri()
    check(uri, SOURCE)
    walks.clear()
    found, warm = check(uri, SOURCE.replace("argmax(1)", "argmax(-1)"), cold=True)
    assert not warm and len(walks) == 2 and [(c, line) for c, line, _ in found] == [("TL102", 5)]


def test_the_settling_check_is_asked_for_cold():
    asked: list = []

    def snapshot(key, cold=False):
        asked.append((key, cold))
        return 1, lambda: 1

    async def scenario() -> None:
        scheduler = Scheduler(asyncio.get_running_loop(), snapshot, lambda k: 1, lambda k, r: None,
                              lambda k, e: None, delay=0)
        scheduler.schedule("a", 0.0, cold=True)
        scheduler.schedule("b")
        while not scheduler.idle():
            await asyncio.sleep(0.001)

    asyncio.run(scenario())
    assert asked == [("a", True), ("b", False)]


def test_a_warm_result_schedules_a_settling_check_and_its_twin_is_not_republished(tmp_path, monkeypatch):
    from lsprotocol import types  # noqa: F401 - the server needs pygls

    from torchlint.server import app

    monkeypatch.setattr(app.TorchlintServer, "encoding", "utf-16")
    server = app.TorchlintServer()
    server.documents.text_document = lambda uri: None
    scheduled: list = []
    published: list = []

    class Recorder:
        def schedule(self, key, delay=None, cold=False):
            scheduled.append((key, delay, cold))

    server._scheduler = Recorder()
    server.text_document_publish_diagnostics = published.append
    uri = (tmp_path / "train.py").as_uri()
    key = ("text", uri)
    warm = documents.Checked((1, 0), {uri: []}, {uri: SOURCE}, warm=True)
    server.publish(key, warm)
    assert scheduled == [(key, app.SETTLE_AFTER_S, True)] and len(published) == 1
    server.publish(key, documents.Checked((1, 0), {uri: []}, {uri: SOURCE}))
    assert len(published) == 1  # the settling check found the same: nothing sent
    server.publish(key, documents.Checked((2, 0), {uri: []}, {uri: SOURCE}))
    assert len(published) == 2 and len(scheduled) == 1
