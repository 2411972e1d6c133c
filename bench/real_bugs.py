"""Recall and false findings on the real-bug corpus (``fixtures/real``), per category.

Every case is a small program reproducing a publicly reported bug (``kind: bug``) or a fixed /
risky-but-correct version (``kind: clean``); see ``fixtures/real/README.md`` for the format. The
default rules run over each case (a folder case is linted as one unit). A bug case is *found* when
a finding sits on a marked line with one of that line's codes; every finding on a clean case is
*false*; findings on unmarked lines of bug cases are listed as *extra*.

    python bench/real_bugs.py                 # per-category table
    python bench/real_bugs.py --cases         # every case with its outcome
    python bench/real_bugs.py --markdown      # the README table
    python bench/real_bugs.py --write-status  # record today's outcomes in fixtures/real/status.tsv

``tests/test_real_corpus.py`` fails when a case recorded as found is missed or a clean case gains
a finding; improvements only need ``--write-status``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.api import check_paths
from torchlint.config import Settings

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "real"
STATUS = ROOT / "status.tsv"
_HEADER = re.compile(r"^# (source|symptom|fix|kind|fixed-version-of|why-clean): (.*)$", re.M)
_MARKER = re.compile(r"#\s*bug:\s*(TL\d{3}(?:\s*,\s*TL\d{3})*)")


@dataclass
class Case:
    category: str
    slug: str
    path: Path  # the .py file or the folder
    header: dict[str, str]
    markers: dict[tuple[Path, int], set[str]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.header.get("kind", "?")

    @property
    def name(self) -> str:
        return f"{self.category}/{self.slug}"


@dataclass
class Outcome:
    case: Case
    status: str  # found | missed | clean | false
    hits: list  # findings on marked lines with a marked code
    extra: list  # other findings


def load_cases(root: Path = ROOT) -> list[Case]:
    """Every case under ``root``; a case without a header is an error, not a skip."""
    cases = []
    for category in sorted(p for p in root.iterdir() if p.is_dir()):
        for entry in sorted(category.iterdir()):
            if entry.is_dir():
                files = sorted(entry.rglob("*.py"))
            elif entry.suffix == ".py":
                files = [entry]
            else:
                continue
            headers = [dict(_HEADER.findall(f.read_text(encoding="utf-8"))) for f in files]
            headers = [h for h in headers if "source" in h]
            if len(headers) != 1 or headers[0].get("kind") not in ("bug", "clean"):
                raise ValueError(f"{entry}: needs exactly one file with a `# source:` / `# kind:` header")
            case = Case(category.name, entry.stem if entry.is_file() else entry.name, entry, headers[0])
            for file in files:
                for number, text in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                    match = _MARKER.search(text)
                    if match:
                        codes = {c.strip() for c in match.group(1).split(",")}
                        case.markers[(file.resolve(), number)] = codes
            if (case.kind == "bug") != bool(case.markers):
                raise ValueError(f"{entry}: a bug case needs `# bug:` markers and a clean case none")
            cases.append(case)
    return cases


def judge(case: Case, settings: Settings | None = None) -> Outcome:
    findings = check_paths([case.path], settings or Settings())
    hits, extra = [], []
    for finding in findings:
        codes = case.markers.get((Path(finding.path).resolve(), finding.line), set())
        (hits if finding.code in codes else extra).append(finding)
    if case.kind == "bug":
        status = "found" if hits else "missed"
    else:
        status = "false" if extra else "clean"
    return Outcome(case, status, hits, extra)


def run(root: Path = ROOT) -> list[Outcome]:
    return [judge(case) for case in load_cases(root)]


def read_status(path: Path = STATUS) -> dict[str, str]:
    if not path.exists():
        return {}
    rows = (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line and line[0] != "#")
    return {row[0]: row[1] for row in rows}


def write_status(outcomes: list[Outcome], path: Path = STATUS) -> None:
    lines = ["# case\tstatus (written by bench/real_bugs.py --write-status)"]
    lines += [f"{o.case.name}\t{o.status}" for o in outcomes]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def table(outcomes: list[Outcome], markdown: bool = False) -> str:
    per = {}
    for o in outcomes:
        per.setdefault(o.case.category, Counter())[o.status] += 1
        per[o.case.category]["extra"] += len(o.extra) if o.case.kind == "bug" else 0
    total = sum(per.values(), Counter())
    rows = [(name, c) for name, c in sorted(per.items())] + [("total", total)]
    head = ("category", "bugs", "found", "recall", "clean", "with false findings", "extra findings on bug cases")
    body = []
    for name, c in rows:
        bugs = c["found"] + c["missed"]
        recall = f"{c['found'] / bugs:.0%}" if bugs else "-"
        body.append((name, bugs, c["found"], recall, c["clean"] + c["false"], c["false"], c["extra"]))
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in [head, *body])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="store_true", help="print every case with its outcome")
    parser.add_argument("--markdown", action="store_true", help="print the README table")
    parser.add_argument("--write-status", action="store_true", help="record the outcomes in status.tsv")
    args = parser.parse_args(argv)
    outcomes = run()
    if args.cases:
        for o in outcomes:
            shown = ", ".join(f"{f.code}:{f.line}" for f in o.hits + o.extra)
            print(f"{o.status:7} {o.case.name:60} {shown}")
        print()
    print(table(outcomes, args.markdown))
    if args.write_status:
        write_status(outcomes)
        print(f"wrote {STATUS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
