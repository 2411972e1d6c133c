"""Recall and false findings on programs written blind (``fixtures/blind``), per set.

Each set is a folder of small training programs written by someone who had not seen torchlint's
code or findings, with ``manifest.tsv``: each program's label (bug | clean), category, the line a
maintainer would change (bugs) and what goes wrong or why the risky-looking code is right. The
default rules run over every program. A bug program is *found* when it gets a finding, *at the line*
when one sits on the manifest's line; every finding on a clean program is *false*.

    python bench/blind.py                 # per-set table
    python bench/blind.py --programs      # every program with its findings
    python bench/blind.py --write-status  # record which bug programs are found (fixtures/blind/status.tsv)

``tests/test_blind_corpus.py`` fails when a recorded find is lost or a clean program gets a finding.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from torchlint.api import check_paths
from torchlint.config import Settings

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "blind"
STATUS = ROOT / "status.tsv"


def run() -> dict[str, tuple[str, list]]:
    """Program ("set/file") -> (found | missed | clean | false, its findings)."""
    result = {}
    for folder in sorted(p for p in ROOT.iterdir() if (p / "manifest.tsv").is_file()):
        for row, findings in outcomes(folder):
            bug = row["label"] == "bug"
            status = ("found" if findings else "missed") if bug else ("false" if findings else "clean")
            result[f"{folder.name}/{row['file']}"] = (status, findings)
    return result


def read_status() -> dict[str, str]:
    rows = (line.split("\t") for line in STATUS.read_text().splitlines() if line.strip())
    return {name: status for name, status in rows}


def outcomes(folder: Path) -> list[tuple[dict, list]]:
    with (folder / "manifest.tsv").open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    found = []
    for row in rows:
        findings = check_paths([folder / row["file"]], Settings(root=folder))
        found.append((row, findings))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", action="store_true", help="print every program with its findings")
    parser.add_argument("--write-status", action="store_true", help="record the outcomes in status.tsv")
    args = parser.parse_args()
    if not ROOT.is_dir():
        print(f"no blind sets in {ROOT}", file=sys.stderr)
        return 1
    header = f"{'set':<10} {'bugs':>5} {'found':>6} {'at line':>8} {'clean':>6} {'flagged':>8}"
    lines = [header]
    totals = [0, 0, 0, 0, 0]
    for folder in sorted(p for p in ROOT.iterdir() if (p / "manifest.tsv").is_file()):
        counts = [0, 0, 0, 0, 0]
        for row, findings in outcomes(folder):
            bug = row["label"] == "bug"
            counts[0 if bug else 3] += 1
            if bug and findings:
                counts[1] += 1
                counts[2] += any(str(f.line) == row["line"] for f in findings)
            if not bug and findings:
                counts[4] += 1
            if args.programs:
                shown = ", ".join(f"{f.code}:{f.line}" for f in findings) or "-"
                print(f"{folder.name}/{row['file']:<40} {row['label']:<6} line {row['line']:<4} {shown}")
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        lines.append(f"{folder.name:<10} {counts[0]:>5} {counts[1]:>6} {counts[2]:>8} {counts[3]:>6} {counts[4]:>8}")
    lines.append(f"{'total':<10} {totals[0]:>5} {totals[1]:>6} {totals[2]:>8} {totals[3]:>6} {totals[4]:>8}")
    print("\n".join(lines))
    if args.write_status:
        STATUS.write_text("".join(f"{name}\t{status}\n" for name, (status, _) in sorted(run().items())))
        print(f"wrote {STATUS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
