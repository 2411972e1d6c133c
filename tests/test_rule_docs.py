"""Every rule has a doc with the standard sections; its Example triggers exactly that rule and its
Use-instead does not (the docs are executable)."""

import re

import pytest

from torchlint import check_source
from torchlint.catalog import all_rules, doc_sections, rule_doc
from torchlint.config import Settings

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "References"]
RULES = all_rules()
CODE_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_doc_has_standard_sections(rule):
    doc = rule_doc(rule.code)
    assert doc is not None, f"rules/{rule.code}.md is missing"
    assert doc.splitlines()[0] == f"# {rule.code} {rule.name}"
    sections = doc_sections(doc)
    assert [s for s in SECTIONS if s in sections] == SECTIONS
    for option in rule.options:
        if ":" not in option:
            assert f"`{option}`" in sections.get("Options", ""), f"option {option} undocumented"


GRAPH = [r for r in RULES if "graph" in r.tags]
RUNTIME = [r for r in RULES if "runtime" in r.tags]  # their behaviour is tested in test_runtime.py
# The examples read as code of a project that supports PyTorch 1.8 (rules whose advice depends on the
# version, TL703, need one; no other example changes with it).
PROJECT = {"project": {"torch-version": ">=1.8"}}
EXECUTABLE = [r for r in RULES if r not in GRAPH and r not in RUNTIME
              and CODE_BLOCK.search(doc_sections(rule_doc(r.code) or "").get("Example", ""))]


@pytest.mark.parametrize("rule", EXECUTABLE, ids=lambda r: r.code)
def test_doc_example_triggers_exactly_this_rule(rule):
    sections = doc_sections(rule_doc(rule.code))
    example = CODE_BLOCK.search(sections["Example"]).group(1)
    codes = {f.code for f in check_source(example, settings=Settings(extend_select=[rule.code], options=dict(PROJECT)))}
    assert codes == {rule.code}


@pytest.mark.parametrize("rule", EXECUTABLE, ids=lambda r: r.code)
def test_doc_use_instead_is_clean(rule):
    sections = doc_sections(rule_doc(rule.code))
    fixed = CODE_BLOCK.search(sections["Use instead"]).group(1)
    assert check_source(fixed, settings=Settings(extend_select=[rule.code], options=dict(PROJECT))) == []


def test_every_static_rule_has_an_executable_doc():
    engine = {"TL002"}  # an unreadable file cannot be shown as text
    others = {r.code for r in GRAPH} | {r.code for r in RUNTIME}
    assert {r.code for r in RULES} - {r.code for r in EXECUTABLE} - others == engine


@pytest.mark.parametrize("rule", GRAPH, ids=lambda r: r.code)
def test_graph_doc_examples_run_through_trace(rule, tmp_path, capsys):
    pytest.importorskip("torch")
    from torchlint.cli import main

    sections = doc_sections(rule_doc(rule.code))
    for section, expected in (("Example", {rule.code}), ("Use instead", set())):
        code = CODE_BLOCK.search(sections[section]).group(1)
        model = tmp_path / f"{section.replace(' ', '_')}.py"
        model.write_text(code)
        name = re.search(r"^class (\w+)", code, re.M).group(1)
        main(["trace", f"{model}:{name}", "--output-format", "json"])
        import json

        findings = json.loads(capsys.readouterr().out)["findings"]
        assert {f["code"] for f in findings} == expected
