"""`torchlint server` end to end: a real client process talks LSP to it over stdio."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pygls")

from lsp_client import ROOT, LspClient, frame  # noqa: E402

BUGGY = """\
import torch
import torch.nn.functional as F


def loss_fn(logits, target):
    probs = torch.softmax(logits, dim=-1)
    return -(target * torch.log(probs)).sum()


def bce(z, y):
    return F.binary_cross_entropy(torch.sigmoid(z), y)
"""
FIXED = BUGGY.replace("torch.log(probs)", "torch.log_softmax(logits, dim=-1)").replace(
    "F.binary_cross_entropy(torch.sigmoid(z), y)", "F.binary_cross_entropy_with_logits(z, y)")


def codes_lines(params: dict) -> list[tuple[str, int]]:
    """(code, 1-based line) of each published diagnostic."""
    return sorted((d["code"], d["range"]["start"]["line"] + 1) for d in params["diagnostics"])


def span(line: int, start: int, end: int | None = None) -> dict:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": start if end is None
                                                                  else end}}


def apply(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (ASCII text: characters are columns), last first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position):
        return starts[position["line"]] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[:offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]):]
    return text


@pytest.fixture
def client(tmp_path):
    session = LspClient(cwd=tmp_path)
    yield session
    if session.process.poll() is None:
        session.process.kill()
        session.process.wait()


def test_diagnostics_fixes_hover_and_a_clean_exit(tmp_path, client):
    uri = (tmp_path / "train.py").as_uri()
    result = client.initialize(tmp_path)
    assert result["serverInfo"]["name"] == "torchlint"
    assert result["capabilities"]["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll.torchlint"]

    client.open(uri, BUGGY, version=1)
    published = client.diagnostics(uri, version=1)
    assert codes_lines(published) == [("TL102", 7), ("TL103", 11)]
    tl103 = next(d for d in published["diagnostics"] if d["code"] == "TL103")
    assert tl103["range"] == span(10, 11, 54) and tl103["source"] == "torchlint"
    assert tl103["codeDescription"]["href"].endswith("/rules/TL103.md")

    # quick fixes: TL103's own fix, and a noqa comment for either finding
    actions = client.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": span(10, 20),
                                                      "context": {"diagnostics": [tl103]}})
    titles = [a["title"] for a in actions]
    assert titles[:2] == ["TL103: Use binary_cross_entropy_with_logits on the logits", "Disable TL103 for this line"]
    fixed_line = apply(BUGGY, actions[0]["edit"]["changes"][uri]).splitlines()[10]
    assert fixed_line == "    return F.binary_cross_entropy_with_logits(z, y)"
    assert actions[0]["isPreferred"] is True and actions[0]["kind"] == "quickfix"
    noqa = client.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": span(6, 30),
                                                   "context": {"diagnostics": [], "only": ["quickfix"]}})
    assert [a["title"] for a in noqa] == ["Disable TL102 for this line"]
    silenced = apply(BUGGY, noqa[0]["edit"]["changes"][uri])
    assert silenced.splitlines()[6] == "    return -(target * torch.log(probs)).sum()  # noqa: TL102"

    # hover on the finding: its message and the rule's documentation
    hover = client.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 25}})
    text = hover["contents"]["value"]
    assert text.startswith("**TL102** (") and "## What it does" in text and "## Use instead" in text
    assert client.call("textDocument/hover", {"textDocument": {"uri": uri},
                                              "position": {"line": 0, "character": 2}}) is None

    # the noqa edit applied: TL102 goes; then the fix: nothing is left
    client.change(uri, 2, silenced)
    assert codes_lines(client.diagnostics(uri, version=2)) == [("TL103", 11)]
    client.change(uri, 3, FIXED)
    assert client.diagnostics(uri, version=3)["diagnostics"] == []

    code, stderr = client.stop()
    assert code == 0 and stderr == ""


def test_fix_all_source_action(tmp_path, client):
    (tmp_path / "my project").mkdir()
    uri = (tmp_path / "my project" / "train.py").as_uri()  # percent-escaped: file:///.../my%20project/...
    assert "%20" in uri
    client.initialize(tmp_path)
    client.open(uri, BUGGY)
    client.diagnostics(uri, version=1)
    actions = client.call("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": span(0, 0),
                                                      "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in actions] == ["source.fixAll.torchlint"]
    after = apply(BUGGY, actions[0]["edit"]["changes"][uri])
    assert "binary_cross_entropy_with_logits(z, y)" in after and "torch.log(probs)" in after  # TL102: no fix
    assert client.stop()[0] == 0


def test_rapid_edits_publish_only_current_versions(tmp_path, client):
    uri = (tmp_path / "train.py").as_uri()
    client.initialize(tmp_path)
    texts = {version: FIXED if version % 2 else BUGGY for version in range(2, 12)}
    texts[1] = BUGGY
    client.open(uri, BUGGY, version=1)
    for version in range(2, 12):  # alternate buggy and fixed text faster than a check takes
        client.change(uri, version, texts[version])
    final = client.diagnostics(uri, version=11)
    assert final["diagnostics"] == []
    client.call("shutdown")
    published = [m["params"] for m in client.seen if m.get("method") == "textDocument/publishDiagnostics"]
    for params in published:  # whatever was published matches the text of the version it names
        expected = [("TL102", 7), ("TL103", 11)] if texts[params["version"]] == BUGGY else []
        assert codes_lines(params) == expected, [(p["version"], codes_lines(p)) for p in published]
    assert len(published) < 11  # the burst was coalesced
    client.notify("exit")
    assert client.finish()[0] == 0


def test_settings_reload_when_the_config_changes(tmp_path, client):
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.torchlint]\nignore = ["TL102"]\n')
    uri = (tmp_path / "train.py").as_uri()
    client.initialize(tmp_path, capabilities={"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}})
    client.open(uri, BUGGY)
    assert codes_lines(client.diagnostics(uri)) == [("TL103", 11)]
    registration = client.wait_for(lambda m: m.get("method") == "client/registerCapability")
    watchers = registration["params"]["registrations"][0]["registerOptions"]["watchers"]
    assert {"globPattern": "**/pyproject.toml"} in watchers

    config.write_text('[tool.torchlint]\nignore = ["TL103"]\n')
    start = len(client.seen)
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": config.as_uri(), "type": 2}]})
    assert codes_lines(client.diagnostics(uri, start=start)) == [("TL102", 7)]

    config.write_text("[tool.torchlint\n")  # broken: one error message, the defaults meanwhile
    start = len(client.seen)
    client.notify("textDocument/didSave", {"textDocument": {"uri": config.as_uri()}})
    message = client.wait_for(lambda m: m.get("method") == "window/showMessage", start=start)["params"]
    assert message["type"] == 1 and "invalid TOML in" in message["message"] and "line 1" in message["message"]
    assert codes_lines(client.diagnostics(uri, start=start)) == [("TL102", 7), ("TL103", 11)]

    client.notify("workspace/didChangeConfiguration", {"settings": {"torchlint": {"ignore": ["TL103"]}}})
    client.notify("workspace/didChangeConfiguration", {"settings": {"python": {"analysis": {}}}})  # not ours
    start = len(client.seen)
    config.write_text("[tool.torchlint]\n")
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": config.as_uri(), "type": 2}]})
    assert codes_lines(client.diagnostics(uri, start=start)) == [("TL102", 7)]
    code, stderr = client.stop()
    assert code == 0 and stderr == ""


UTILS = """\
import torch


