"""gitlab, junit, pylint and concise outputs, each checked against what its consumer reads:
GitLab's documented Code Quality fields (as a JSON schema), Jenkins' JUnit XSD (junit-10.xsd of the
xunit plugin, encoded below), pylint's `parseable` template, and the `file:line:col: message`
error format of editors."""

import json
import re
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from test_notebooks import NB

from torchlint.cli import CHECK_FORMATS, main
from torchlint.finding import Finding
from torchlint.report import FORMATS
from torchlint.report.junit import render_junit

BUGGY = ("import torch\n\n\ndef f(x):\n    h = torch.relu(x)\n    a = torch.log(h)\n    b = torch.log(h)\n"
         "    return torch.log(torch.softmax(h, -1)) / h.norm() + a + b\n")
CLEAN = "import torch\n\n\ndef f(x):\n    return torch.log_softmax(x, -1)\n"

# GitLab Code Quality (docs.gitlab.com/ci/testing/code_quality, "Code Quality report format"): the
# required fields of each issue, the severity names it accepts, and a path relative to the repository.
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "pattern": r"^(?!/|\./)[^\\]+$"},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1},
                                             "end": {"type": "integer", "minimum": 1}}},
                },
                "anyOf": [{"required": ["lines"]}, {"required": ["positions"]}],
            },
        },
    },
}

# Jenkins' junit-10.xsd: attributes each element may have (required ones first) and its child elements.
_RERUN = {"rerunFailure", "rerunError", "flakyFailure", "flakyError"}
JUNIT = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors"},
                  {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
                  {"testsuite", "properties", "testcase", "system-out", "system-err"}),
    "testcase": ({"name"}, {"time", "classname", "group"},
                 {"skipped", "error", "failure", "system-out", "system-err"} | _RERUN),
    "failure": (set(), {"type", "message"}, set()),
}
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")
# pylint --output-format=parseable: "{path}:{line}: [{msg_id}({symbol}), {obj}] {msg}"
PYLINT = re.compile(r"^(?P<path>[^:\n]+):(?P<line>[1-9]\d*): \[(?P<id>[A-Z]+\d+)\((?P<symbol>[a-z0-9-]+)\), "
                    r"(?P<obj>[^\]]*)\] (?P<msg>\S.*)$")
# the `%f:%l:%c: %m` error format of vim, emacs compile mode and VS Code problem matchers
CONCISE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): (?P<code>TL\d{3}) (?P<msg>\S.*)$")


def validate_junit(root: ET.Element) -> None:
    def walk(element):
        required, optional, children = JUNIT[element.tag]
        assert required <= set(element.attrib) <= required | optional, (element.tag, element.attrib)
        if "time" in element.attrib:
            assert SUREFIRE_TIME.fullmatch(element.attrib["time"])
        for child in element:
            assert child.tag in children, (element.tag, child.tag)
            if child.tag in JUNIT:
                walk(child)
    walk(root)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for case in cases if case.find("failure") is not None)
        assert int(suite.get("errors")) == 0


def report(project, capsys, fmt, *paths):
    main([*paths, "--no-cache", "--output-format", fmt])
    return capsys.readouterr().out


