"""The real-bug corpus (fixtures/real): no recorded find is lost, no clean case gains a finding."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import real_bugs  # noqa: E402


def test_every_case_is_well_formed():
    cases = real_bugs.load_cases()
    bugs = [c for c in cases if c.kind == "bug"]
    clean = [c for c in cases if c.kind == "clean"]
    assert len(bugs) >= 40 and len(clean) >= 20
    assert {c.category for c in cases} == {
        "numerics", "autograd", "training-loop", "memory", "reproducibility", "mixed-precision",
        "data-loading", "serialization"}
    for case in cases:
        assert case.header["source"].startswith("https://"), case.name
        assert case.header.get("symptom") and case.header.get("fix"), case.name


def test_no_regression_against_recorded_status():
    recorded = real_bugs.read_status()
    outcomes = real_bugs.run()
    assert {o.case.name for o in outcomes} == set(recorded), "run `python bench/real_bugs.py --write-status`"
    lost = [o.case.name for o in outcomes if recorded[o.case.name] == "found" and o.status != "found"]
    new_false = [(o.case.name, [(f.code, f.line) for f in o.extra]) for o in outcomes
                 if o.status == "false" and recorded[o.case.name] != "false"]
    assert lost == [] and new_false == []


def test_clean_cases_have_no_findings():
    outcomes = real_bugs.run()
    assert [(o.case.name, [(f.code, f.line) for f in o.extra]) for o in outcomes if o.status == "false"] == []