def quiet():
    return torch.no_grad()
"""
VALIDATE = """\
import torch
from pkg.utils import quiet


def run_quietly(model, loader):
    model.eval()
    with quiet():
        for x, y in loader:
            out = model(x)
"""


def test_imports_of_project_modules_resolve_and_follow_saves(tmp_path, client):
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    utils = tmp_path / "pkg" / "utils.py"
    utils.write_text(UTILS)
    uri = (tmp_path / "pkg" / "val.py").as_uri()  # never written to disk: the buffer is what is checked
    client.initialize(tmp_path)
    client.open(uri, VALIDATE)
    assert client.diagnostics(uri)["diagnostics"] == []  # quiet() is no_grad, as utils.py says

    utils.write_text(UTILS.replace("torch.no_grad()", "torch.enable_grad()  # changed"))
    start = len(client.seen)
    client.notify("textDocument/didSave", {"textDocument": {"uri": utils.as_uri()}})
    assert codes_lines(client.diagnostics(uri, start=start)) == [("TL306", 8)]
    assert client.stop()[0] == 0


def test_notebook_cells_get_their_own_diagnostics(tmp_path, client):
    notebook = (tmp_path / "analysis.ipynb").as_uri()
    cells = [f"{notebook}#cell{i}" for i in range(3)]
    client.initialize(tmp_path, capabilities={"notebookDocument": {"synchronization": {}}})
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": [
            {"kind": 2, "document": cells[0]}, {"kind": 1, "document": cells[1]}, {"kind": 2, "document": cells[2]}]},
        "cellTextDocuments": [
            {"uri": cells[0], "languageId": "python", "version": 1, "text": "%matplotlib inline\nimport torch\n"},
            {"uri": cells[2], "languageId": "python", "version": 1,
             "text": "x = torch.randn(4)\np = torch.softmax(x, 0)\nh = -(p * torch.log(p)).sum()\n"}]})
    assert codes_lines(client.diagnostics(cells[2], version=1)) == [("TL116", 3)]
    assert client.diagnostics(cells[0], version=1)["diagnostics"] == []
    noqa = client.call("textDocument/codeAction", {"textDocument": {"uri": cells[2]}, "range": span(2, 12),
                                                   "context": {"diagnostics": []}})
    assert [a["title"] for a in noqa] == ["Disable TL116 for this line"]
    assert list(noqa[0]["edit"]["changes"]) == [cells[2]]
    hover = client.call("textDocument/hover", {"textDocument": {"uri": cells[2]},
                                               "position": {"line": 2, "character": 12}})
    assert "TL116" in hover["contents"]["value"]

    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": notebook, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cells[2], "version": 2}, "changes": [
            {"range": span(2, 10, 22), "text": "torch.log_softmax(x, 0)"}]}]}}})
    assert client.diagnostics(cells[2], version=2)["diagnostics"] == []
    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": notebook},
                                                "cellTextDocuments": [{"uri": cells[0]}, {"uri": cells[2]}]})
    assert client.stop()[0] == 0


def test_a_client_that_disconnects_mid_request(tmp_path, client):
    uri = (tmp_path / "train.py").as_uri()
    client.initialize(tmp_path)
    client.open(uri, BUGGY * 40)
    client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 25}})
    client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": span(0, 0),
                                               "context": {"diagnostics": []}})
    client.process.stdin.close()
    client.process.stdout.close()
    code, stderr = client.finish(timeout=60)
    assert "Traceback" not in stderr
    assert code == 1  # no shutdown request came first


def test_garbage_on_the_wire_is_not_fatal(tmp_path, client):
    client.initialize(tmp_path)
    client.process.stdin.write(b"Content-Length: 9\r\n\r\n{not json")
    client.process.stdin.flush()
    client.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"bogus": 1}})
    reply = client.response(client.request("textDocument/hover", {"bogus": 1}))
    assert reply["error"]["code"] == -32602 and "textDocument/hover" in reply["error"]["message"]
    assert client.call("textDocument/hover", {"textDocument": {"uri": "file:///nowhere.py"},
                                              "position": {"line": 0, "character": 0}}) is None
    code, stderr = client.stop()
    assert code == 0 and "Traceback" not in stderr
    assert stderr.startswith("torchlint server: error:")


def test_exit_without_shutdown_is_an_error(tmp_path, client):
    client.initialize(tmp_path)
    client.notify("exit")
    assert client.finish()[0] == 1


def test_the_checker_does_not_import_pygls(tmp_path):
    (tmp_path / "a.py").write_text(BUGGY)
    script = ("import sys; from torchlint.cli import main; code = main(['check', '--no-cache', sys.argv[1]]); "
              "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules; sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.py")], capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""}, timeout=120)
    assert result.returncode == 1 and "TL103" in result.stdout, result.stderr


def test_without_pygls_the_server_says_what_to_install(monkeypatch, capsys):
    from torchlint.cli import main

    monkeypatch.setitem(sys.modules, "pygls", None)
    assert main(["server"]) == 2
    assert capsys.readouterr().err == "torchlint: error: torchlint server needs pygls: pip install 'torchlint[lsp]'\n"


def test_frame_is_content_length_framed():
    data = frame({"a": "é"})
    header, body = data.split(b"\r\n\r\n")
    assert header == b"Content-Length: %d" % len(body) and json.loads(body) == {"a": "é"}


def test_an_edit_inside_a_comment_republishes_without_a_check(tmp_path, client):
    # a 3 s debounce: diagnostics sooner than that can only be the last check's, reused
    client.initialize(tmp_path, options={"torchlint": {"debounceMs": 3000}})
    uri = (tmp_path / "m.py").as_uri()
    commented = BUGGY.replace("    return -(target", "    # the loss\n    return -(target")
    client.open(uri, commented)
    first = client.diagnostics(uri, version=1)
    assert codes_lines(first) == [("TL102", 8), ("TL103", 12)]
    client.change(uri, 2, commented.replace("# the loss", "# the loss, summed over the batch"))
    second = client.diagnostics(uri, version=2, timeout=2.0)
    assert second["diagnostics"] == first["diagnostics"]
    # a noqa in the comment, code in a comment's place, a new line: each is checked (after the debounce)
    for version, text, expected in [
        (3, commented.replace("    # the loss\n    return -(target * torch.log(probs)).sum()",
                              "    return -(target * torch.log(probs)).sum()  # noqa: TL102\n"), [("TL103", 12)]),
        (4, commented.replace("# the loss", "x = 1"), [("TL102", 8), ("TL103", 12)]),
        (5, commented.replace("# the loss", "# the\n    # loss"), [("TL102", 9), ("TL103", 13)]),
    ]:
        client.change(uri, version, text)
        with pytest.raises(TimeoutError):
            client.diagnostics(uri, version=version, timeout=1.0)
        assert codes_lines(client.diagnostics(uri, version=version, timeout=30.0)) == expected
    assert client.stop()[0] == 0
