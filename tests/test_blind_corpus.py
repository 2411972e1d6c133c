"""Programs written blind (fixtures/blind): no recorded find is lost, no clean program gets a finding
that is not recorded (a recorded one is a finding the README reports and explains)."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import blind  # noqa: E402


def test_every_set_has_a_manifest_naming_its_programs():
    for folder in (p for p in blind.ROOT.iterdir() if p.is_dir()):
        names = {line.split("\t")[0] for line in (folder / "manifest.tsv").read_text().splitlines()[1:]}
        assert names == {p.name for p in folder.glob("*.py")}, folder.name


def test_no_regression_against_recorded_status():
    recorded = blind.read_status()
    outcomes = blind.run()
    assert set(outcomes) == set(recorded), "run `python bench/blind.py --write-status`"
    lost = [name for name, (status, _) in outcomes.items() if recorded[name] == "found" and status != "found"]
    false = [(name, [(f.code, f.line) for f in findings]) for name, (status, findings) in outcomes.items()
             if status == "false" and recorded[name] != "false"]
    assert lost == [] and false == []
