"""The per-layer table (text) and the JSON form of a trace report."""

from __future__ import annotations

import json
import os

from torchlint.graph.shapes import TraceReport
from torchlint.report.json_format import finding_json
from torchlint.report.text import render_text


def render_trace_text(report: TraceReport) -> str:
    out = [f"{report.target}: inputs {', '.join(str(i) for i in report.inputs)}"]
    out.extend(f"note: {note}" for note in report.notes)
    headers = ("node", "module", "op", "output shape", "dtype", "params", "source")
    rows = [(r.node, r.module, r.op, r.shape, r.dtype, f"{r.params:,}" if r.params else "",
             f"{os.path.basename(r.file)}:{r.line}" if r.file else "") for r in report.rows]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    out.extend(["", line, "-" * len(line)])
    for row in rows:
        cells = [c.rjust(w) if i == 5 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
    out.append(f"\n{len(report.rows)} nodes, {report.parameters:,} parameters "
               "(built on the meta device: no memory used for them)")
    out.append("")
    out.append(render_text(report.findings).rstrip("\n"))
    return "\n".join(out) + "\n"


def render_trace_json(report: TraceReport) -> str:
    data = {
        "target": report.target,
        "inputs": [str(i) for i in report.inputs],
        "notes": report.notes,
        "parameters": report.parameters,
        "layers": [{"node": r.node, "module": r.module, "op": r.op, "shape": r.shape, "dtype": r.dtype,
                    "params": r.params, "file": r.file, "line": r.line} for r in report.rows],
        "findings": [finding_json(f) for f in report.findings],
    }
    return json.dumps(data, indent=2) + "\n"
