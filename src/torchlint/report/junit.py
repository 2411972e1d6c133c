"""JUnit XML, as Jenkins (junit and xunit plugins) and GitLab (`artifacts:reports:junit`) read it.

One `testsuite` named torchlint; one `testcase` per checked file (classname: the path, dotted;
name: the path), passing when the file has no finding. A file with findings fails with one
`failure` (Jenkins and GitLab show the first failure of a test case) whose message counts them,
whose type lists their codes and whose text has one `path:line:col: CODE message` line each
(`path:cell N:line:col` in a notebook).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from torchlint.finding import Finding
from torchlint.report.source import location, one_line

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # XML 1.0 has no escape for these


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _classname(path: str) -> str:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return stem.strip("./").replace("/", ".") or path


def render_junit(findings: list[Finding], *, files: Iterable[str] | None = None, **_: object) -> str:
    by_file: dict[str, list[Finding]] = {}
    for path in files or ():
        by_file.setdefault(path, [])
    for finding in findings:
        by_file.setdefault(finding.path, []).append(finding)
    failed = sum(1 for found in by_file.values() if found)
    counts = {"tests": str(len(by_file)), "failures": str(failed), "errors": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": "torchlint", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "torchlint", **counts, "skipped": "0"})
    for path, found in by_file.items():
        case = ET.SubElement(suite, "testcase", {"classname": _xml(_classname(path)), "name": _xml(path),
                                                "time": "0"})
        if not found:
            continue
        codes = sorted({f.code for f in found})
        failure = ET.SubElement(case, "failure", {
            "message": f"{len(found)} finding{'s' if len(found) != 1 else ''}: {', '.join(codes)}",
            "type": ",".join(codes),
        })
        failure.text = _xml("".join(f"{location(f)}: {f.code} {one_line(f.message)}\n" for f in found))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