def write(project, name, text):
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_every_format_is_offered_and_an_unknown_one_is_a_one_line_error(project, capsys):
    assert set(CHECK_FORMATS) == set(FORMATS)
    write(project, "m.py", BUGGY)
    assert main(["m.py", "--output-format", "checkstyle"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "invalid choice: 'checkstyle'" in err


def test_gitlab_validates_fingerprints_are_unique_and_survive_lines_added_above(project, capsys, monkeypatch):
    write(project, "pyproject.toml", "[tool.torchlint]\n")
    write(project, "src/m.py", BUGGY)
    issues = json.loads(report(project, capsys, "gitlab", "src"))
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert [(i["check_name"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("TL101", 6), ("TL101", 7), ("TL102", 8), ("TL106", 8)]
    assert {i["location"]["path"] for i in issues} == {"src/m.py"}
    assert issues[0]["severity"] == "major" and issues[0]["description"].startswith("TL101 `torch.log(h)`")
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # the two identical log lines too
    write(project, "src/m.py", "# header\n\n" + BUGGY)
    moved = json.loads(report(project, capsys, "gitlab", "src"))
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]
    assert moved[0]["location"]["lines"]["begin"] == 8
    # paths stay relative to the project root from any working directory
    monkeypatch.chdir(project / "src")
    assert {i["location"]["path"] for i in json.loads(report(project, capsys, "gitlab", "m.py"))} == {"src/m.py"}


def test_junit_parses_and_follows_the_jenkins_schema(project, capsys):
    write(project, "bad.py", BUGGY)
    write(project, "pkg/ok.py", CLEAN)
    out = report(project, capsys, "junit", ".")
    root = ET.fromstring(out.encode("utf-8"))
    validate_junit(root)
    [suite] = root.findall("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {"bad.py", "pkg/ok.py"}
    assert cases["pkg/ok.py"].get("classname") == "pkg.ok" and list(cases["pkg/ok.py"]) == []
    failure = cases["bad.py"].find("failure")
    assert failure.get("message") == "4 findings: TL101, TL102, TL106" and failure.get("type") == "TL101,TL102,TL106"
    lines = failure.text.splitlines()
    assert len(lines) == 4 and lines[0].startswith("bad.py:6:9: TL101 `torch.log(h)`")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


def test_junit_text_that_xml_cannot_hold_is_replaced():
    finding = Finding("TL101", "unguarded-log", "warning", "a\x0bb\x1bc", "x\x01.py", 1, 1, 1, 2)
    root = ET.fromstring(render_junit([finding], files=["x\x01.py"]).encode("utf-8"))
    validate_junit(root)
    case = root.find("testsuite/testcase")
    assert case.get("name") == "x\ufffd.py" and case.find("failure").text == "x\ufffd.py:1:1: TL101 a b\ufffdc\n"


def test_pylint_lines_follow_the_parseable_template(project, capsys):
    write(project, "m.py", BUGGY)
    lines = report(project, capsys, "pylint", "m.py").splitlines()
    matches = [PYLINT.match(line) for line in lines]
    assert all(matches), lines
    assert [(m["path"], m["line"], m["id"], m["symbol"], m["obj"]) for m in matches][:3] == [
        ("m.py", "6", "TL101", "unguarded-log", ""), ("m.py", "7", "TL101", "unguarded-log", ""),
        ("m.py", "8", "TL102", "log-of-probability", "")]
    assert lines[0] == "m.py:6: [TL101(unguarded-log), ] `torch.log(h)`: `h` is a ReLU output and can be 0; " \
                       "log gives -inf/NaN"


def test_concise_is_one_line_per_finding(project, capsys):
    write(project, "m.py", BUGGY)
    lines = report(project, capsys, "concise", "m.py").splitlines()
    assert all(CONCISE.match(line) for line in lines) and len(lines) == 4
    assert lines[2].startswith("m.py:8:12: TL102 `torch.log(torch.softmax(h, -1))`")
    finding = Finding("TL101", "unguarded-log", "warning", "two\nlines", "m.py", 3, 4, 3, 9)
    assert FORMATS["concise"]([finding]) == "m.py:3:4: TL101 two lines\n"
    assert FORMATS["pylint"]([finding]) == "m.py:3: [TL101(unguarded-log), ] two lines\n"


def test_notebook_findings_carry_their_cell_in_every_format(project, capsys):
    write(project, "nb.ipynb", NB)
    raw = NB.splitlines()
    stored = next(n for n, line in enumerate(raw, 1) if "loss = -torch.log(probs)" in line)
    column = raw[stored - 1].index("torch.log") + 1
    [concise] = report(project, capsys, "concise", "nb.ipynb").splitlines()
    assert CONCISE.match(concise)
    assert concise.startswith(f"nb.ipynb:{stored}:{column}: TL102 cell 5:2:9: `torch.log(probs)`")
    [pylint] = report(project, capsys, "pylint", "nb.ipynb").splitlines()
    match = PYLINT.match(pylint)
    assert (match["line"], match["obj"]) == (str(stored), "cell 5:2:9")
    [issue] = json.loads(report(project, capsys, "gitlab", "nb.ipynb"))
    jsonschema.validate([issue], GITLAB_SCHEMA)
    assert issue["location"] == {"path": "nb.ipynb", "lines": {"begin": stored, "end": stored}}
    assert issue["description"].startswith("TL102 cell 5:2:9: `torch.log(probs)`")
    root = ET.fromstring(report(project, capsys, "junit", "nb.ipynb").encode("utf-8"))
    validate_junit(root)
    assert root.find("testsuite/testcase/failure").text.startswith("nb.ipynb:cell 5:2:9: TL102 `torch.log(probs)`")


@pytest.mark.parametrize("fmt", ["gitlab", "junit", "pylint", "concise"])
def test_no_findings(project, capsys, fmt):
    write(project, "ok.py", CLEAN)
    out = report(project, capsys, fmt, "ok.py")
    if fmt == "gitlab":
        assert json.loads(out) == []
    elif fmt == "junit":
        validate_junit(ET.fromstring(out.encode("utf-8")))
    else:
        assert out == ""
