"""A run's report: text (events, confirmations, a summary table), JSON, and findings for SARIF/GitHub."""

from __future__ import annotations

import json
import math
import statistics

from torchlint.catalog import rules_by_code
from torchlint.finding import Finding
from torchlint.report.json_format import finding_json
from torchlint.report.text import display_path
from torchlint.runtime.run import RunReport


def _summary(report: RunReport) -> dict[str, dict[str, float]]:
    """first/last/min/median/max of each per-step measure (NaN values and unknown losses left out)."""
    series = {
        "loss": [s.loss for s in report.history],
        "grad norm": [s.grad_norm for s in report.history],
        "param norm": [s.param_norm for s in report.history],
        "memory MiB": [s.memory / 2**20 for s in report.history if s.memory],
        "ms/step": [s.seconds * 1000 for s in report.history[1:]],  # the first includes set-up
    }
    out = {}
    for name, values in series.items():
        values = [v for v in values if v is not None and math.isfinite(v)]
        if values:
            out[name] = {"first": values[0], "last": values[-1], "min": min(values),
                         "median": statistics.median(values), "max": max(values)}
    return out


def _table(summary: dict[str, dict[str, float]]) -> list[str]:
    columns = ("first", "last", "min", "median", "max")
    lines = [f"{'':<12}" + "".join(f"{c:>11}" for c in columns)]
    for name, row in summary.items():
        lines.append(f"{name:<12}" + "".join(f"{row[c]:>11.4g}" for c in columns))
    return lines


def render_run(report: RunReport) -> str:
    if report.device == "process":
        ranks = f" on each of {report.world} ranks (rank 0 reports for all)" if report.world > 1 else ""
        out = [f"{report.target}: {report.steps} optimizer step(s) watched{ranks}"]
    else:
        out = [f"{report.target}: {report.steps} step(s) on {report.device}, synthetic inputs "
               f"{', '.join(report.inputs)}"]
    out.extend(f"note: {note}" for note in report.notes)
    for event in report.events:
        where = f"{display_path(event.file)}:{event.line}: " if event.file else ""
        out.append(f"{where}{event.code} {event.name}: {event.message}")
        for finding in event.confirmed:
            verb = f"confirmed at step {event.step}:" if event.line else "explained by"
            out.append(f"  {verb} {finding.code} {finding.name} (static) at {display_path(finding.path)}:{finding.line}: "
                       f"{finding.message}")
    if not report.events:
        out.append(f"No NaN/Inf, exploding or vanishing gradient, or memory growth in {report.steps} steps.")
    if report.not_observed:
        out.append(f"static findings not observed in {report.steps} steps:")
        out.extend(f"  {display_path(f.path)}:{f.line}: {f.code} {f.name}" for f in report.not_observed)
    out.extend(report.repro)
    summary = _summary(report)
    if summary:
        out.append("")
        out.extend(_table(summary))
    return "\n".join(out) + "\n"


def run_findings(report: RunReport) -> list[Finding]:
    """Each event as a runtime Finding, at its source line, else at the first static finding that
    explains it, else at the top of the target's file."""
    infos = rules_by_code()
    findings = []
    for event in report.events:
        anchor = event.confirmed[0] if event.confirmed else None
        path = event.file or (anchor.path if anchor else (report.sources[0] if report.sources else report.target))
        line = event.line or (anchor.line if anchor else 1)
        static = "; ".join(f"{'confirms' if event.line else 'explained by'} {f.code} at line {f.line}"
                           for f in event.confirmed)
        findings.append(Finding(event.code, event.name, infos[event.code].severity,
                                event.message + (f" ({static})" if static else ""), path, line, 1, line, 1,
                                help=infos[event.code].summary, depths=("runtime",)))
    return findings


def render_run_json(report: RunReport) -> str:
    data = {
        "target": report.target,
        "device": report.device,
        "inputs": report.inputs,
        "notes": report.notes,
        "steps": report.steps,
        "ranks": report.world,
        "events": [{"code": e.code, "name": e.name, "step": e.step, "message": e.message, "module": e.module,
                    "op": e.op, "filename": e.file, "line": e.line,
                    "static": [finding_json(f) for f in e.confirmed]} for e in report.events],
        "not_observed": [finding_json(f) for f in report.not_observed],
        "repro": report.repro,
        "summary": _summary(report),
        "history": [{"step": s.step, "loss": _number(s.loss), "grad_norm": _number(s.grad_norm),
                     "param_norm": _number(s.param_norm), "memory": s.memory, "seconds": round(s.seconds, 6)}
                    for s in report.history],
    }
    return json.dumps(data, indent=2) + "\n"


def _number(value: float) -> float | str | None:
    """JSON has no NaN/Inf: those become strings; a value not measured on that step null."""
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)
